"""Helpers shared by the reference scripts in tools/reference/ (not a fixture consumer's concern).

Everything here is deterministic: the training corpus is fixed text in this file, tokenizers are
trained single-threaded, and nothing reads the clock or the network.
"""
import json
import os
import platform

# A fixed corpus for the small tokenizers the scripts train. It only has to give BPE realistic merges
# for the strings the cases use (English decision prompts, JSON, a few other scripts); the words are
# ours. Scripts the tokenizer should NOT learn well (CJK, Devanagari, Arabic) appear a little, so the
# byte-level tokenizer splits them into short pieces and the byte-fallback one falls back to bytes.
_CORPUS_EN = """
choice question: Which department should handle this request?
score question: How urgent is this ticket? level 0: not urgent level 1: somewhat urgent level 2: very urgent
noul question: Is the customer asking for a refund? false: no, the statement does not hold true: yes, the statement holds
The customer says the invoice was charged twice and wants the money back before Friday.
Please route the ticket to billing, support, sales, legal or security, whichever fits best.
My order arrived broken and nobody answers the phone. I'd like a replacement, or I'll cancel.
The agent called the search tool three times and then answered without citing any document.
A user reports that the login page shows an error after the last update; they can't reset the password.
We shipped version 2.4.1 yesterday. The release notes mention a fix for the memory leak in the parser.
Is this message spam? It offers a prize and asks for a bank account number.
Rate the sentiment of the review from very negative to very positive.
The invoice total is 149.00 EUR, due on 2024-03-01, from ACME Corporation Ltd.
Classify the intent: cancel subscription, change plan, billing question, technical issue, other.
How confident are we that the document answers the question? Not at all, partly, fully.
The weather was terrible, the hotel was fine, and the food was excellent. Would you recommend it?
Security incident: an unknown device signed in from another country at 3 a.m. and downloaded files.
Does the trace show the model calling a tool that it was not allowed to use?
She said: "I've been waiting for two weeks, and it's still not fixed." He'll check tomorrow.
They're sure it's the ISP's fault; we'd rather test the router first. You've got mail. I'm done.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 12 15 20 25 50 100 250 1000 2048 65536 1e-05 1e+16 3.14159 -0.0
{"user": "alice", "amount": 149.0, "currency": "EUR", "items": [1, 2, 3], "paid": false, "note": null}
{"role": "user", "content": "Where is my package?"} {"role": "assistant", "content": "Let me check."}
urgent, high, medium, low, none; positive, negative, neutral; yes, no, maybe; approve, reject, escalate
The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
Email: support@example.com, phone +1 (555) 010-0199, IP 192.168.0.1, URL https://example.com/a?b=c
"""
_CORPUS_OTHER = """
Le client demande un remboursement car la facture a été payée deux fois. Où est ma commande ?
Der Kunde möchte eine Rückerstattung, weil die Rechnung doppelt bezahlt wurde. Größe: groß.
El cliente quiere un reembolso porque la factura se cobró dos veces. ¿Dónde está mi pedido?
O cliente quer o reembolso porque a fatura foi cobrada duas vezes. Não recebi nada.
Il cliente vuole un rimborso perché la fattura è stata pagata due volte.
De klant wil zijn geld terug omdat de factuur twee keer is betaald.
Clientul vrea banii înapoi pentru că factura a fost plătită de două ori.
Клиент хочет вернуть деньги, потому что счёт оплачен дважды.
这个请求应该由哪个部门处理？客户说发票被重复收费了。
お客様は請求書が二重に請求されたと言っています。
고객이 송장이 두 번 청구되었다고 말합니다.
العميل يريد استرداد المبلغ لأن الفاتورة دفعت مرتين.
ग्राहक पैसे वापस चाहता है क्योंकि बिल दो बार चार्ज हुआ।
Ο πελάτης θέλει επιστροφή χρημάτων. שלום עולם. สวัสดีครับ
"""


def corpus_lines():
    """The training corpus, as lines (English repeated so its merges dominate)."""
    lines = [l for l in _CORPUS_EN.strip().splitlines() if l.strip()]
    other = [l for l in _CORPUS_OTHER.strip().splitlines() if l.strip()]
    # Docstrings of the upstream package: a few hundred KB of English prose about decisions,
    # deterministic for the pinned laya version.
    import inspect
    import laya.agent
    import laya.common
    import laya.confidence
    import laya.structured
    prose = []
    for mod in (laya.common, laya.agent, laya.confidence, laya.structured):
        prose.extend(l.strip() for l in inspect.getsource(mod).splitlines() if l.strip())
    return lines * 20 + other * 4 + prose


def _trainer_kwargs():
    return {"show_progress": False}


