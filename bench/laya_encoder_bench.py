#!/usr/bin/env python3
"""Side-by-side benchmark of the Laya decision network: ours (fp32 / bf16 / int8 .laya files made
by laya-convert) against ONNX Runtime fp32 / int8 and PyTorch bf16 (bench/peers/laya_peers.py),
in one run, on one row of 128 / 256 / 512 tokens, 1 and 2 threads. Writes a markdown table.

    python3 bench/laya_encoder_bench.py --checkpoint DIR --build build --work /tmp/laya-bench \\
        [--tokens 128,256,512] [--threads 1,2] [--reps 5] [--out table.md]

CHECKPOINT is a Laya checkpoint directory with its ONNX exports (tools/reference/
make_real_reference.sh makes both: make_laya_checkpoint.py --preset modernbert-large, then
export_laya_onnx.py). The .laya conversions are cached in WORK. Each engine runs in
its own process, one after the other (the machine is shared: quote the CPU and the load with the
table). GFLOP/s use the same work count for every engine (laya-bench-model's "gflop": matmuls
plus attention over the keys each query sees); % of peak divides by the machine's measured fp32
FMA peak (bench/peak.h), or its int8 peak for int8 rows.
"""
import argparse
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_lines(cmd):
    print("+ " + " ".join(cmd), file=sys.stderr)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def cpu_model():
    try:
        for line in subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--build", default="build")
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokens", default="128,256,512")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dtypes", default="f32,bf16,int8")
    ap.add_argument("--peers", default="ort-fp32,ort-int8,torch-bf16")
    ap.add_argument("--out")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)

    rows, peaks = [], {}
    for dtype in args.dtypes.split(","):
        model = os.path.join(args.work, "model.%s.laya" % dtype)
        if not os.path.exists(model):
            subprocess.run([os.path.join(args.build, "tools/laya-convert"), args.checkpoint, "-o", model,
                            "--dtype", dtype, "--quiet"], check=True)
        for r in run_lines([os.path.join(args.build, "bench/laya-bench-model"), model, "--tokens", args.tokens,
                            "--threads", args.threads, "--reps", str(args.reps), "--label", "laya " + dtype]):
            if "peaks" in r:
                peaks = r["peaks"]
            else:
                rows.append(r)
    gflop = {(r["tokens"]): r["gflop"] for r in rows}
    if args.peers:
        for r in run_lines([sys.executable, os.path.join(HERE, "peers/laya_peers.py"), "--checkpoint",
                            args.checkpoint, "--tokens", args.tokens, "--threads", args.threads,
                            "--reps", str(args.reps), "--engines", args.peers]):
            r["gflop"] = gflop[r["tokens"]]
            rows.append(r)

    def key(r):
        return (r["tokens"], r["threads"])

    base = {}
    for r in rows:
        if r["engine"] in ("ort-fp32", "ort-int8"):
            base[(r["engine"],) + key(r)] = r["median_ms"]
    lines = ["CPU: %s; fp32 peak %.1f GFLOP/s, int8 peak %.1f GOP/s per core (bench/peak.h)" %
             (cpu_model(), peaks.get("fp32_gflops", 0), peaks.get("int8_gops", 0)), "",
             "| tokens | threads | engine | median ms | GFLOP/s | % of peak | vs ORT fp32 | vs ORT int8 |",
             "|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["tokens"], r["threads"], r["engine"])):
        rate = r["gflop"] / (r["median_ms"] / 1e3)
        int8 = "int8" in r["engine"]
        peak = (peaks.get("int8_gops") if int8 else peaks.get("fp32_gflops")) or 0
        pct = 100 * rate / (peak * r["threads"]) if peak else 0
        vs = []
        for b in ("ort-fp32", "ort-int8"):
            v = base.get((b,) + key(r))
            vs.append("%.2fx" % (v / r["median_ms"]) if v else "")
        lines.append("| %d | %d | %s | %.1f | %.1f | %.0f%% | %s | %s |" %
                     (r["tokens"], r["threads"], r["engine"], r["median_ms"], rate, pct, vs[0], vs[1]))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
