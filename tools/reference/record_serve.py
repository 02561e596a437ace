#!/usr/bin/env python3
"""Record upstream laya-serve (laya 0.4.15) answering a fixed list of requests on the tiny Laya
checkpoint, for tests/serve/test_serve_upstream.py, which replays them against our laya-serve.

    VENV/bin/python tools/reference/record_serve.py [OUT.json]
        (default tests/fixtures/serve/upstream.json.gz; VENV from tools/reference/setup-venv.sh, with
        uvicorn; ~1 min)

Upstream serves tests/fixtures/laya-tiny-modernbert under the router's names `english` and
`multilingual` (LAYA_EXTRA_MODELS re-points both; the hub is unreachable), default
`multilingual`, with an API key (so 401 is recorded too); ours serves the converted .laya under
the same names; the tournament cases run on a second server with LAYA_TOURNAMENT_GROUP=4.
Recorded per request: the status, the body, and the headers the contract names
(content-type, retry-after, allow, location, and whether Server-Timing / X-Inference-Time-Ms are
present with upstream's formats).
"""
import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CKPT = os.path.join(ROOT, "tests", "fixtures", "laya-tiny-modernbert")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "fixtures", "serve", "upstream.json.gz")
KEY = "k-serve"
AUTH = {"Authorization": "Bearer " + KEY}

Q = {"q": {"type": "noul", "instructions": "Is it urgent?"}}
CHOICE = {"type": "choice", "instructions": "Which team?",
          "criteria": {"billing": "money and invoices", "support": "things that broke", "sales": "buying"}}
SCORE = {"type": "score", "instructions": "How urgent?", "criteria": ["can wait", "today", "now"]}


def body(obj):
    return json.dumps(obj)


