#!/usr/bin/env python3
"""laya-serve under sustained load, with or without a hot reload every period: every request must
answer 200, and the server's RSS must stay flat.

    python3 bench/serve_soak.py --serve build/tools/laya-serve --laya build/tests/laya-tiny.laya \\
        [--seconds 300] [--reload-every 1.0] [--conns 16] [--corrupt-every 0] [--max-rss-growth-mb 8]

Load: --conns keep-alive connections (Python threads) posting examples/support-ticket.json
in a loop. Reloads: POST /admin/reload every --reload-every seconds (0: none), alternating the
model file with a byte-identical copy so each reload really maps a new file; with
--corrupt-every N every Nth reload names a truncated copy instead, which must be refused (422)
while the old model keeps answering. RSS (VmRSS of the server) is sampled every second; "flat"
is the median of the last 10% of samples within --max-rss-growth-mb of the median of the 10%
after the first 10% (the start is warm-up). Exits 1 on any non-200 answer, a reload that did not
answer as expected, or RSS growth past the bound. tests/serve runs it for 15 s in CI
(meson test serve_soak); docs/serving.md has the 5-minute and 30-minute runs.
"""
import argparse
import http.client
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "serve"))
from serve_util import Server  # noqa: E402


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", required=True)
    ap.add_argument("--laya", required=True)
    ap.add_argument("--body", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                                   "support-ticket.json"))
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--reload-every", type=float, default=1.0)
    ap.add_argument("--corrupt-every", type=int, default=0)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--max-rss-growth-mb", type=float, default=8.0)
    args = ap.parse_args()
    body = open(args.body, "rb").read()
    tmp = tempfile.mkdtemp()
    files = [os.path.join(tmp, "a.laya"), os.path.join(tmp, "b.laya")]
    for f in files:
        shutil.copyfile(args.laya, f)
    bad = os.path.join(tmp, "bad.laya")
    with open(args.laya, "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 3])
    failures = []
    counts = {"ok": 0, "reloads": 0, "refused_reloads": 0}
    lock = threading.Lock()
    with Server(args.serve, ["m=" + files[0]], args=["--max-concurrent", str(max(64, args.conns + 4))]) as s:
        stop = time.time() + args.seconds

        def client():
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
            while time.time() < stop:
                try:
                    c.request("POST", "/v1/systemone", body=body)
                    r = c.getresponse()
                    r.read()
                    st = r.status
                except Exception as e:  # a dropped connection is a failure too
                    st = repr(e)
                    c.close()
                    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
                with lock:
                    if st == 200:
                        counts["ok"] += 1
                    else:
                        failures.append("request: %s" % st)
            c.close()

        def reloader():
            k = 0
            while time.time() < stop - args.reload_every:
                time.sleep(args.reload_every)
                k += 1
                corrupt = args.corrupt_every and k % args.corrupt_every == 0
                path = bad if corrupt else files[k % 2]
                st, _, b = s.post("/admin/reload", {"model": "m", "path": path})
                with lock:
                    if corrupt:
                        counts["refused_reloads"] += 1
                        if st != 422 or b"the old model keeps serving" not in b:
                            failures.append("corrupt reload answered %d %r" % (st, b[:200]))
                    else:
                        counts["reloads"] += 1
                        if st != 200:
                            failures.append("reload answered %d %r" % (st, b[:200]))

        threads = [threading.Thread(target=client) for _ in range(args.conns)]
        if args.reload_every > 0:
            threads.append(threading.Thread(target=reloader))
        for t in threads:
            t.start()
        rss = []
        while time.time() < stop:
            rss.append(rss_mb(s.proc.pid))
            time.sleep(1.0)
        for t in threads:
            t.join(120)
    shutil.rmtree(tmp)
    # Medians of the middle and the last third: RSS swings by 10-15 MB within a second while a
    # reload holds two models, so single samples (the first fix compared the last one) flake;
    # a leak moves the median of a whole third.
    n = len(rss)
    early = statistics.median(rss[n // 3: max(n // 3 + 1, 2 * n // 3)]) if n >= 3 else rss[0]
    late = statistics.median(rss[2 * n // 3:]) if n >= 3 else rss[-1]
    growth = late - early
    if growth > args.max_rss_growth_mb:
        failures.append("RSS grew %.1f MB (%.1f -> %.1f)" % (growth, early, late))
    if os.environ.get("LAYA_SOAK_TRACE"):
        print("RSS per second:", " ".join("%.1f" % r for r in rss))
    print("%.0f s, %d connections: %d requests answered 200, %d not; %d reloads, %d corrupt reloads "
          "refused; RSS (medians) %.1f MB in the middle third, %.1f MB in the last (max %.1f)"
          % (args.seconds, args.conns, counts["ok"], sum(f.startswith("request") for f in failures),
             counts["reloads"], counts["refused_reloads"], early, late, max(rss)))
    for f in failures[:10]:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
