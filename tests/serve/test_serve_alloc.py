#!/usr/bin/env python3
"""No heap call on laya-serve's inference path after warm-up: the batch workers and their
contexts' threads (every thread but the "laya-io" ones that parse HTTP and write responses) make
none while 64 connections send 600 mixed requests (every question type, truncation, gates,
refusals). Counted by tests/serve/alloc_preload.c, LD_PRELOAD'ed into the server (glibc; not
under the sanitizers, which own malloc).

    test_serve_alloc.py LAYA_SERVE ENCODER.laya ALLOC_PRELOAD.so
"""
import http.client
import json
import os
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from serve_util import Server  # noqa: E402

SERVE, ENCODER, PRELOAD = sys.argv[1:4]
NOUL = {"type": "noul", "instructions": "Is a refund asked for?"}
CHOICE = {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "money", "support": "help"}}
SCORE = {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]}
QS = [{"a": NOUL}, {"a": NOUL, "b": CHOICE}, {"a": NOUL, "b": CHOICE, "c": SCORE}]
BODIES = [
    json.dumps(dict({"state": "word " * (1 + 37 * i % 300), "questions": QS[i % 3]},
                    **({"max_len": 40} if i % 5 == 0 else {}),
                    **({"min_confidence": 0.6} if i % 4 == 0 else {}))).encode()
    for i in range(24)
] + [b'{"state": "x", "questions": {"q": {"type": "nope"}}}', b'{"state": null, "questions": {}}']


def load(port, n, conns):
    lock = threading.Lock()
    left = [n]
    bad = []

    def client(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i = k
        while True:
            with lock:
                if left[0] == 0:
                    break
                left[0] -= 1
            c.request("POST", "/v1/systemone", body=BODIES[i % len(BODIES)])
            r = c.getresponse()
            r.read()
            if r.status >= 500:
                bad.append(r.status)
            i += 7
        c.close()
    ts = [threading.Thread(target=client, args=(k,)) for k in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return bad


with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "alloc.txt")
    env = {"LD_PRELOAD": PRELOAD, "LAYA_ALLOC_REPORT": report}
    with Server(SERVE, ["m=" + ENCODER], args=["--max-concurrent", "64"], env=env) as s:
        bad = load(s.port, 400, 64)  # warm-up: every batch size and body kind once
        s.signal(signal.SIGUSR1)
        time.sleep(0.2)
        bad += load(s.port, 600, 64)
        s.signal(signal.SIGUSR2)
        time.sleep(0.5)
        text = open(report).read().split("\n")
    n = int(text[0])
    who = text[1] if len(text) > 1 else ""
    print("heap calls on the inference path over 600 requests after warm-up: %d%s"
          % (n, " (first on thread %r)" % who if n else ""))
    if bad:
        print("FAIL: server errors %s" % bad[:10])
    sys.exit(1 if n or bad else 0)
