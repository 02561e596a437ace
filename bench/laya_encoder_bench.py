#!/usr/bin/env python3
"""Side-by-side benchmark of the Laya decision network: ours (fp32 / bf16 / int8 .laya files made
by laya-convert) against ONNX Runtime fp32 / int8 and PyTorch fp32 / bf16 autocast
(bench/peers/laya_peers.py), in one run, on one row of 128 / 256 / 512 tokens, 1 and 2 threads.
Writes a markdown table.

    python3 bench/laya_encoder_bench.py --checkpoint DIR --build build --work /tmp/laya-bench \\
        [--tokens 128,256,512] [--threads 1,2] [--skip 512x2] [--reps 3] [--out table.md] [--raw F]

CHECKPOINT is a Laya checkpoint directory with its ONNX exports (tools/reference/
make_real_reference.sh makes both: make_laya_checkpoint.py --preset modernbert-large, then
export_laya_onnx.py). The .laya conversions are cached in WORK.

Runs are interleaved: per thread count, every engine is loaded once in its own long-lived process
(laya-bench-model --serve 1, one per dtype; laya_peers.py --serve for the peers), each is warmed up
on every shape, then round after round every engine runs each shape once, the engine order rotating
from round to round, so a load change on the shared machine hits every engine alike. The table
gives the median of the rounds. GFLOP/s use the same work count for every engine
(laya-bench-model's "gflop": matmuls plus attention over the keys each query sees, the whole
network), so they compare engines like the times do; % of peak divides the FLOPs the engine
computes (ours skip the head's last layer on rows no answer reads: laya-bench-model's
"gflop_executed"; the peers compute the whole network) by threads x the machine's measured fp32
FMA peak per core (bench/peak.h), for every row (int8 rows too: the figure says how far from the
fp32 roof each engine sits). --raw writes every
timed run as JSON lines (wall and CPU time). --clock cpu bases the table on each engine process's
CPU time (every thread) instead of wall time: on a loaded machine, at 1 thread, the figure
time-slicing does not inflate (at 2 threads it also counts spinning worker threads).
"""
import argparse
import json
import os
import platform
import statistics
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


class Worker:
    """A long-lived engine process answering one JSON line per request line."""

    def __init__(self, cmd):
        print("+ " + " ".join(cmd), file=sys.stderr)
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def read(self):
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit("an engine process ended early: %s" % " ".join(self.p.args))
            if line.startswith("{"):
                return json.loads(line)

    def ask(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()
        return self.read()

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--build", default="build")
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokens", default="128,256,512")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--skip", default="", help="shapes left out, comma-separated: TOKENSxTHREADS (every engine, "
                    "e.g. 512x2) or ENGINE@TOKENSxTHREADS (one engine, e.g. torch-bf16@256x1)")
    ap.add_argument("--reps", type=int, default=3, help="timed rounds (the median is taken)")
    ap.add_argument("--dtypes", default="f32,bf16,int8")
    ap.add_argument("--peers", default="ort-fp32,ort-int8,torch-fp32,torch-bf16")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="what the table's times are: wall clock, or the engine process's CPU time "
                         "(every thread; on a loaded machine the 1-thread figure that time-slicing "
                         "does not inflate)")
    ap.add_argument("--out")
    ap.add_argument("--raw")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    skip = set(x for x in args.skip.split(",") if x)

    models = {}
    for dtype in args.dtypes.split(","):
        model = os.path.join(args.work, "model.%s.laya" % dtype)
        if not os.path.exists(model):
            subprocess.run([os.path.join(args.build, "tools/laya-convert"), args.checkpoint, "-o", model,
                            "--dtype", dtype, "--quiet"], check=True)
        models[dtype] = model
    peers = [e for e in args.peers.split(",") if e]

    runs, peaks, gflop, executed = [], {}, {}, {}
    raw = open(args.raw, "w") if args.raw else None
    for th in [int(x) for x in args.threads.split(",")]:
        tokens = [int(t) for t in args.tokens.split(",") if "%sx%d" % (t, th) not in skip]
        if not tokens:
            continue
        engines = []  # (name, worker, request text)
        workers = []
        for dtype, model in models.items():
            w = Worker([os.path.join(args.build, "bench/laya-bench-model"), model, "--threads", str(th),
                        "--serve", "1", "--label", "laya " + dtype])
            peaks = w.read()["peaks"]
            workers.append(w)
            engines.append(("laya " + dtype, w, None))
        if peers:
            w = Worker([sys.executable, os.path.join(HERE, "peers/laya_peers.py"), "--checkpoint", args.checkpoint,
                        "--threads", str(th), "--engines", ",".join(peers), "--serve"])
            w.read()  # ready
            workers.append(w)
            engines += [(e, w, e) for e in peers]

        def once(engine, t):
            name, w, prefix = engine
            r = w.ask("%s %d" % (prefix, t) if prefix else str(t))
            r["engine"] = name
            if "gflop" in r:
                gflop[t] = r["gflop"]
                executed[(name, t)] = r.get("gflop_executed", r["gflop"])
            return r

        def runs_on(e, t):
            return "%s@%dx%d" % (e[0], t, th) not in skip

        for t in tokens:
            for e in engines:
                if runs_on(e, t):
                    once(e, t)  # warm-up
        for rep in range(args.reps):
            for t in tokens:
                k = rep % len(engines)
                for e in engines[k:] + engines[:k]:
                    if not runs_on(e, t):
                        continue
                    r = once(e, t)
                    r["round"] = rep
                    runs.append(r)
                    print("%s %d tokens %d threads: %.1f ms" % (r["engine"], t, th, r["median_ms"]), file=sys.stderr)
                    if raw:
                        raw.write(json.dumps(r) + "\n")
                        raw.flush()
        for w in workers:
            w.close()

    groups = {}
    for r in runs:
        groups.setdefault((r["tokens"], r["threads"], r["engine"]), []).append(
            r["median_ms"] if args.clock == "wall" else r["cpu_ms"][0])
    med = {k: statistics.median(v) for k, v in groups.items()}
    order = ["laya f32", "laya bf16", "laya int8", "ort-fp32", "ort-int8", "torch-fp32", "torch-bf16"]
    fp32_peak = peaks.get("fp32_gflops", 0)
    lines = ["CPU: %s; measured peaks per core (bench/peak.h): fp32 FMA %.1f GFLOP/s, int8 %.1f GOP/s; "
             "median of %d interleaved rounds; %s time" % (cpu_model(), fp32_peak, peaks.get("int8_gops", 0),
                                                             args.reps, "wall-clock" if args.clock == "wall" else "CPU"),
             "",
             "| tokens | threads | engine | median ms | runs (ms) | GFLOP/s | % of fp32 peak | vs ORT fp32 | vs ORT int8 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (t, th, e) in sorted(med, key=lambda k: (k[1], k[0], order.index(k[2]) if k[2] in order else 99)):
        ms = med[(t, th, e)]
        rate = gflop[t] / (ms / 1e3)
        done = executed.get((e, t), gflop[t]) / (ms / 1e3)  # the FLOPs this engine computes
        pct = 100 * done / (fp32_peak * th) if fp32_peak else 0
        vs = []
        for b in ("ort-fp32", "ort-int8"):
            v = med.get((t, th, b))
            vs.append("%.2fx" % (v / ms) if v else "")
        lines.append("| %d | %d | %s | %.0f | %s | %.1f | %.0f%% | %s | %s |" % (
            t, th, e, ms, " ".join("%.0f" % x for x in groups[(t, th, e)]), rate, pct, vs[0], vs[1]))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