def train_bytelevel_bpe(model_vocab_size):
    """A small ModernBERT-layout tokenizer (HF `tokenizers.Tokenizer`).

    Same structure as answerdotai/ModernBERT's tokenizer.json: NFC normalizer, ByteLevel
    pre-tokenizer (add_prefix_space false, regex on), BPE without unk or byte fallback, ids 0/1
    `|||IP_ADDRESS|||` (normalized, not special) and `<|padding|>` (special), added runs of 2..24
    spaces (normalized, not special), `|||EMAIL_ADDRESS|||`, `|||PHONE_NUMBER|||`, `<|endoftext|>`,
    then `[UNK] [CLS] [SEP] [PAD] [MASK]` (special, `[MASK]` with lstrip) and `[unused*]` fillers up
    to `model_vocab_size` rounded up to 64 (the embedding has that many rows), with the
    `[CLS] $A [SEP]` template.
    """
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    n_tail = 23 + 3  # space runs, EMAIL, PHONE, <|endoftext|> live at the end of the model range
    trainer = trainers.BpeTrainer(vocab_size=model_vocab_size - n_tail, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["|||IP_ADDRESS|||", "<|padding|>"], **_trainer_kwargs())
    tok.train_from_iterator(corpus_lines(), trainer)
    d = json.loads(tok.to_str())
    for a in d["added_tokens"]:
        if a["content"] == "|||IP_ADDRESS|||":
            a["special"], a["normalized"] = False, True
    tok = Tokenizer.from_str(json.dumps(d))
    tok.add_tokens([AddedToken(" " * n, normalized=True, special=False) for n in range(24, 1, -1)])
    tok.add_tokens([AddedToken(t, normalized=True, special=False)
                    for t in ("|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||")])
    tok.add_special_tokens([AddedToken("<|endoftext|>", normalized=False, special=True)])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True, lstrip=(t == "[MASK]"))
                            for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")])
    rows = -(-tok.get_vocab_size() // 64) * 64
    n_unused = rows - tok.get_vocab_size()
    tok.add_tokens([AddedToken("[unused%d]" % i, normalized=True, special=False) for i in range(n_unused)])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok, {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]",
                 "unk_token": "[UNK]"}


def train_metaspace_bpe(model_vocab_size, limit_alphabet=120):
    """A small mmBERT/Gemma-layout tokenizer (HF `tokenizers.Tokenizer`).

    No normalizer; Metaspace pre-tokenizer (replacement U+2581, prepend_scheme "always", split true);
    BPE with byte_fallback and unk `<unk>` (fuse_unk); vocab `<pad>`=0 `<eos>`=1 `<bos>`=2 `<unk>`=3
    `<mask>`=4 (added, special), `<0x00>`..`<0xFF>` = 5..260, then the trained pieces; the alphabet is
    limited so rare characters (most CJK, Devanagari, Arabic) take the byte fallback. Template
    `<bos> $A <eos>`. The embedding has `model_vocab_size` rounded up to 64 rows.
    """
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    base = Tokenizer(models.BPE())
    base.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    n_fixed = len(specials) + 256
    lines = corpus_lines()
    # The trainer's own `limit_alphabet` breaks frequency ties in hash order (not reproducible), so
    # choose the alphabet here: most frequent characters first, ties by code point.
    freq = {}
    for line in lines:
        for ch in line.replace(" ", "\u2581"):
            freq[ch] = freq.get(ch, 0) + 1
    freq["\u2581"] = freq.get("\u2581", 0) + len(lines)
    alphabet = sorted(freq, key=lambda c: (-freq[c], ord(c)))[:limit_alphabet]
    trainer = trainers.BpeTrainer(vocab_size=model_vocab_size - n_fixed, min_frequency=2,
                                  initial_alphabet=alphabet, limit_alphabet=len(alphabet), **_trainer_kwargs())
    base.train_from_iterator(lines, trainer)
    trained = json.loads(base.to_str())["model"]
    vocab = {t: i for i, t in enumerate(specials)}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    d = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(specials)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<eos>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]},
                               "<eos>": {"id": "<eos>", "ids": [1], "tokens": ["<eos>"]}},
        },
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": trained["merges"]},
    }
    tok = Tokenizer.from_str(json.dumps(d, ensure_ascii=False))
    return tok, {"cls_token": "<bos>", "sep_token": "<eos>", "pad_token": "<pad>", "mask_token": "<mask>",
                 "unk_token": "<unk>", "bos_token": "<bos>", "eos_token": "<eos>"}


def hf_fast_tokenizer(tok, names):
    """Wrap a `tokenizers.Tokenizer` as the transformers tokenizer `laya` uses."""
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=1000000000000000019884624838656,
                                   clean_up_tokenization_spaces=False, **names)


