#!/usr/bin/env python3
"""laya_runtime against the upstream SDK in one process, on the same checkpoint, interleaved.

    /work/refvenv/bin/python bench/python_sdk_bench.py --checkpoint tests/fixtures/laya-tiny-modernbert \\
        --lib build/runtime/capi/liblaya.so --convert build/tools/laya-convert [--reps 7] [--calls 50]

Per repetition and engine: `--calls` predict calls on the README's support-ticket request (its
state and questions), then `--calls` / 4 predict_batch calls of 16 states (the same questions).
Prints the medians over repetitions (ms per call, states per second) and our speed-up. Both run
with one intra-op thread (torch.set_num_threads(1); threads=1 here) unless --threads says
otherwise; the results must agree (checked on the first call: the same answers).
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--convert", required=True)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    os.environ["LAYA_LIBRARY"] = a.lib
    os.environ["LAYA_CONVERT"] = a.convert
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import torch
    import laya
    import laya_runtime

    torch.set_num_threads(a.threads)
    body = json.load(open(os.path.join(HERE, "..", "examples", "support-ticket.json")))
    state, questions = body["state"], body["questions"]
    states = [state] * 16
    upstream = laya.load(a.checkpoint, device="cpu")
    ours = laya_runtime.load(a.checkpoint, threads=a.threads, contexts=1)
    u0, o0 = upstream.predict(state, questions), ours.predict(state, questions)
    same = json.dumps(u0["answers"], sort_keys=True) == json.dumps(o0["answers"], sort_keys=True)
    res = {"upstream": {"predict": [], "batch": []}, "laya_runtime": {"predict": [], "batch": []}}
    for _ in range(a.reps):
        for name, agent in (("upstream", upstream), ("laya_runtime", ours)):
            t0 = time.perf_counter()
            for _ in range(a.calls):
                agent.predict(state, questions)
            res[name]["predict"].append((time.perf_counter() - t0) * 1000 / a.calls)
            nb = max(1, a.calls // 4)
            t0 = time.perf_counter()
            for _ in range(nb):
                agent.predict_batch(states, questions)
            res[name]["batch"].append(16 * nb / (time.perf_counter() - t0))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print("CPU: %s; threads %d; %d reps x %d calls; answers equal on the first call: %s"
          % (cpu, a.threads, a.reps, a.calls, same))
    print("%-14s %18s %22s" % ("engine", "predict ms (P50)", "predict_batch states/s"))
    for name in ("upstream", "laya_runtime"):
        print("%-14s %18.3f %22.1f" % (name, statistics.median(res[name]["predict"]),
                                       statistics.median(res[name]["batch"])))
    print("laya_runtime over upstream: predict %.1fx, predict_batch %.1fx"
          % (statistics.median(res["upstream"]["predict"]) / statistics.median(res["laya_runtime"]["predict"]),
             statistics.median(res["laya_runtime"]["batch"]) / statistics.median(res["upstream"]["batch"])))


if __name__ == "__main__":
    main()
