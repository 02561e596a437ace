#!/usr/bin/env python3
"""Fixtures for the decoder-decision path (runtime/decisions/grammar, runtime/text/chat_template),
recorded with code we did not write: llama.cpp (through llama-cpp-python) and transformers.

  make_decoder_fixtures.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf --out tests/fixtures/decoder

writes
  smollm2.pieces.txt.gz   the vocabulary as the grammar sees it: llama.cpp's
                          llama_token_to_piece(id, special=false) for every id, one line of hex per
                          id, after a JSON header line (n_vocab, eos, end-of-generation ids, sha256 of
                          the GGUF, versions); gzip without a timestamp, so reruns give the same bytes
  chat_templates.json     the chat templates (SmolLM2's from the GGUF metadata, and the Qwen2.5-Instruct
                          and Llama-3 ones in tests/fixtures/decoder/templates/), 12 conversations,
                          and for every pair (with and without the generation prompt) the text
                          transformers' render_jinja_template gives (checked equal to
                          llama-cpp-python's Jinja2ChatFormatter); for the SmolLM2 template also the
                          ids of that text from llama.cpp's tokenizer (parse_special, add_bos as the
                          GGUF says)
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


# Conversations for the chat-template fixture: roles, a system prompt first / later / absent,
# whitespace the Llama-3 template trims, non-ASCII text, a special token written in the content,
# empty content, and decision-style prompts with JSON.
CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are a thermostat controller. Answer in JSON."},
     {"role": "user", "content": "Room is 27.5 C, target 22 C. What now?"}],
    [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
     {"role": "user", "content": "And times 3?"}],
    [{"role": "user", "content": "  padded with spaces and a newline\n"},
     {"role": "assistant", "content": "\tTabbed reply.  "}],
    [{"role": "user", "content": "Grüße aus Zürich 👋 — naïve café, 日本語のテキスト"}],
    [{"role": "user", "content": "First line\nsecond line\n\nthird after a blank"}],
    [{"role": "user", "content": "hi"}, {"role": "system", "content": "A late system message."},
     {"role": "user", "content": "again"}],
    [{"role": "system", "content": ""}, {"role": "user", "content": ""}],
    [{"role": "user", "content": "Write <|im_end|> and <|eot_id|> literally."}],
    [{"role": "system", "content": "State: {\"temp\": 81.2, \"fan\": \"off\", \"alarms\": []}"},
     {"role": "user", "content": "Decide: {\"action\": \"reduce_load\" | \"none\"}"}],
    [{"role": "user", "content": "x" * 300 + " end"}],
    [{"role": "assistant", "content": "I speak first."}, {"role": "user", "content": "Odd, but allowed."}],
]


def write_chat_templates(llm, gguf, out_dir):
    """chat_templates.json: transformers' render of every (template, conversation, add_generation_prompt),
    checked equal to llama-cpp-python's Jinja2ChatFormatter; SmolLM2's texts also tokenized by llama.cpp."""
    import llama_cpp
    from gguf import GGUFReader
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from transformers.utils.chat_template_utils import render_jinja_template

    reader = GGUFReader(gguf)
    field = reader.fields["tokenizer.chat_template"]
    smol = bytes(field.parts[field.data[0]]).decode()
    here = os.path.join(out_dir, "templates")
    templates = {
        "smollm2": {"template": smol, "bos": "<|endoftext|>", "eos": "<|endoftext|>", "source": "the GGUF's tokenizer.chat_template"},
        "qwen2.5": {"template": open(os.path.join(here, "qwen2.5-instruct.jinja")).read(), "bos": "", "eos": "<|im_end|>",
                    "source": "templates/qwen2.5-instruct.jinja"},
        "llama3": {"template": open(os.path.join(here, "llama3.jinja")).read(), "bos": "<|begin_of_text|>", "eos": "<|eot_id|>",
                   "source": "templates/llama3.jinja"},
    }
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    add_bos = bool(llama_cpp.llama_vocab_get_add_bos(vocab))
    cases = []
    for name, t in templates.items():
        for ci, conv in enumerate(CONVERSATIONS):
            for gen in (True, False):
                text = render_jinja_template(conversations=[conv], chat_template=t["template"], add_generation_prompt=gen,
                                             bos_token=t["bos"], eos_token=t["eos"])[0][0]
                fmt = Jinja2ChatFormatter(template=t["template"], eos_token=t["eos"], bos_token=t["bos"], add_generation_prompt=gen)
                other = fmt(messages=conv).prompt
                assert text == other, (name, ci, gen, text, other)
                case = {"template": name, "conversation": ci, "add_generation_prompt": gen, "text": text}
                if name == "smollm2":
                    case["ids"] = llm.tokenize(text.encode(), add_bos=add_bos, special=True)
                cases.append(case)
    out = {
        "what": "chat templates rendered by transformers (render_jinja_template), equal to llama-cpp-python's "
                "Jinja2ChatFormatter; smollm2 ids: llama.cpp's llama_tokenize(parse_special=true, add_bos per the GGUF)",
        "gguf_sha256": sha256(gguf),
        "smollm2_add_bos": add_bos,
        "templates": templates,
        "conversations": CONVERSATIONS,
        "cases": cases,
        "versions": reftools.versions(),
    }
    with open(os.path.join(out_dir, "chat_templates.json"), "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")
    print("chat templates: %d cases" % len(cases))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    llm = load_llama(args.gguf)
    write_pieces(llm, args.gguf, args.out)
    write_chat_templates(llm, args.gguf, args.out)


if __name__ == "__main__":
    main()
