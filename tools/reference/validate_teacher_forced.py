"""Teacher-forced validation of laya-run against llama.cpp on a GGUF decoder (issue 8, Validation).

llama-cpp-python (0.3.36) tokenizes each prompt (add_bos_token from the file, special tokens
parsed), prefills it into a fresh KV cache and generates STEPS greedy tokens one decode step at a
time, keeping its top-3 ids at every step. `laya-run score` then runs the prompt plus those tokens
in one chunked prefill over our KV cache (teacher forcing) and prints its top-1 after each prefix.
Reported: how often our top-1 is llama.cpp's token, and how often it lies within llama.cpp's top 3.
Also checks that `laya-run generate --prompt` tokenizes every prompt to llama.cpp's ids.

Not exact math on either side (llama.cpp quantizes activations to 8 bits for quantized dot
products and keeps K/V in F16; see tests/fixtures/gguf/README.md), so near-ties may flip.

Usage: /work/refvenv/bin/python tools/reference/validate_teacher_forced.py LAYA_RUN GGUF
           [--model M.laya] [--steps 64] [--threads 1] [--kv-type f16|f32]
(--model: laya-run runs that file, e.g. the .laya laya-convert made of GGUF, instead of the GGUF.)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402

PROMPTS = reftools.SMOLLM2_PROMPTS


def validate(laya_run, gguf, model=None, steps=64, threads=1, log=print, kv_type=None):
    """Runs the check on `gguf`; laya-run runs `model` (default: the GGUF itself, e.g. the .laya
    laya-convert made of it). Returns {"steps", "top1", "top3", "prompts", "tokenization"}."""
    import llama_cpp  # noqa: F401

    model = model or gguf
    llm = reftools.llama_cpp_model(gguf, n_ctx=512, threads=threads)
    n_steps = top1 = top3 = tok_ok = 0
    for text in PROMPTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        greedy, tops = [], []
        for _ in range(steps):
            row = np.array(llm.scores[llm.n_tokens - 1, :], dtype=np.float32)
            order = np.lexsort((np.arange(row.size), -row))[:3]
            greedy.append(int(order[0]))
            tops.append([int(x) for x in order])
            llm.eval([int(order[0])])
        gen = subprocess.run([laya_run, "generate", "--model", model, "--prompt", text,
                              "--max-tokens", "1", "--json", "--threads", str(threads)],
                             check=True, capture_output=True, text=True)
        ours_prompt = json.loads(gen.stdout)["prompt_ids"]
        tok_ok += ours_prompt == ids
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"ids": ids + greedy[:-1]}, f)
            path = f.name
        try:
            sc = subprocess.run([laya_run, "score", "--model", model, "--ids-file", path,
                                 "--top", "1", "--threads", str(threads)]
                                + (["--kv-type", kv_type] if kv_type else []),
                                check=True, capture_output=True, text=True)
        finally:
            os.unlink(path)
        pos = json.loads(sc.stdout)["positions"]
        ours = [p["top_ids"][0] for p in pos[len(ids) - 1:]]
        assert len(ours) == steps
        t1 = sum(o == g for o, g in zip(ours, greedy))
        t3 = sum(o in t for o, t in zip(ours, tops))
        n_steps += steps
        top1 += t1
        top3 += t3
        log(f"{len(ids):3d} prompt tokens: top-1 {t1}/{steps}, in llama.cpp's top 3 "
            f"{t3}/{steps}, tokenization {'identical' if ours_prompt == ids else 'DIFFERS'}")
    return {"steps": n_steps, "top1": top1, "top3": top3, "prompts": len(PROMPTS),
            "tokenization": tok_ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("laya_run")
    ap.add_argument("gguf")
    ap.add_argument("--model", help="what laya-run runs (default: the GGUF; e.g. its .laya)")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kv-type", help="laya-run score --kv-type (default: laya-run's, f16)")
    a = ap.parse_args()
    import llama_cpp

    r = validate(a.laya_run, a.gguf, a.model, a.steps, a.threads, kv_type=a.kv_type)
    steps, top1, top3 = r["steps"], r["top1"], r["top3"]
    print(f"all: top-1 = llama.cpp's at {top1}/{steps} steps ({100.0 * top1 / steps:.1f}%), "
          f"within its top 3 at {top3}/{steps} ({100.0 * top3 / steps:.1f}%); tokenization "
          f"identical for {r['tokenization']}/{r['prompts']} prompts (llama-cpp-python "
          f"{llama_cpp.__version__})")


if __name__ == "__main__":
    main()
