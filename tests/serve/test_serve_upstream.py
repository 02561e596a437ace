#!/usr/bin/env python3
"""Our laya-serve against upstream laya-serve's recorded answers (tests/fixtures/serve/upstream.json.gz,
made by tools/reference/record_serve.py with laya 0.4.15 on the tiny Laya checkpoint): every
request replayed, and per request the status, the content type, Retry-After / Allow, the timing
headers' presence, and the body: the same keys in the same order, the same strings, numbers within
2e-4 (our fp32 network against upstream's torch forward, both rounded to 4 places; 1e-3 for
x_jev_confidence, computed from those rounded probabilities). Tournament cases (LAYA_TOURNAMENT_GROUP=4)
run on a second server. Allowed to
differ: routing.repo (a checkpoint directory there, the .laya file here) and /health's per-model
details (revisions, devices).

    test_serve_upstream.py LAYA_SERVE ENCODER.laya RECORDING.json
"""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from serve_util import Server  # noqa: E402

SERVE, ENCODER, RECORDING = sys.argv[1:4]
TOL = 2e-4


def diff(a, b, path="$"):
    """The first difference between upstream's value `a` and ours `b`, or None."""
    if isinstance(a, bool) or isinstance(b, bool):
        return None if a is b else "%s: %r vs %r" % (path, a, b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) != isinstance(b, int):
            return "%s: %r vs %r (int / float)" % (path, a, b)
        # x_jev_confidence is computed from the 4-decimal probabilities: a last-digit difference
        # in them moves it by up to n / (n - 1) / uniform spread of that (1.5x per probability
        # for a 3-level score), so its bound is 1e-3.
        tol = 1e-3 if path.endswith(".x_jev_confidence") else TOL
        return None if abs(a - b) <= tol else "%s: %r vs %r" % (path, a, b)
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        if list(a) != list(b):
            return "%s: keys %s vs %s" % (path, list(a), list(b))
        for k in a:
            if path == "$.routing" and k == "repo":
                continue
            d = diff(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d vs %d items" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, "%s[%d]" % (path, i) if not path.startswith("$.results") else "$")
            if d:
                return d
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)


rec = json.load(gzip.open(RECORDING) if RECORDING.endswith(".gz") else open(RECORDING))
failures = []
configs = []
for r in rec["requests"]:
    if r.get("env", {}) not in configs:
        configs.append(r.get("env", {}))
for extra in configs:
    env = {"LAYA_API_KEY": rec["api_key"], "LAYA_DEFAULT_MODEL": "multilingual"}
    env.update(extra)
    with Server(SERVE, ["english=" + ENCODER, "multilingual=" + ENCODER], env=env) as s:
        for r in rec["requests"]:
            if r.get("env", {}) != extra:
                continue
            st, h, body = s.request(r["method"], r["path"], r["body"], r["headers"])
            problems = []
            if st != r["status"]:
                problems.append("status %d vs %d" % (r["status"], st))
            for k, v in r["headers_out"].items():
                if k == "content-type" and v.startswith("application/json") and \
                        h.get(k, "").startswith("application/json"):
                    continue
                if h.get(k) != v:
                    problems.append("header %s: %r vs %r" % (k, v, h.get(k)))
            if r["timing"] and not ("server-timing" in h and "x-inference-time-ms" in h):
                problems.append("timing headers missing")
            want = json.loads(r["response"])
            got = json.loads(body)
            if r["name"] == "health":
                if got.get("status") != "ok" or sorted(got.get("loaded", [])) != sorted(want["loaded"]) or \
                        set(got) != set(want):
                    problems.append("health %s vs %s" % (got, want))
            elif r["path"].endswith("/batch") and st == 200:
                for i, (a, b) in enumerate(zip(want["results"], got["results"])):
                    d = diff(a, b)
                    if d:
                        problems.append("result %d: %s" % (i, d))
                if len(want["results"]) != len(got["results"]) or want["total_usage"] != got["total_usage"]:
                    problems.append("results / total_usage: %s vs %s" % (want["total_usage"], got["total_usage"]))
            else:
                d = diff(want, got)
                if d:
                    problems.append(d)
            if problems:
                failures.append("%s: %s" % (r["name"], "; ".join(problems)))
                print(("FAIL %s: %s" % (r["name"], "; ".join(problems)))[:600], flush=True)
print("%d requests replayed, %d differ" % (len(rec["requests"]), len(failures)))
sys.exit(1 if failures else 0)
