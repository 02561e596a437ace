"""Records tests/fixtures/gguf/smollm2-llamacpp-greedy.json: llama.cpp's greedy generation on the
real SmolLM2 GGUF.

llama-cpp-python (0.3.36, which builds llama.cpp from source), 1 thread, default context parameters
(F16 K/V cache, flash attention off). Each prompt is tokenized by llama.cpp (add_bos_token from the
file; special tokens parsed), prefilled in one batch into a fresh KV cache, then decoded one token
at a time through the cache: the next token is the largest logit (the lowest id on ties), as
llama.cpp's greedy sampler picks it. tests/frontends/test_gguf_generate.cpp tokenizes the same
texts with our tokenizer and generates with runtime/decoder.h over our KV cache.

For every step the file also keeps llama.cpp's margin (its largest logit minus the second): where
that margin is within the two implementations' known logit noise (tests/fixtures/gguf/README.md:
~1 at worst, from 8-bit activation rounding), the two may legitimately pick different tokens.

JSON: {"generator": ..., "steps": N, "prompts": [{"text": T, "prompt_ids": [...],
        "greedy_ids": [...], "margins": [...]}]}

Usage: /work/refvenv/bin/python tools/reference/make_smollm2_greedy.py GGUF [OUT]
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402

PROMPTS = reftools.SMOLLM2_PROMPTS[:4]

STEPS = 16



def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures/gguf/smollm2-llamacpp-greedy.json"
    import llama_cpp

    llm = reftools.llama_cpp_model(path)
    records = []
    for text in PROMPTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        greedy, margins = [], []
        for _ in range(STEPS):
            row = np.array(llm.scores[llm.n_tokens - 1, :], dtype=np.float32)
            order = np.lexsort((np.arange(row.size), -row))[:2]  # logit desc, then id asc
            greedy.append(int(order[0]))
            margins.append(round(float(row[order[0]] - row[order[1]]), 4))
            llm.eval([int(order[0])])
        records.append({"text": text, "prompt_ids": [int(i) for i in ids], "greedy_ids": greedy,
                        "margins": margins})
        print(f"{len(ids):3d} tokens -> {greedy} "
              f"({llm.detokenize(greedy).decode('utf-8', 'replace')!r})", file=sys.stderr)
    doc = {"generator": f"tools/reference/make_smollm2_greedy.py, llama-cpp-python "
                        f"{llama_cpp.__version__}", "steps": STEPS, "prompts": records}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
