#!/usr/bin/env python3
"""Peer timings for the Laya decision network: ONNX Runtime fp32 and int8 on the ONNX export of a
checkpoint's own weights, and PyTorch bf16 autocast (what the upstream SDK runs with
LAYA_CPU_AMP=bf16), one request of one row of T tokens, 1 and 2 threads.

    laya_peers.py --checkpoint DIR [--onnx-dir DIR/onnx] [--tokens 128,256,512] [--threads 1,2]
                  [--reps 5] [--engines ort-fp32,ort-int8,torch-bf16,torch-fp32]

The ONNX graphs are tools/reference/export_laya_onnx.py's: `laya.onnx` (upstream's DecisionModel
traced by torch.onnx.export, opset 17) and `laya.int8.onnx` (onnxruntime's quantize_dynamic: int8
weights, activations quantized per batch at run time). Sessions use ORT_ENABLE_ALL, as upstream's
ONNXAgent does, with intra_op_num_threads = the thread count. PyTorch runs laya.load(dir).model
under torch.autocast("cpu", bfloat16) and inference_mode, with torch.set_num_threads.

Prints one JSON object per line: {"engine", "tokens", "threads", "ms": [..], "median_ms"}; the
first run of each shape is a warm-up and not timed. bench/laya_encoder_bench.py runs this and
laya-bench-model side by side.

--serve (the interleaved driver's mode; one --threads value): loads every engine of --engines, prints
{"ready": true}, then answers each stdin line "ENGINE TOKENS" with one JSON line of one timed call
(the same fields, "ms" holding that one time, "cpu_ms" the process's CPU time of it, every
thread); the caller sends its own warm-up calls.
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings


def request(tokens, n_markers=4, seed=0):
    """One row of `tokens` ids (deterministic, inside the vocabulary) with n_markers markers."""
    import numpy as np
    rng = np.random.default_rng(seed)
    ids = rng.integers(10, 1000, size=(1, tokens), dtype=np.int64)
    att = np.ones((1, tokens), dtype=np.int64)
    mpos = np.array([[8 + 6 * i for i in range(n_markers)]], dtype=np.int64)
    mmask = np.ones((1, n_markers), dtype=bool)
    qtype = np.zeros((1,), dtype=np.int64)
    return ids, att, mpos, mmask, qtype


def load_agent(checkpoint):
    import laya
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return laya.load(checkpoint, device="cpu")


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def time_calls(fn, reps):
    fn()  # warm-up
    ms = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def call(engine, sess, agent, tokens):
    """A function running one request of `tokens` ids on an engine (an ORT session or the agent)."""
    ids, att, mpos, mmask, qtype = request(tokens)
    if engine.startswith("ort"):
        feed = {"input_ids": ids, "attention_mask": att, "marker_pos": mpos, "marker_mask": mmask,
                "qtype": qtype}
        return lambda: sess.run(None, feed)
    import torch
    tens = [torch.from_numpy(a) for a in (ids, att, mpos, mmask, qtype)]
    dtype = torch.bfloat16 if engine == "torch-bf16" else None

    def fn():
        with torch.inference_mode():
            if dtype is None:
                return agent.model(*tens)
            with torch.autocast(device_type="cpu", dtype=dtype):
                return agent.model(*tens)
    return fn


def serve(checkpoint, engines, threads, fp32_path, int8_path):
    sessions, agent = {}, None
    for e in engines:
        if e.startswith("ort"):
            sessions[e] = ort_session(fp32_path if e == "ort-fp32" else int8_path, threads)
        elif agent is None:
            import torch
            torch.set_num_threads(threads)
            agent = load_agent(checkpoint)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        engine, tokens = line.split()
        fn = call(engine, sessions.get(engine), agent, int(tokens))
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        ms, cpu = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
        print(json.dumps({"engine": engine, "tokens": int(tokens), "threads": threads, "ms": [ms],
                          "median_ms": ms, "cpu_ms": [cpu]}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--onnx-dir", help="default: CHECKPOINT/onnx (tools/reference/export_laya_onnx.py)")
    ap.add_argument("--tokens", default="128,256,512")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--engines", default="ort-fp32,ort-int8,torch-bf16")
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args()
    tokens = [int(t) for t in args.tokens.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    engines = args.engines.split(",")
    onnx_dir = args.onnx_dir or os.path.join(args.checkpoint, "onnx")
    fp32_path = os.path.join(onnx_dir, "laya.onnx")
    int8_path = os.path.join(onnx_dir, "laya.int8.onnx")
    for e, p in (("ort-fp32", fp32_path), ("ort-int8", int8_path)):
        if e in engines and not os.path.exists(p):
            sys.exit("%s is missing: run tools/reference/export_laya_onnx.py --checkpoint %s"
                     % (p, args.checkpoint))

    if args.serve:
        if len(threads) != 1:
            sys.exit("--serve takes one --threads value")
        serve(args.checkpoint, engines, threads[0], fp32_path, int8_path)
        return
    agent = None
    for engine in engines:
        for t in threads:
            if engine.startswith("ort"):
                sess = ort_session(fp32_path if engine == "ort-fp32" else int8_path, t)
            else:
                import torch
                torch.set_num_threads(t)
                if agent is None:
                    agent = load_agent(args.checkpoint)
            for n in tokens:
                fn = call(engine, sess if engine.startswith("ort") else None, agent, n)
                ms = time_calls(fn, args.reps)
                print(json.dumps({"engine": engine, "tokens": n, "threads": t, "ms": ms,
                                  "median_ms": statistics.median(ms)}), flush=True)


if __name__ == "__main__":
    main()
