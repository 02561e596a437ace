#!/usr/bin/env python3
"""Side-by-side decoder speed: `laya-run generate` (runtime/decoder.h over the KV cache) against
llama.cpp (llama-cpp-python) on the same GGUF, 1 and 2 threads, in one run. Writes a markdown
table of medians.

    /work/refvenv/bin/python bench/decoder_bench.py --laya-run build/tools/laya-run --gguf M.gguf \\
        [--prompt-tokens 128] [--new-tokens 64] [--threads 1,2] [--reps 3] [--kv-types f32,f16]
        [--no-llamacpp] [--llamacpp-path auto|default|generic]
        [--roofline build/bench/laya-bench-kernels]

Per repetition each engine starts cold in the same way: ours a fresh `laya-run generate` process
(load, import, pack, then prefill the prompt in one chunk and decode), llama.cpp a fresh
`Llama` object (load, then eval the prompt in one batch and decode one token per eval). Prompt
processing is prompt tokens / prefill time (the first execute in the process on both sides);
decode is new tokens after the first / their time. The prompt is the same ids on both sides
(llama.cpp's tokenization of a fixed text, cut to --prompt-tokens). --kv-types runs ours once per
KV cache type (`laya-run generate --kv-type`, one row each; default f16, laya-run's default and
llama.cpp's, which keeps its default f16 K / V),
interleaved with the other engine in every repetition; --no-llamacpp leaves llama.cpp out.
llama.cpp runs as its users get it (its default CPU path: weights repacked for its AVX2 / AVX-512
GEMMs where it has them, e.g. Q4_0, Q8_0 and Q4_K on Zen 4) except on a CPU with AMX, where that path
dies on its first tile instruction (our Xeons) and it runs its generic CPU path instead
(reftools.llama_cpp_generic_path: no repacked weights); --llamacpp-path forces either, and the
table's header names the one that ran. The machine may be shared: quote the CPU and say so.

--roofline BENCH adds each decode's share of the memory roofline: weight bytes per token (every
tensor of the GGUF, less token_embd when an output.weight exists: a tied head reads the whole
table each step, an untied embedding one row) x decode tok/s over the 1-thread DRAM read figure
of `BENCH --benchmark_filter=BM_machine_peaks` (bench/peak.h), which is measured again right
after every decode, so each ratio has its own denominator; the column is the median of those
ratios, with their range in parentheses: on a shared host single runs spread by 10-20 points
(issue 8's bar: >= 75% at 1 thread).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "reference"))
import reftools  # noqa: E402

TEXT = ("The maintenance log of the cooling system records every alarm, the time it was raised, "
        "the sensor that raised it and the action the operator took. ") * 80


def cpu_model():
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def weight_bytes_per_token(path):
    import gguf

    r = gguf.GGUFReader(path)
    sizes = {t.name: int(t.n_bytes) for t in r.tensors}
    total = sum(sizes.values())
    if "output.weight" in sizes:
        total -= sizes.get("token_embd.weight", 0)
    return total


def read_gbs(bench):
    out = subprocess.run(["taskset", "-c", "1", bench, "--benchmark_filter=BM_machine_peaks"],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "dram_read_GBps=" in line:
            return float(line.split("dram_read_GBps=")[1].split()[0])
    raise RuntimeError("no dram_read_GBps in BM_machine_peaks' output")


def ours(laya_run, gguf, ids, new, threads, kv_type):
    out = subprocess.run([laya_run, "generate", "--model", gguf, "--ids", ",".join(map(str, ids)),
                          "--max-tokens", str(new), "--chunk", str(len(ids)), "--threads",
                          str(threads), "--kv-type", kv_type, "--json"], check=True,
                         capture_output=True, text=True)
    t = json.loads(out.stdout)["timings"]
    return len(ids) * 1000.0 / t["prefill_ms"], t["decode_tokens_per_s"]


def has_amx():
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " amx_tile" in line for line in f)
    except OSError:
        return False


def llamacpp(gguf, ids, new, threads):
    import llama_cpp
    import numpy as np

    ctx = max(512, (len(ids) + new + 511) // 512 * 512)
    llm = llama_cpp.Llama(model_path=gguf, n_ctx=ctx, n_batch=ctx, n_ubatch=ctx,
                          n_threads=threads, n_threads_batch=threads, logits_all=False,
                          verbose=False, seed=0)
    t0 = time.perf_counter()
    llm.eval(ids)
    pp = len(ids) / (time.perf_counter() - t0)
    nxt = int(np.argmax(llm.scores[llm.n_tokens - 1, :]))
    t0 = time.perf_counter()
    for _ in range(new - 1):
        llm.eval([nxt])
        nxt = int(np.argmax(llm.scores[llm.n_tokens - 1, :]))
    dec = (new - 1) / (time.perf_counter() - t0)
    del llm
    return pp, dec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--laya-run", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kv-types", default="f16", help="ours: KV cache types, e.g. f16,f32")
    ap.add_argument("--no-llamacpp", action="store_true")
    ap.add_argument("--llamacpp-path", choices=["auto", "default", "generic"], default="auto",
                    help="llama.cpp's CPU path: auto = generic on a CPU with AMX, else default")
    ap.add_argument("--roofline", metavar="BENCH", help="laya-bench-kernels: add the roofline column")
    a = ap.parse_args()
    wbytes = weight_bytes_per_token(a.gguf) if a.roofline else 0
    kv_types = a.kv_types.split(",")
    path = a.llamacpp_path
    if path == "auto":
        path = "generic" if has_amx() else "default"
    if a.no_llamacpp:  # the prompt tokenized by laya-run, as llama.cpp does (docs/tokenizers.md)
        out = subprocess.run([a.laya_run, "generate", "--model", a.gguf, "--prompt", TEXT,
                              "--max-tokens", "1", "--json"], check=True, capture_output=True,
                             text=True)
        ids = json.loads(out.stdout)["prompt_ids"][: a.prompt_tokens]
    else:
        import llama_cpp

        if path == "generic":
            reftools.llama_cpp_generic_path()  # before any Llama: it wraps the default params
        tok = llama_cpp.Llama(model_path=a.gguf, vocab_only=True, verbose=False)
        ids = tok.tokenize(TEXT.encode(), add_bos=True, special=True)[: a.prompt_tokens]
        del tok
    rows = []
    for th in [int(x) for x in a.threads.split(",")]:
        res = {f"laya-run (KV {kv})": [] for kv in kv_types}
        if not a.no_llamacpp:
            res["llama.cpp"] = []
        def measured(r):  # (pp, decode, roofline share of this decode or None)
            if not a.roofline:
                return r + (None,)
            return r + (wbytes * r[1] * 1e-9 / read_gbs(a.roofline),)

        for _ in range(a.reps):  # interleaved, so a load change hits both
            for kv in kv_types:
                res[f"laya-run (KV {kv})"].append(measured(ours(a.laya_run, a.gguf, ids,
                                                                a.new_tokens, th, kv)))
            if not a.no_llamacpp:
                res["llama.cpp"].append(measured(llamacpp(a.gguf, ids, a.new_tokens, th)))
        for name, r in res.items():
            roof = [x[2] for x in r] if a.roofline else None
            rows.append((name, th, statistics.median(x[0] for x in r),
                         statistics.median(x[1] for x in r),
                         (statistics.median(roof), min(roof), max(roof)) if roof else None))
    peer = ("without llama.cpp" if a.no_llamacpp else
            f"llama-cpp-python {sys.modules['llama_cpp'].__version__}, its {path} CPU path")
    print(f"CPU: {cpu_model()}; {a.gguf.split('/')[-1]}; prompt {len(ids)} tokens in one chunk, "
          f"{a.new_tokens} new tokens; median of {a.reps}; {peer}\n")
    if a.roofline:
        print(f"Roofline: {wbytes / 1e6:.1f} MB of weights per token; the DRAM read figure measured "
              f"after every decode (median of the per-run ratios, and their range)\n")
        print("| engine | threads | prompt processing (tok/s) | decode (tok/s) | roofline |")
        print("|---|---|---|---|---|")
    else:
        print("| engine | threads | prompt processing (tok/s) | decode (tok/s) |")
        print("|---|---|---|---|")
    for name, th, pp, dec, roof in rows:
        tail = (f" {100 * roof[0]:.0f}% ({100 * roof[1]:.0f}-{100 * roof[2]:.0f}) |"
                if a.roofline else "")
        print(f"| {name} | {th} | {pp:.1f} | {dec:.1f} |{tail}")


if __name__ == "__main__":
    main()
