#!/usr/bin/env python3
"""Fixtures for the decoder-decision path (runtime/grammar, runtime/chat_template, runtime/decoder),
recorded with code we did not write: llama.cpp (through llama-cpp-python) and transformers.

  make_decoder_fixtures.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf --out tests/fixtures/decoder

writes
  smollm2.pieces.txt.gz   the vocabulary as the grammar sees it: llama.cpp's
                          llama_token_to_piece(id, special=false) for every id, one line of hex per
                          id, after a JSON header line (n_vocab, eos, end-of-generation ids, sha256 of
                          the GGUF, versions); gzip without a timestamp, so reruns give the same bytes
  chat_templates.json     the chat templates (SmolLM2's from the GGUF metadata, and the Qwen2.5 /
                          Llama-3 / Llama-3.2 ones in tests/fixtures/decoder/templates/), 10
                          conversations, and for every pair the text transformers' apply_chat_template
                          renders (checked equal to llama-cpp-python's Jinja2ChatFormatter); for the
                          SmolLM2 template also the ids of that text from llama.cpp's tokenizer
                          (parse_special, add_bos as the GGUF says) and from transformers' tokenizer
                          loaded from the same GGUF, checked equal
"""
import argparse
import ctypes
import gzip
import hashlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_llama(gguf):
    from llama_cpp import Llama
    return Llama(model_path=gguf, vocab_only=True, verbose=False)


def write_pieces(llm, gguf, out_dir):
    import llama_cpp
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    buf = ctypes.create_string_buffer(4096)
    lines = []
    for i in range(n):
        k = llama_cpp.llama_token_to_piece(vocab, i, buf, len(buf), 0, False)
        assert 0 <= k < len(buf), (i, k)
        lines.append(buf.raw[:k].hex())
    header = {
        "what": "llama_token_to_piece(id, lstrip=0, special=false) per id, hex",
        "gguf_sha256": sha256(gguf),
        "n_vocab": n,
        "eos": llama_cpp.llama_vocab_eos(vocab),
        "eot": llama_cpp.llama_vocab_eot(vocab),
        "eog": [i for i in range(n) if llama_cpp.llama_vocab_is_eog(vocab, i)],
        "versions": reftools.versions(),
    }
    text = json.dumps(header, sort_keys=True) + "\n" + "\n".join(lines) + "\n"
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as g:
        g.write(text.encode())
    with open(os.path.join(out_dir, "smollm2.pieces.txt.gz"), "wb") as f:
        f.write(raw.getvalue())
    print("pieces: %d ids, %d bytes gzipped" % (n, len(raw.getvalue())))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    llm = load_llama(args.gguf)
    write_pieces(llm, args.gguf, args.out)


if __name__ == "__main__":
    main()
