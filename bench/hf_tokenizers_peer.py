#!/usr/bin/env python3
"""The peer of bench/bench_tokenizer.cpp: HF `tokenizers` (Python) on the same texts, one thread.

    RAYON_NUM_THREADS=1 python3 bench/hf_tokenizers_peer.py [--reps 50]

Needs the `tokenizers` package (tools/reference/setup-venv.sh makes a venv with it). Builds the same
texts as the C++ benchmark (see its header) from tests/fixtures/laya-golden, loads the same
tokenizer files (LAYA_MODEL_CACHE or ~/.cache/laya-models for the SmolLM2 GGUF), and prints, per tokenizer and
text, the median CPU time of `Tokenizer.encode(text, add_special_tokens=False)` with HF's word
cache warm and cold (`model._clear_cache()` before each call), as tokens/s and MB/s, plus the
median time of the encodes one recorded Laya request needs (ModernBERT).
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def load_cases(sub):
    d = os.path.join(FIXTURES, "laya-golden", sub)
    out = []
    for name in sorted(os.listdir(d)):
        if not name.startswith("case_"):
            continue
        c = json.load(open(os.path.join(d, name), encoding="utf-8"))
        heads = [q["head_text"] for q in c["per_question"]]
        options = [o for q in c["per_question"] for o in q["options"]]
        out.append((name[:-5], c["serialized_state"], heads, options))
    return out


def texts():
    parts = []
    for sub in ("typed-decisions", "multilingual"):
        for name, state, heads, options in load_cases(sub):
            if name == "case_long_state":
                continue
            parts += [state] + heads + options
    long_state = [s for n, s, _, _ in load_cases("typed-decisions") if n == "case_long_state"][0]
    return {"mixed": "\n".join(parts), "long": long_state}


def cpu_median(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.thread_time_ns()
        fn()
        times.append(time.thread_time_ns() - t0)
    return statistics.median(times) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    from tokenizers import Tokenizer, __version__

    cache = os.environ.get("LAYA_MODEL_CACHE", os.path.expanduser("~/.cache/laya-models"))
    files = {
        "modernbert": os.path.join(FIXTURES, "modernbert", "tokenizer.json"),
        "minilm": os.path.join(FIXTURES, "tokenizers", "minilm.tokenizer.json"),
        "metaspace-bpe": os.path.join(FIXTURES, "tokenizers", "metaspace-bpe.tokenizer.json"),
        # HF's side of the two GGUF vocabularies: transformers' conversions (SmolLM2's with its own
        # Digits pre-tokenizer put back, as tools/reference/make_tokenizer_cases.py records it)
        "smollm2": os.path.join(cache, "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
        "llama-spm (llama-hf)": os.path.join(FIXTURES, "tokenizers", "llama-hf.tokenizer.json"),
    }
    print("tokenizers %s, python %s, RAYON_NUM_THREADS=%s" % (__version__, sys.version.split()[0],
                                                            os.environ["RAYON_NUM_THREADS"]))
    all_texts = texts()
    print("| tokenizer | text | tokens | warm tokens/s | warm MB/s | cold tokens/s | cold MB/s |")
    print("|---|---|---|---|---|---|---|")
    loaded = {}
    for name, path in files.items():
        if not os.path.exists(path):
            print("| %s | (missing: %s) | | | | | |" % (name, path))
            continue
        if path.endswith(".gguf"):
            sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
            import make_tokenizer_cases
            tok = make_tokenizer_cases.smollm2_tokenizer(path)[0]
        else:
            tok = Tokenizer.from_file(path)
        tok.no_truncation()
        tok.no_padding()
        loaded[name] = tok
        for tname, text in all_texts.items():
            n = len(tok.encode(text, add_special_tokens=False).ids)
            warm = cpu_median(lambda: tok.encode(text, add_special_tokens=False), args.reps)

            clear = getattr(tok.model, "_clear_cache", lambda: None)  # WordPiece has no cache

            def cold():
                clear()
                tok.encode(text, add_special_tokens=False)

            cold_t = cpu_median(cold, args.reps)
            mb = len(text.encode("utf-8")) / 1e6
            print("| %s | %s | %d | %.3gM | %.3g | %.3gM | %.3g |" % (
                name, tname, n, n / warm / 1e6, mb / warm, n / cold_t / 1e6, mb / cold_t))
    if "modernbert" in loaded:
        tok = loaded["modernbert"]
        print("\n| Laya request (ModernBERT) | tokens | median CPU us |")
        print("|---|---|---|")
        for name, state, heads, options in load_cases("typed-decisions"):
            pieces = [state] + heads + [" " + o for o in options]
            n = sum(len(tok.encode(p, add_special_tokens=False).ids) for p in pieces)
            t = cpu_median(lambda: [tok.encode(p, add_special_tokens=False) for p in pieces], args.reps)
            print("| %s | %d | %.1f |" % (name, n, t * 1e6))


if __name__ == "__main__":
    main()
