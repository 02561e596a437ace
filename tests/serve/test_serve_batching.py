#!/usr/bin/env python3
"""Dynamic batching changes no answer: 1,000 mixed requests (every question type, string / object /
list states, truncation, min_confidence gates, refusals, batch-route bodies) sent by 64 concurrent
keep-alive connections, every response byte-identical to the same request answered alone (the
server run with batching off); requests sharing an X-Laya-Sequence key never share a batch.

    test_serve_batching.py LAYA_SERVE ENCODER.laya
"""
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from serve_util import Server  # noqa: E402

SERVE, ENCODER = sys.argv[1:3]
failures = []

WORDS = ["billing", "refund", "invoice", "login", "error", "urgent", "server", "customer", "twice",
         "charged", "Friday", "password", "café", "naïve", "日本語", "🙂", "x"]
CHOICE = {"type": "choice", "instructions": "Which team?",
          "criteria": {"billing": "money", "support": "broken things", "sales": "buying"}}
SCORE = {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high", "now"]}
NOUL = {"type": "noul", "instructions": "Is a refund asked for?"}


def bodies(rng):
    out = []
    for i in range(60):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 400)))
        kind = i % 6
        state = (words if kind < 3 else {"ticket": words, "n": i, "tags": ["a", "b"]} if kind < 5
                 else [words[:50], words[50:100]])
        qs = {}
        for q, d in (("team", CHOICE), ("urgency", SCORE), ("refund", NOUL)):
            if rng.random() < 0.7:
                qs[q] = d
        if not qs:
            qs["refund"] = NOUL
        b = {"state": state, "questions": qs}
        if i % 7 == 0:
            b["max_len"] = 48
        if i % 11 == 0:
            b["min_confidence"] = 0.5
        if i % 13 == 0:
            b["head_max_len"] = 24
        out.append(("/v1/systemone", json.dumps(b).encode()))
    out.append(("/v1/systemone", b'{"state": "x", "questions": {"q": {"type": "nope"}}}'))
    out.append(("/v1/systemone", b'{"state": null, "questions": {}}'))
    out.append(("/v1/systemone/batch", json.dumps({"states": ["a b c", {"k": "v"}, "refund me"],
                                                   "questions": {"refund": NOUL, "team": CHOICE}}).encode()))
    return out


def answer(conn, path, body, headers=None):
    conn.request("POST", path, body=body, headers=headers or {})
    r = conn.getresponse()
    return r.status, r.read(), r.getheader("x-laya-batch")


rng = random.Random(7)
reqs = bodies(rng)
alone = {}
with Server(SERVE, ["m=" + ENCODER], args=["--max-batch", "1", "--batch-window-ms", "0"]) as s:
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    for i, (path, body) in enumerate(reqs):
        st, b, _ = answer(c, path, body)
        alone[i] = (st, b)
    c.close()

N, CONNS = 1000, 64
picks = [rng.randrange(len(reqs)) for _ in range(N)]
results = [None] * N
batches = {}
with Server(SERVE, ["m=" + ENCODER], args=["--max-concurrent", str(CONNS)]) as s:
    lock = threading.Lock()
    next_i = [0]

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
        while True:
            with lock:
                i = next_i[0]
                if i >= N:
                    break
                next_i[0] += 1
            path, body = reqs[picks[i]]
            key = "wf-%d" % (i % 5) if i % 4 == 0 else None
            st, b, batch = answer(conn, path, body, {"X-Laya-Sequence": key} if key else {})
            results[i] = (st, b, batch, key)
        conn.close()

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(CONNS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    elapsed = time.time() - t0

mismatch = 0
sizes = []
by_key = {}
for i, r in enumerate(results):
    if r is None:
        failures.append("request %d unanswered" % i)
        continue
    st, b, batch, key = r
    if (st, b) != alone[picks[i]]:
        mismatch += 1
        if mismatch <= 3:
            failures.append("request %d (%s): %d %r\n  alone: %d %r" % (i, reqs[picks[i]][0], st, b[:200],
                                                                      alone[picks[i]][0], alone[picks[i]][1][:200]))
    if batch:
        bid, size = map(int, batch.split("/"))
        sizes.append(size)
        if key:
            by_key.setdefault(key, []).append(bid)
for key, ids in by_key.items():
    if len(set(ids)) != len(ids):
        failures.append("%s shared a batch: %s" % (key, sorted(ids)))
if mismatch:
    failures.append("%d of %d answers differ from the request alone" % (mismatch, N))
if not sizes or max(sizes) < 2:
    failures.append("no batch held two requests: %s" % sizes[:40])
print("%d requests at %d connections in %.1f s; batch sizes: mean %.1f, max %d; %d byte-identical"
      % (N, CONNS, elapsed, sum(sizes) / max(1, len(sizes)), max(sizes or [0]), N - mismatch))
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
