"""Records tests/fixtures/gguf/smollm2-llamacpp-logits.bin: llama.cpp's logits on the real SmolLM2 GGUF.

llama-cpp-python (0.3.36, which builds llama.cpp from source) evaluates four prompts with
logits_all=True, one prompt per fresh KV cache, in one batch each (prefill), 1 thread, default
context parameters (F16 K/V cache, flash attention off). The prompts are tokenized by llama.cpp
itself (add_bos_token from the file: false for SmolLM2; special tokens parsed), so the recorded ids
are what llama.cpp ran. tests/frontends/test_gguf_decoder.cpp runs the graph frontends/
gguf_decoder builds from the same file on the same ids and compares.

File layout (little endian):
  "LGLC", u32 version (1), u32 n_prompts, u32 vocab, u32 top_k
  n_prompts x {
    u32 n_tokens
    i32 ids[n_tokens]
    n_tokens x { i32 top_ids[top_k], f32 top_logits[top_k] }  # llama.cpp's top_k after each prefix,
                                                               # logits descending (ties: lower id)
    f32 last[vocab]                                            # every logit after the whole prompt
  }

Usage: /work/refvenv/bin/python tools/reference/make_smollm2_logits.py GGUF [OUT]
       (--kv-f32: F32 K/V cache instead of llama.cpp's default F16, for the diagnosis in
       tests/fixtures/gguf/README.md; not the committed fixture)
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402

PROMPTS = reftools.SMOLLM2_PROMPTS[:4]

TOP_K = 32



def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    path = args[0]
    out = args[1] if len(args) > 1 else "tests/fixtures/gguf/smollm2-llamacpp-logits.bin"
    import llama_cpp

    kw = {}
    if "--kv-f32" in sys.argv:
        kw = {"type_k": 0, "type_v": 0}  # GGML_TYPE_F32
    llm = reftools.llama_cpp_model(path, **kw)
    vocab = llm.n_vocab()
    data = b"LGLC" + struct.pack("<IIII", 1, len(PROMPTS), vocab, TOP_K)
    for text in PROMPTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        scores = np.array(llm.scores[: len(ids), :], dtype=np.float32)
        data += struct.pack("<I", len(ids)) + np.asarray(ids, dtype=np.int32).tobytes()
        for row in scores:
            order = np.lexsort((np.arange(vocab), -row))[:TOP_K]  # logit desc, then id asc
            data += order.astype(np.int32).tobytes() + row[order].astype(np.float32).tobytes()
        data += scores[-1].tobytes()
        top1 = [int(np.argmax(r)) for r in scores]
        print(f"{len(ids):3d} tokens, next after the prompt: {top1[-1]} "
              f"({llm.detokenize([top1[-1]]).decode('utf-8', 'replace')!r})", file=sys.stderr)
    with open(out, "wb") as f:
        f.write(data)
    print(f"wrote {out} ({len(data)} bytes; llama-cpp-python {llama_cpp.__version__})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