def f32(v):
    """A float32 as the shortest decimal that rounds back to the same float32 (about half the digits
    of the float64 repr; parse it as a double and round to float32 to get the exact value back)."""
    import numpy as np
    return float(str(np.float32(v)))


def versions():
    """Versions of everything that can change a recorded number."""
    from importlib import metadata
    out = {"python": platform.python_version()}
    for name in ("laya", "torch", "transformers", "tokenizers", "safetensors", "numpy", "onnx", "onnxruntime",
                 "gguf", "llama-cpp-python"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _key(k):
    """A dict key as `json.dumps` writes it (True -> "true", 1.5 -> "1.5")."""
    return k if isinstance(k, str) else json.dumps(k)


def to_json_text(obj, indent=0):
    """JSON text (non-ASCII kept, NaN refused): lists of scalars on one line, everything else indented
    by one space per level, so fixtures stay small and diffable."""
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = ["%s%s: %s" % (inner, json.dumps(_key(k), ensure_ascii=False), to_json_text(v, indent + 1))
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in obj):
            return json.dumps(list(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return "[\n" + ",\n".join(inner + to_json_text(v, indent + 1) for v in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


def dump_json(obj, path):
    """Write `obj` as UTF-8 JSON in the `to_json_text` layout, with a final newline."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(to_json_text(obj) + "\n")


def train_pipeline_bpe(model_vocab_size):
    """A BPE tokenizer that runs the HF pipeline parts the real tokenizers do not, so a port is checked
    on each: NFKD, Lowercase, StripAccents, Replace (regex) and Strip normalizers; Split by regex (with
    `\\b`, which matches empty strings) and by literal in several behaviours, Punctuation (contiguous),
    Digits and Metaspace with prepend_scheme "first"; BPE with continuing_subword_prefix,
    end_of_word_suffix and an unk token; added tokens with single_word, lstrip/rstrip and normalized
    true/false; RobertaProcessing; decoders Replace (regex), BPEDecoder, Metaspace and Strip.

    HF's trainer numbers "##" / "</w>" pieces in hash order (not reproducible), so a plain BPE of
    about a quarter of `model_vocab_size` is trained on a chosen alphabet (as train_metaspace_bpe
    does) and every piece and merge is then written in its four forms: as is, "##" + piece,
    piece + "</w>" and "##" + piece + "</w>"."""
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKD(), normalizers.Lowercase(), normalizers.StripAccents(),
        normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip(left=True, right=True)])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"[0-9]+"), "merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\b"), "isolated"),
        pre_tokenizers.Split(",", "merged_with_next"),
        pre_tokenizers.Punctuation("contiguous"),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)])
    lines = corpus_lines()
    freq = {}
    for line in lines:
        for ch in tok.normalizer.normalize_str(line).replace(" ", "\u2581"):
            freq[ch] = freq.get(ch, 0) + 1
    alphabet = sorted(freq, key=lambda c: (-freq[c], ord(c)))[:90]
    specials = ["<unk>", "<s>", "</s>"]
    trainer = trainers.BpeTrainer(vocab_size=model_vocab_size // 4, min_frequency=2, special_tokens=specials,
                                  initial_alphabet=alphabet, limit_alphabet=len(alphabet), **_trainer_kwargs())
    tok.train_from_iterator(lines, trainer)
    d = json.loads(tok.to_str())
    trained = d["model"]
    vocab = {t: i for i, t in enumerate(specials)}
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in specials:
            for form in (piece, "##" + piece, piece + "</w>", "##" + piece + "</w>"):
                vocab.setdefault(form, len(vocab))
    merges = []
    for m in trained["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        merges += [[a, "##" + b], ["##" + a, "##" + b], [a, "##" + b + "</w>"], ["##" + a, "##" + b + "</w>"]]
    d["model"] = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": "##",
                  "end_of_word_suffix": "</w>", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges}
    n = max(d["model"]["vocab"].values()) + 1
    d["added_tokens"] += [
        {"id": n, "content": "the", "single_word": True, "lstrip": False, "rstrip": True, "normalized": True,
         "special": False},
        {"id": n + 1, "content": "<SEP>", "single_word": False, "lstrip": True, "rstrip": True, "normalized": False,
         "special": True},
        {"id": n + 2, "content": " x", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
         "special": False}]
    d["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", vocab["</s>"]], "cls": ["<s>", vocab["<s>"]],
                           "trim_offsets": True, "add_prefix_space": False}
    d["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"Regex": "#+"}, "content": ""},
        {"type": "BPEDecoder", "suffix": "</w>"},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    return Tokenizer.from_str(json.dumps(d, ensure_ascii=False)), None


def train_pipeline_wordlevel(model_vocab_size):
    """A WordLevel tokenizer for the remaining parts: NFC, Nmt, Prepend and Replace (literal)
    normalizers; CharDelimiterSplit, WhitespaceSplit, Whitespace and FixedLength pre-tokenizers; a
    TemplateProcessing pair template; the CTC decoder."""
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Nmt(), normalizers.Prepend("^"),
                                           normalizers.Replace("x", "ks")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.CharDelimiterSplit("-"), pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Whitespace(),
        pre_tokenizers.FixedLength(length=4)])
    trainer = trainers.WordLevelTrainer(vocab_size=model_vocab_size, special_tokens=["<unk>", "<pad>", "<cls>", "<sep>"],
                                        **_trainer_kwargs())
    tok.train_from_iterator(corpus_lines(), trainer)
    cls, sep = tok.token_to_id("<cls>"), tok.token_to_id("<sep>")
    tok.post_processor = processors.TemplateProcessing(
        single="<cls> $A <sep>", pair="<cls> $A <sep> $B:1 <sep>:1", special_tokens=[("<cls>", cls), ("<sep>", sep)])
    tok.decoder = decoders.CTC(pad_token="<pad>", word_delimiter_token="|", cleanup=True)
    return tok, None


def train_sentencepiece_bpe(vocab_size):
    """A SentencePiece BPE model (byte fallback, digits split, two user-defined symbols) as bytes: the
    Llama 2 / TinyLlama kind of vocabulary, for the llama.cpp "llama" GGUF path and, converted by
    transformers, for HF's Llama tokenizer.json layout."""
    import io
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus_lines()), model_writer=buf, vocab_size=vocab_size, model_type="bpe",
        byte_fallback=True, character_coverage=0.995, num_threads=1, split_digits=True,
        allow_whitespace_only_pieces=True, remove_extra_whitespaces=False, normalization_rule_name="identity",
        user_defined_symbols=["<|user|>", "[MASK]"], minloglevel=2)
    return buf.getvalue()


def byte_tokens():
    """GPT-2's bytes_to_unicode: the 256 single-byte tokens of a byte-level BPE vocabulary, in byte
    order (printable bytes stand for themselves, the others map above U+0100)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


# Prompts the SmolLM2 scripts run through llama.cpp: the fixtures' four first
# (make_smollm2_greedy.py, make_smollm2_logits.py), all ten for validate_teacher_forced.py.
SMOLLM2_PROMPTS = [
    "The capital of France is",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
    "<|im_end|>\n<|im_start|>user\nThe fan runs at 80% and the room is at 31 C. Should the "
    "thermostat lower the target temperature?<|im_end|>\n<|im_start|>assistant\n",
    '{"action": "reduce_load", "target": "cooling_fan", "value": 0.7, "reason": "',
    "Once upon a time, in a small village at the edge of a great forest, there lived an old "
    "clockmaker who repaired every clock in the valley. One winter morning, a stranger knocked "
    "at his door carrying a clock that",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Q: What is the boiling point of water at sea level in degrees Celsius?\nA:",
    "<|im_start|>user\nList three ways to reduce energy use in a factory.<|im_end|>\n"
    "<|im_start|>assistant\n",
    "Alarm log 2024-03-02 14:07: pressure sensor P-12 reads 8.4 bar (limit 8.0). Recommended action:",
    "Translate to French: The door is open and the light is on.\nFrench:",
    "1, 2, 3, 5, 8, 13, 21,",
]


def llama_cpp_generic_path():
    """Makes every llama_cpp.Llama created from now on use llama.cpp's generic CPU path: the
    model parameter `use_extra_bufts` off (no repacked weights, no AMX tiles). On our Xeons with
    AMX, llama.cpp's AMX path dies on its first tile instruction (SIGILL: it never asks the kernel
    for the tile state, arch_prctl(ARCH_REQ_XCOMP_PERM)); llama-cpp-python has no argument for the
    parameter, so its default-params function is wrapped. Idempotent."""
    import llama_cpp.llama_cpp as api

    if getattr(api.llama_model_default_params, "_laya_generic", False):
        return
    base = api.llama_model_default_params

    def generic():
        p = base()
        p.use_extra_bufts = False
        return p

    generic._laya_generic = True
    api.llama_model_default_params = generic


def llama_cpp_model(path, n_ctx=256, threads=1, **kw):
    """llama-cpp-python's Llama on a GGUF as the reference scripts run it: logits for every
    position, one batch of up to n_ctx tokens, `threads` threads, seed 0, quiet, generic CPU
    path (llama_cpp_generic_path)."""
    import llama_cpp

    llama_cpp_generic_path()

    return llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx,
                           n_threads=threads, n_threads_batch=threads, logits_all=True,
                           verbose=False, seed=0, **kw)