def requests():
    ticket = open(os.path.join(ROOT, "examples", "support-ticket.json")).read()
    r = []
    add = lambda name, method, path, b=None, headers=AUTH: r.append(
        {"name": name, "method": method, "path": path, "body": b, "headers": dict(headers)})
    add("ticket", "POST", "/v1/systemone", ticket)
    add("three types", "POST", "/v1/systemone", body({"state": "I was charged twice, please refund me",
                                                      "questions": {"team": CHOICE, "urgency": SCORE, "refund": Q["q"]}}))
    add("object state", "POST", "/v1/systemone", body({"state": {"temp_c": 81, "fan": "off", "alarms": ["hot"]},
                                                       "questions": {"team": CHOICE}}))
    add("german routes multilingual", "POST", "/v1/systemone",
        body({"state": "Die Rechnung wurde doppelt belastet.", "questions": Q}))
    add("explicit model", "POST", "/v1/systemone", body({"state": "hello", "questions": Q, "model": "english"}))
    add("alias model", "POST", "/v1/systemone", body({"state": "hello", "questions": Q, "model": "multi"}))
    add("jev-latest auto", "POST", "/v1/systemone", body({"state": "hello there", "questions": Q, "model": "jev-latest"}))
    add("unknown path model", "POST", "/v1/systemone", body({"state": "x", "questions": Q, "model": "org/repo"}))
    add("explicit lang", "POST", "/v1/systemone", body({"state": "hello", "questions": Q, "lang": "de"}))
    add("min_confidence", "POST", "/v1/systemone", body({"state": "hello", "questions": {"team": CHOICE}, "min_confidence": 0.9}))
    add("min_confidence map", "POST", "/v1/systemone",
        body({"state": "hello", "questions": {"team": CHOICE, "u": SCORE}, "min_confidence": {"choice:3-5": 0.2, "default": 0.99}}))
    add("max_len", "POST", "/v1/systemone", body({"state": "word " * 300, "questions": Q, "max_len": 64}))
    add("empty questions", "POST", "/v1/systemone", body({"state": "x", "questions": {}}))
    add("bad json", "POST", "/v1/systemone", "{not json")
    add("not an object", "POST", "/v1/systemone", "[1, 2]")
    add("no questions", "POST", "/v1/systemone", body({"state": "x"}))
    add("no state", "POST", "/v1/systemone", body({"questions": Q}))
    add("questions not object", "POST", "/v1/systemone", body({"state": "x", "questions": [1]}))
    add("65 questions", "POST", "/v1/systemone", body({"state": "x", "questions": {"q%d" % i: Q["q"] for i in range(65)}}))
    add("101 options", "POST", "/v1/systemone", body({"state": "x", "questions": {
        "c": {"type": "choice", "instructions": "pick", "criteria": ["o%d" % i for i in range(101)]}}}))
    add("33 levels", "POST", "/v1/systemone", body({"state": "x", "questions": {
        "s": {"type": "score", "instructions": "rate", "criteria": ["l%d" % i for i in range(33)]}}}))
    add("null level", "POST", "/v1/systemone", body({"state": "x", "questions": {
        "s": {"type": "score", "instructions": "rate", "criteria": ["a", None]}}}))
    add("513 options", "POST", "/v1/systemone", body({"state": "x", "questions": {
        "c%d" % k: {"type": "choice", "instructions": "pick", "criteria": ["o%d" % i for i in range(100)]} for k in range(6)}}))
    add("state too large", "POST", "/v1/systemone", body({"state": "x" * 50001, "questions": Q}))
    add("state too large object", "POST", "/v1/systemone", body({"state": {"b": "\"" * 30000}, "questions": Q}))
    add("hooks", "POST", "/v1/systemone", body({"state": "x", "questions": Q, "hooks": [1], "on_predict_end": 2}))
    add("lone surrogate", "POST", "/v1/systemone", '{"state": "\\ud800", "questions": {}}')
    add("max_len zero", "POST", "/v1/systemone", body({"state": "x", "questions": Q, "max_len": 0}))
    add("max_len float", "POST", "/v1/systemone", body({"state": "x", "questions": Q, "max_len": 5.0}))
    add("max_len over", "POST", "/v1/systemone", body({"state": "x", "questions": Q, "head_max_len": 9000}))
    add("lang not string", "POST", "/v1/systemone", body({"state": "x", "questions": Q, "lang": 5}))
    add("min_confidence 2", "POST", "/v1/systemone", body({"state": "x", "questions": Q, "min_confidence": 2}))
    add("min_confidence bad key", "POST", "/v1/systemone", body({"state": "x", "questions": Q, "min_confidence": {"x": 1}}))
    add("unknown type", "POST", "/v1/systemone", body({"state": "x", "questions": {"q": {"type": "box"}}}))
    add("no instructions", "POST", "/v1/systemone", body({"state": "x", "questions": {"q": {"type": "noul"}}}))
    add("unauthorized", "POST", "/v1/systemone", body({"state": "x", "questions": Q}), {})
    add("wrong key", "POST", "/v1/systemone", body({"state": "x", "questions": Q}), {"Authorization": "Bearer nope"})
    add("lowercase scheme", "POST", "/v1/systemone", body({"state": "x", "questions": Q}), {"Authorization": "bearer " + KEY})
    add("batch", "POST", "/v1/systemone/batch", body({"states": ["the printer is on fire", {"x": [1, 2]}, "Rechnung doppelt"],
                                                      "questions": {"team": CHOICE, "refund": Q["q"]}}))
    add("batch explicit model", "POST", "/v1/systemone/batch", body({"states": ["a", "b"], "questions": Q, "model": "english"}))
    add("batch no states", "POST", "/v1/systemone/batch", body({"state": "x", "questions": Q}))
    add("batch empty", "POST", "/v1/systemone/batch", body({"states": [], "questions": Q}))
    add("batch 65", "POST", "/v1/systemone/batch", body({"states": ["a"] * 65, "questions": Q}))
    add("batch null state", "POST", "/v1/systemone/batch", body({"states": ["a", None], "questions": Q}))
    add("batch diagnostics", "POST", "/v1/systemone/batch", body({"states": ["a"], "questions": Q, "diagnostics": {}}))
    add("batch_size 0", "POST", "/v1/systemone/batch", body({"states": ["a"], "questions": Q, "batch_size": 0}))
    add("sort_by_length", "POST", "/v1/systemone/batch", body({"states": ["a"], "questions": Q, "sort_by_length": 1}))
    add("health", "GET", "/health")
    add("health unauthorized", "GET", "/health", None, {})
    add("not found", "GET", "/nope")
    add("method not allowed", "GET", "/v1/systemone")
    add("post health", "POST", "/health", "{}")
    return r


