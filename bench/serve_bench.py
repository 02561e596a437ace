#!/usr/bin/env python3
"""laya-serve under load against upstream laya-serve on the same checkpoint and machine, in one run.

    VENV/bin/python bench/serve_bench.py --serve build/tools/laya-serve \\
        --laya build/tests/laya-tiny.laya --checkpoint tests/fixtures/laya-tiny-modernbert \\
        [--body examples/support-ticket.json] [--seconds 10] [--rounds 2] [--conns 1,8,64]

VENV: tools/reference/setup-venv.sh (upstream laya 0.4.15 with uvicorn). Load: `hey` (Debian)
POSTing the body over keep-alive connections for --seconds per cell. The server is pinned to CPU 0
and the load generator to CPU 1 (taskset), one thread each for inference (LAYA_THREADS=1: torch's
intra-op threads upstream, our context's here); both share the machine with nothing else of ours.
Servers: ours with batching (10 ms window, 16 per batch), ours without (--max-batch 1), upstream.
Every server admits 64 requests at once (LAYA_MAX_CONCURRENT=64) so that the 64-connection cells
measure queueing, not 503s. Rounds interleave the servers (ours, ours unbatched, upstream, ...) so
that a slow spell of the shared host hits all of them. Prints a markdown table: requests/s and
P50 / P95 / P99 latency (ms) per server and connection count (the median over rounds), non-2xx
responses, and our throughput over upstream's.
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_ready(port, proc, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("server exited: %s" % proc.stderr.read().decode()[-2000:])
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1).read()
            return
        except Exception:
            time.sleep(0.2)
    raise RuntimeError("server did not start")


def start(kind, args, port):
    env = dict(os.environ, LAYA_PORT=str(port), LAYA_HOST="127.0.0.1", LAYA_MAX_CONCURRENT="64",
               LAYA_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", LAYA_DEVICE="cpu")
    if kind == "upstream":
        env.update(LAYA_EXTRA_MODELS=json.dumps({"english": args.checkpoint, "multilingual": args.checkpoint}),
                   LAYA_MODELS="english,multilingual", LAYA_DEFAULT_MODEL="multilingual", LAYA_LOG_LEVEL="warning")
        exe = os.path.join(os.path.dirname(sys.executable), "laya-serve")
        cmd = ["taskset", "-c", "0", exe]
    else:
        cmd = ["taskset", "-c", "0", args.serve, "--model", "english=" + args.laya, "--model",
               "multilingual=" + args.laya, "--default-model", "multilingual", "--threads", "1"]
        if kind == "ours-unbatched":
            cmd += ["--max-batch", "1", "--batch-window-ms", "0"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_ready(port, p)
    return p


def hey(port, body, conns, seconds):
    out = subprocess.run(["taskset", "-c", "1", "hey", "-z", "%ds" % seconds, "-c", str(conns), "-m", "POST",
                          "-T", "application/json", "-D", body, "http://127.0.0.1:%d/v1/systemone" % port],
                         capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    pct = {int(m.group(1)): float(m.group(2)) * 1000 for m in re.finditer(r"(\d+)%+ in ([\d.]+) secs", out)}
    codes = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"\[(\d+)\]\s+(\d+) responses", out)}
    return {"rps": rps, "p50": pct.get(50), "p95": pct.get(95), "p99": pct.get(99),
            "non2xx": sum(n for c, n in codes.items() if c >= 300)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", required=True)
    ap.add_argument("--laya", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--body", default=os.path.join(os.path.dirname(__file__), "..", "examples", "support-ticket.json"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--conns", default="1,8,64")
    ap.add_argument("--servers", default="ours,ours-unbatched,upstream")
    args = ap.parse_args()
    conns = [int(c) for c in args.conns.split(",")]
    servers = args.servers.split(",")
    cpu = next((l.split(":", 1)[1].strip() for l in subprocess.run(["lscpu"], capture_output=True, text=True).stdout
                .splitlines() if l.startswith("Model name")), "?")
    results = {}
    for r in range(args.rounds):
        for kind in servers:
            port = free_port()
            p = start(kind, args, port)
            try:
                hey(port, args.body, 4, 2)  # warm-up
                for c in conns:
                    m = hey(port, args.body, c, args.seconds)
                    results.setdefault((kind, c), []).append(m)
                    print("round %d %-15s c=%-3d %8.1f req/s  p50 %7.2f  p95 %7.2f  p99 %7.2f  non-2xx %d"
                          % (r, kind, c, m["rps"], m["p50"], m["p95"], m["p99"], m["non2xx"]), flush=True)
            finally:
                p.terminate()
                p.wait(30)
    print("\nCPU: %s; server on CPU 0, hey on CPU 1; %d s per cell, median of %d rounds; body %s\n"
          % (cpu, args.seconds, args.rounds, os.path.basename(args.body)))
    print("| server | connections | requests/s | P50 ms | P95 ms | P99 ms | non-2xx | req/s over upstream |")
    print("|---|---|---|---|---|---|---|---|")
    for c in conns:
        base = statistics.median(m["rps"] for m in results.get(("upstream", c), [{"rps": float("nan")}]))
        for kind in servers:
            ms = results[(kind, c)]
            med = lambda k: statistics.median(m[k] for m in ms)
            print("| %s | %d | %.1f | %.2f | %.2f | %.2f | %d | %s |"
                  % (kind, c, med("rps"), med("p50"), med("p95"), med("p99"), sum(m["non2xx"] for m in ms),
                     "%.2fx" % (med("rps") / base) if kind != "upstream" else "1.00x"))


if __name__ == "__main__":
    main()
