#!/usr/bin/env python3
"""Writes the reduced seeds of the tokenizer.json fuzz target (tests/fuzz/seeds/tokenizer/):
modernbert-reduced.tokenizer.json and minilm-reduced.tokenizer.json.

The real ModernBERT tokenizer.json (/work/shared/data/modernbert/tokenizer.json, also
tests/fixtures/modernbert/) is 2.1 MB: too big for a seed libFuzzer mutates thousands of times a
second. The reduced file keeps every section as it is (NFC normalizer, ByteLevel pre-tokenizer and
decoder, TemplateProcessing, all 116 added tokens, the BPE options) and cuts the vocabulary to the
tokens with id < KEEP (the 256 byte symbols and the first merges' results) and the merges to those
whose parts and result are all kept (in their order). Ids are made dense again, as HF requires
(an added token's id must follow the vocabulary): kept tokens keep theirs, the added tokens
beyond them are numbered on from KEEP in their order, and the post-processor's ids follow.
Hugging Face tokenizers must load the result and encode with it as the full tokenizer does (the
same tokens, ids mapped); the script checks that.

MiniLM's real tokenizer.json (tests/fixtures/tokenizers/minilm.tokenizer.json, 466 KB, a seed as it
is through a symbolic link) costs a tenth of a second per run under ASan; its reduced copy keeps
the WordPiece vocabulary's first MINILM_KEEP ids (every special token, the [unused] block,
punctuation, single characters, the commonest words) and the single-character ## pieces, and every
other section, so mutations of a BERT tokenizer run
fast too. The other seeds of the target are symbolic links to committed fixtures.

    /work/refvenv/bin/python tools/reference/make_fuzz_tokenizer_seeds.py \\
        /work/shared/data/modernbert/tokenizer.json tests/fixtures/tokenizers/minilm.tokenizer.json \\
        tests/fuzz/seeds/tokenizer
"""
import json
import pathlib
import sys

from tokenizers import Tokenizer

KEEP = 1200
MINILM_KEEP = 2200  # BERT's specials, [unused], punctuation, single characters, the first words


def reduce_minilm(src, out):
    t = json.loads(pathlib.Path(src).read_text(encoding="utf-8"))
    full = Tokenizer.from_str(json.dumps(t))
    t["model"]["vocab"] = {tok: i for tok, i in t["model"]["vocab"].items()
                           if i < MINILM_KEEP or (tok.startswith("##") and len(tok) == 3)}
    assert all(a["id"] < MINILM_KEEP for a in t["added_tokens"])
    text = json.dumps(t, ensure_ascii=False, indent=1)
    path = out / "minilm-reduced.tokenizer.json"
    path.write_text(text, encoding="utf-8")
    tok = Tokenizer.from_str(text)
    sample = "Hello, the world! [MASK] caf\u00e9"
    enc, ref = tok.encode(sample), full.encode(sample)
    assert enc.ids[0] == ref.ids[0] and enc.ids[-1] == ref.ids[-1] and len(enc.ids) >= len(ref.ids)
    print(f"{path}: {len(text.encode())} bytes; {sample!r} -> {enc.tokens}")


def main(src, minilm, out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t = json.loads(pathlib.Path(src).read_text(encoding="utf-8"))
    full = Tokenizer.from_str(json.dumps(t))
    vocab = {tok: i for tok, i in t["model"]["vocab"].items() if i < KEEP}
    assert sorted(vocab.values()) == list(range(KEEP))
    new_id = {i: i for i in range(KEEP)}
    for a in t["added_tokens"]:
        if a["id"] >= KEEP:
            new_id[a["id"]] = KEEP + len([k for k in new_id if k >= KEEP])
            a["id"] = new_id[a["id"]]
            if a["content"] in t["model"]["vocab"]:
                vocab[a["content"]] = a["id"]
    for sp in t["post_processor"]["special_tokens"].values():
        sp["ids"] = [new_id[i] for i in sp["ids"]]
    merges = []
    for m in t["model"]["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    t["model"]["vocab"] = vocab
    t["model"]["merges"] = merges
    text = json.dumps(t, ensure_ascii=False, indent=1)
    path = out / "modernbert-reduced.tokenizer.json"
    path.write_text(text, encoding="utf-8")
    tok = Tokenizer.from_str(text)
    sample = "Hello, the world! choice question: [MASK] yes <|padding|>"
    enc, ref = tok.encode(sample), full.encode(sample)
    assert enc.ids[0] == tok.token_to_id("[CLS]") and enc.ids[-1] == tok.token_to_id("[SEP]")
    for special in ("[CLS]", "[SEP]", "[MASK]", "<|padding|>"):
        assert tok.id_to_token(tok.token_to_id(special)) == special, special
    assert "".join(enc.tokens) != "" and len(enc.ids) >= len(ref.ids)
    print(f"{path}: {len(text.encode())} bytes, {len(vocab)} tokens, {len(merges)} merges; "
          f"{sample!r} -> {enc.tokens}")
    reduce_minilm(minilm, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