def tournament_requests():
    """For a server with LAYA_TOURNAMENT_GROUP=4."""
    r = []
    add = lambda name, path, b: r.append({"name": name, "method": "POST", "path": path, "body": json.dumps(b),
                                          "headers": dict(AUTH)})
    big = {"type": "choice", "instructions": "Which product?", "criteria": ["p%d" % i for i in range(150)]}
    dict12 = {"type": "choice", "instructions": "Which team?",
              "criteria": {"t%d" % i: "team number %d" % i for i in range(12)}}
    add("tournament 150 labels", "/v1/systemone", {"state": "I need product p17", "questions": {"p": big, "u": SCORE}})
    add("tournament dict 12", "/v1/systemone", {"state": "route me", "questions": {"t": dict12, "r": Q["q"]}})
    add("tournament ordered one pass", "/v1/systemone",
        {"state": "x", "questions": {"t": dict(dict12, option_order=list(range(12)))}})
    add("tournament ordered over 100", "/v1/systemone",
        {"state": "x", "questions": {"p": dict(big, option_order=list(range(150)))}})
    add("tournament non-string over 100", "/v1/systemone",
        {"state": "x", "questions": {"p": dict(big, criteria=list(range(150)))}})
    add("tournament 256 labels", "/v1/systemone",
        {"state": "x", "questions": {"p": dict(big, criteria=["p%d" % i for i in range(256)])}})
    add("tournament small", "/v1/systemone", {"state": "x", "questions": {"t": CHOICE}})
    add("tournament batch", "/v1/systemone/batch", {"states": ["p3 please", "p99 please"], "questions": {"p": big}})
    return r


def serve_and_record(reqs, extra_env):
    port = free_port()
    env = dict(os.environ, LAYA_PORT=str(port), LAYA_HOST="127.0.0.1", LAYA_API_KEY=KEY,
               LAYA_EXTRA_MODELS=json.dumps({"english": CKPT, "multilingual": CKPT}),
               LAYA_MODELS="english,multilingual", LAYA_DEFAULT_MODEL="multilingual", LAYA_DEVICE="cpu")
    env.update(extra_env)
    exe = os.path.join(os.path.dirname(sys.executable), "laya-serve")
    proc = subprocess.Popen([exe], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    out = []
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1).read()
                break
            except Exception:
                time.sleep(0.2)
        for req in reqs:
            data = req["body"].encode() if req["body"] is not None else None
            rq = urllib.request.Request("http://127.0.0.1:%d%s" % (port, req["path"]), data=data,
                                        method=req["method"], headers=req["headers"])
            try:
                resp = urllib.request.urlopen(rq, timeout=120)
                status, headers, b = resp.status, resp.headers, resp.read()
            except urllib.error.HTTPError as e:
                status, headers, b = e.code, e.headers, e.read()
            rec = dict(req)
            rec["env"] = extra_env
            rec["status"] = status
            rec["response"] = b.decode("utf-8")
            rec["headers_out"] = {k: headers[k] for k in INTERESTING if headers.get(k) is not None}
            rec["timing"] = headers.get("server-timing") is not None and headers.get("x-inference-time-ms") is not None
            out.append(rec)
            print("%-32s %d %s" % (req["name"], status, rec["response"][:80]))
    finally:
        proc.terminate()
        proc.wait(30)
    return out


INTERESTING = ("content-type", "retry-after", "allow", "www-authenticate")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def main():
    out = serve_and_record(requests(), {})
    out += serve_and_record(tournament_requests(), {"LAYA_TOURNAMENT_GROUP": "4"})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with (gzip.open(OUT, "wt", encoding="utf-8") if OUT.endswith(".gz") else open(OUT, "w")) as f:
        json.dump({"laya": "0.4.15", "checkpoint": "tests/fixtures/laya-tiny-modernbert", "api_key": KEY,
                   "requests": out}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
