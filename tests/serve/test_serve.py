#!/usr/bin/env python3
"""laya-serve end to end on loopback: upstream laya-serve's routes, refusals and headers, the
answers against laya-run decide's, batches, zstd bodies, auth, admission, body limits and
deadlines, decoder decisions with server-sent events, strict mode, metrics, hot reload with a bad
file, and SIGTERM.

    test_serve.py LAYA_SERVE LAYA_RUN ENCODER.laya DECODER.gguf SOURCE_DIR

Every server runs on 127.0.0.1 with a free port and is stopped at the end; every wait is bounded.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from serve_util import Server, parse_raw_response, zstd_compress  # noqa: E402

SERVE, RUN, ENCODER, DECODER, SRC = sys.argv[1:6]
EXAMPLES = os.path.join(SRC, "examples")
failures = []
checks = [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def example(name):
    with open(os.path.join(EXAMPLES, name), "rb") as f:
        return f.read()


def laya_run_decide(model, body):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        f.write(body)
        f.flush()
        p = subprocess.run([RUN, "decide", "--model", model, "--request", f.name], capture_output=True)
    return p.returncode, p.stdout.decode()


def detail(body):
    return json.loads(body)["detail"]


def jev(answer):
    """confidence.jev_confidence (laya 0.4.15), for the check of x_jev_confidence."""
    p = answer["probabilities"]
    vals = [p[k] for k in sorted(p, key=int)] if answer["type"] == "score" else list(p.values())
    n = len(vals)
    if n == 1:
        return 1.0
    t = sum(vals)
    vals = [v / t for v in vals] if t else [1.0 / n] * n
    if answer["type"] == "choice":
        return (max(vals) - 1.0 / n) / (1.0 - 1.0 / n)
    mode = max(range(n), key=vals.__getitem__)
    spread = sum(v * abs(i - mode) for i, v in enumerate(vals))
    c = (n - 1) / 2
    return max(0.0, 1.0 - spread / (sum(abs(i - c) for i in range(n)) / n))


QUESTIONS = {"q": {"type": "noul", "instructions": "Is it urgent?"}}


def main_server():
    env = {"LAYA_DEFAULT_MODEL": "multilingual"}
    with Server(SERVE, ["english=" + ENCODER, "multilingual=" + ENCODER, "chat=" + DECODER], env=env) as s:
        ticket = example("support-ticket.json")
        rc, sdk = laya_run_decide(ENCODER, ticket)
        check(rc == 0, "laya-run decide on the ticket")
        st, h, body = s.post("/v1/systemone", ticket, {"x-typesafe-request-id": "abc-1"})
        check(st == 200, "systemone: %d %s" % (st, body[:200]))
        got = json.loads(body)
        # Compact JSON, raw UTF-8, keys in the SDK's order, then routing.
        check(body.startswith(b'{"model":"laya-rl-agent","answers":{'), "compact JSON: %r" % body[:60])
        check(list(got) == ["model", "answers", "usage", "routing"], "top-level keys %s" % list(got))
        want = json.loads(sdk)
        for qid, a in got["answers"].items():
            x = a.pop("x_jev_confidence", None)
            if a["type"] in ("choice", "score"):
                check(x is not None and abs(x - round(jev(a), 4)) < 1e-12,
                      "x_jev_confidence of %s: %s vs %s" % (qid, x, jev(a)))
                check(list(json.loads(body)["answers"][qid])[-1] == "x_jev_confidence", "x_jev last")
            else:
                check(x is None, "no x_jev_confidence on noul")
        check(got["answers"] == want["answers"] and got["usage"] == want["usage"],
              "the answer is laya-run decide's")
        check(got["routing"]["model"] == "english" and got["routing"]["detection"]["language"] == "en",
              "routed to english: %s" % got["routing"])
        check(re.fullmatch(r"inference;dur=\d+\.\d\d", h.get("server-timing", "")) is not None,
              "Server-Timing %r" % h.get("server-timing"))
        check(re.fullmatch(r"\d+\.\d\d", h.get("x-inference-time-ms", "")) is not None, "X-Inference-Time-Ms")
        check(h.get("x-typesafe-request-id") == "abc-1", "request id echoed")
        check(h.get("content-type") == "application/json", "content-type")
        st, h, _ = s.post("/v1/systemone", ticket)
        check(h.get("x-typesafe-request-id", "").startswith("req_"), "request id made")

        # Routing by name and the router's rules; an unknown path-like model.
        body = {"state": "Die Rechnung wurde doppelt belastet.", "questions": QUESTIONS}
        st, _, b = s.post("/v1/systemone", body)
        check(st == 200 and json.loads(b)["routing"]["model"] == "multilingual", "German -> multilingual")
        st, _, b = s.post("/v1/systemone", dict(body, model="english"))
        check(st == 200 and json.loads(b)["routing"]["reason"] == "explicit model='english'",
              "explicit model: %s" % b[:300])
        st, _, b = s.post("/v1/systemone", dict(body, model="jev-latest"))
        check(st == 200 and json.loads(b)["routing"]["model"] == "multilingual", "jev-latest auto-routes")
        st, _, b = s.post("/v1/systemone", dict(body, model="org/repo"))
        check(st == 422 and detail(b).startswith("unknown model 'org/repo'; choose one of "), "unknown model %s" % b)

        # Refusals with upstream's status and message.
        cases = [
            (b"{not json", 400, "request body must be valid JSON"),
            (b"[1, 2]", 400, "request body must be an object with a 'questions' field"),
            (b'{"questions": {}}', 400, "'state' is required"),
            (json.dumps({"state": "x", "questions": {"q%d" % i: QUESTIONS["q"] for i in range(65)}}).encode(),
             413, "too many questions (65 > 64)"),
            (json.dumps({"state": "x", "questions": QUESTIONS, "hooks": [1]}).encode(), 422,
             "hooks run inside the server process and cannot be sent to this endpoint; install them "
             "where laya-serve runs, or drop them"),
            (json.dumps({"state": "x", "questions": QUESTIONS, "max_len": 0}).encode(), 422,
             "max_len must be a positive integer"),
            (json.dumps({"state": "x" * 50001, "questions": QUESTIONS}).encode(), 413,
             "state too large (50001 > 50000 chars)"),
            (b'{"state": "\\ud800", "questions": {}}', 400,
             "request body contains an unpaired surrogate escape; those cannot be encoded as UTF-8"),
            (b"[" * 100000, 400, "request body must be valid JSON"),
            (b'{"state": "\xff\xfe", "questions": {}}', 400, "request body must be valid JSON"),
        ]
        for raw, status, msg in cases:
            st, _, b = s.post("/v1/systemone", raw)
            check(st == status and detail(b) == msg, "%r...: %d %s (want %d %s)" % (raw[:30], st, b[:200], status, msg))

        # The batch route: every result as the state alone; total usage.
        states = ["the printer is on fire", {"temp_c": 81, "fan": "off"}, ["login failed", "twice"]]
        st, _, b = s.post("/v1/systemone/batch", {"states": states, "questions": QUESTIONS, "model": "english"})
        check(st == 200, "batch: %d %s" % (st, b[:200]))
        res = json.loads(b)
        check(list(res) == ["results", "total_usage"], "batch keys")
        total = 0
        for i, state in enumerate(states):
            st1, _, b1 = s.post("/v1/systemone", {"state": state, "questions": QUESTIONS, "model": "english"})
            one = json.loads(b1)
            check(res["results"][i] == one, "batch result %d equals the state alone" % i)
            total += one["usage"]["input_tokens"]
        check(res["total_usage"] == {"input_tokens": total, "output_tokens": 0}, "total_usage")
        st, _, b = s.post("/v1/systemone/batch", {"state": "x", "questions": QUESTIONS})
        check(st == 400 and detail(b) == "request body must be an object with 'states' and 'questions' fields", "batch shape")
        st, _, b = s.post("/v1/systemone/batch", {"states": ["a"] * 65, "questions": QUESTIONS})
        check(st == 413 and detail(b) == "too many states in batch (65 > 64)", "65 states: %s" % b)
        st, _, b = s.post("/v1/systemone/batch", {"states": ["a"], "questions": QUESTIONS, "diagnostics": {}})
        check(st == 422 and detail(b).startswith("diagnostics is filled in place"), "diagnostics")

        # Paths and methods as FastAPI answers them.
        st, _, b = s.request("GET", "/nope")
        check(st == 404 and b == b'{"detail":"Not Found"}', "404")
        st, h, b = s.request("GET", "/v1/systemone")
        check(st == 405 and b == b'{"detail":"Method Not Allowed"}' and h.get("allow") == "POST", "405")
        st, h, _ = s.request("POST", "/v1/systemone/", b"{}")
        check(st == 307 and h.get("location", "").endswith("/v1/systemone"), "307 %d %s" % (st, h))
        st, _, b = s.request("GET", "/health")
        hb = json.loads(b)
        check(st == 200 and hb["status"] == "ok" and hb["loaded"] == ["english", "multilingual", "chat"], "health %s" % b)
        st, _, b = s.request("GET", "/ready")
        check(st == 200, "ready")
        st, _, b = s.request("GET", "/v1/models")
        names = [m["name"] for m in json.loads(b)["models"]]
        check(st == 200 and names == ["english", "multilingual", "chat"], "models %s" % b)
        check(all(re.fullmatch(r"\d{4}-\d\d-\d\d", m["release_date"]) for m in json.loads(b)["models"]), "dates")

        # zstd bodies: the same answer; a bomb; garbage.
        st, _, b = s.post("/v1/systemone", zstd_compress(ticket), {"Content-Encoding": "zstd"})
        st2, _, b2 = s.post("/v1/systemone", ticket)
        strip = lambda x: {k: v for k, v in json.loads(x).items()}
        check(st == 200 and strip(b) == strip(b2), "zstd body answers as plain")
        bomb = zstd_compress(b'{"state": "' + b"a" * (3 << 20) + b'", "questions": {}}', 19)
        check(len(bomb) < 200000, "the bomb is small (%d)" % len(bomb))
        st, _, b = s.post("/v1/systemone", bomb, {"Content-Encoding": "zstd"})
        check(st == 413 and detail(b) == "request body too large", "zstd bomb: %d %s" % (st, b))
        st, _, b = s.post("/v1/systemone", b"\x28\xb5\x2f\xfd garbage", {"Content-Encoding": "zstd"})
        check(st == 400, "bad zstd: %d" % st)

        # Body limits: the declared length, and a chunked body that grows past 2 MiB.
        out = s.raw(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n{")
        st, h, b = parse_raw_response(out)
        check(st == 413 and json.loads(b)["detail"] == "request body too large" and h.get("connection") == "close",
              "413 by Content-Length: %r" % out[:200])

        def chunks(sock):
            try:
                for _ in range(40):
                    sock.sendall(b"10000\r\n" + b" " * 0x10000 + b"\r\n")
            except OSError:
                pass
        out = s.raw(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", then=chunks)
        st, _, b = parse_raw_response(out)
        check(st == 413, "413 chunked: %r" % out[:200])
        # A client that goes away mid-request does not disturb the next one.
        for _ in range(5):
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(ticket) + ticket)
            c.close()
        st, _, _ = s.post("/v1/systemone", ticket)
        check(st == 200, "after disconnects")

        # Decoder decisions, plain and streamed as server-sent events.
        alarm = json.loads(example("industrial-alarm.json"))
        st, _, b = s.post("/v1/decide", alarm)
        check(st == 200 and "decision" in json.loads(b), "decide: %d %s" % (st, b[:200]))
        small = {"state": "the tank is full", "schema": {"type": "object", "properties": {
            "open_valve": {"type": "boolean"}}, "required": ["open_valve"]}, "stream": True}
        st, h, b = s.post("/v1/decide", small)
        check(st == 200 and h.get("content-type") == "text/event-stream", "SSE: %d %s" % (st, h))
        events = [e for e in b.decode().split("\n\n") if e]
        tokens = "".join(json.loads(e.split("data: ", 1)[1])["text"] for e in events if e.startswith("event: token"))
        last = events[-1]
        check(last.startswith("event: decision"), "last event is the decision: %r" % last[:100])
        dec = json.loads(last.split("data: ", 1)[1])
        if not dec.get("fallback"):
            check(json.loads(tokens) == dec["decision"], "streamed tokens are the decision: %r" % tokens)
        st, _, b = s.post("/v1/decide", {"state": "x", "schema": {"type": "object"}, "model": "english"})
        check(st == 422, "decide on an encoder: %d %s" % (st, b))
        # questions on a decoder through /v1/systemone
        st, _, b = s.post("/v1/systemone", {"state": "the tank is full", "questions": QUESTIONS, "model": "chat"})
        check(st == 200 and json.loads(b)["answers"]["q"]["type"] == "noul", "decoder questions: %s" % b[:200])

        # Metrics in the text format.
        st, h, b = s.request("GET", "/metrics")
        text = b.decode()
        check(st == 200 and h.get("content-type", "").startswith("text/plain; version=0.0.4"), "metrics type")
        check(re.search(r'^laya_serve_requests_total\{route="systemone",status="200"\} \d+$', text, re.M)
              is not None, "request counter")
        check("laya_serve_batch_size_bucket" in text and "laya_serve_queue_wait_seconds_count" in text, "histograms")

        # Hot reload: a corrupt file leaves the old model serving; a good one swaps in.
        with tempfile.NamedTemporaryFile(suffix=".laya") as bad:
            with open(ENCODER, "rb") as f:
                data = bytearray(f.read())
            data[200:400] = b"\0" * 200
            bad.write(bytes(data[: len(data) // 2]))
            bad.flush()
            st, _, b = s.post("/admin/reload", {"model": "english", "path": bad.name})
            check(st == 422 and "the old model keeps serving" in detail(b), "bad reload: %d %s" % (st, b))
        st, _, b = s.post("/v1/systemone", dict(body, model="english"))
        check(st == 200, "still serving after a bad reload")
        st, _, b = s.post("/admin/reload", {"model": "english"})
        check(st == 200 and json.loads(b)["reloaded"][0]["model"] == "english", "reload: %s" % b)
        st, _, b = s.post("/v1/systemone", ticket)
        check(st == 200 and json.loads(b)["answers"] == json.loads(b2)["answers"], "same answers after reload")
        s.signal(signal.SIGHUP)
        time.sleep(1.0)
        st, _, _ = s.post("/v1/systemone", ticket)
        check(st == 200, "serving after SIGHUP")
        rc = s.stop()
        check(rc == 0, "SIGTERM exits 0 (%s)" % rc)
        check("reloaded english" in s.stderr, "SIGHUP reloaded: %s" % s.stderr[-500:])


def auth_and_admission():
    env = {"LAYA_API_KEY": "s3cret", "LAYA_MAX_CONCURRENT": "1", "LAYA_BODY_READ_TIMEOUT": "1"}
    with Server(SERVE, [ENCODER], env=env) as s:
        ticket = example("support-ticket.json")
        good = {"Authorization": "Bearer s3cret"}
        for h in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "bearer s3cret"}):
            st, hh, b = s.post("/v1/systemone", ticket, h)
            check(st == 401 and b == b'{"detail":"invalid or missing bearer token"}' and "www-authenticate" not in hh,
                  "401 with %s: %d %s" % (h, st, b))
        st, _, b = s.post("/v1/systemone", ticket, good)
        check(st == 200, "authorized")
        st, _, b = s.request("GET", "/health")
        check(b == b'{"status":"ok"}', "health without auth says only ok")
        st, _, b = s.request("GET", "/v1/models")
        check(st == 401, "models need auth")
        # 401 before the body is read, even with an absurd length.
        out = s.raw(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n")
        check(parse_raw_response(out)[0] == 401, "401 before the body")
        # One slot: a stalled body holds it; the next request gets 503 + Retry-After: 1; the stalled
        # one gets 408 after LAYA_BODY_READ_TIMEOUT (1 s).
        stalled = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        stalled.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n"
                        b"Content-Length: 100\r\n\r\n{\"state\"")
        time.sleep(0.2)
        t0 = time.time()
        st, h, b = s.post("/v1/systemone", ticket, good)
        check(st == 503 and h.get("retry-after") == "1" and detail(b) == "server busy, try again later",
              "503: %d %s %s" % (st, h, b))
        out = b""
        while True:
            chunk = stalled.recv(65536)
            if not chunk:
                break
            out += chunk
        waited = time.time() - t0
        st, h, b = parse_raw_response(out)
        check(st == 408 and json.loads(b)["detail"] == "request body was not received in time", "408: %r" % out[:200])
        check(0.5 < waited < 3, "408 after the timeout (%.2f s)" % waited)
        # A sender that trickles a byte at a time is timed over the whole body.
        def trickle(sock):
            try:
                for _ in range(30):
                    sock.sendall(b" ")
                    time.sleep(0.15)
            except OSError:
                pass
        t0 = time.time()
        out = s.raw(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n"
                    b"Content-Length: 100\r\n\r\n", then=trickle)
        check(parse_raw_response(out)[0] == 408 and time.time() - t0 < 6, "trickle: 408")
        st, _, _ = s.post("/v1/systemone", ticket, good)
        check(st == 200, "the slot came back")


def strict_mode():
    with Server(SERVE, [ENCODER], env={"LAYA_JEV_STRICT": "1"}) as s:
        st, _, b = s.post("/v1/systemone", example("support-ticket.json"))
        r = json.loads(b)
        check(st == 200 and list(r) == ["model", "answers", "usage"], "strict top level %s" % list(r))
        check(list(r["usage"]) == ["input_tokens", "output_tokens"], "strict usage")
        keys = {q: list(a) for q, a in r["answers"].items()}
        check(keys == {"department": ["type", "choice", "confidence", "probabilities"],
                       "urgency": ["type", "score", "confidence", "probabilities", "legend"],
                       "refund_requested": ["type", "noul"]}, "strict answers %s" % keys)


def ordering_key():
    """Requests with one X-Laya-Sequence value never share a batch, and run in arrival order,
    while unkeyed load keeps the queue full (so batches form)."""
    with Server(SERVE, [ENCODER], args=["--batch-window-ms", "20", "--max-concurrent", "64"]) as s:
        stop = time.time() + 1.5
        sizes = []
        def load():
            while time.time() < stop:
                st, hh, _ = s.post("/v1/systemone", {"state": "load", "questions": QUESTIONS})
                sizes.append(int(hh.get("x-laya-batch", "0/0").split("/")[1]))
        results = {}
        def send(i, key):
            st, hh, b = s.post("/v1/systemone", {"state": "step %d" % i, "questions": QUESTIONS},
                               {"X-Laya-Sequence": key})
            results[i] = (st, key, hh.get("x-laya-batch"))
        threads = [threading.Thread(target=load) for _ in range(16)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        for i in range(16):
            t = threading.Thread(target=send, args=(i, "wf-a" if i % 2 == 0 else "wf-b"))
            t.start()
            threads.append(t)
            time.sleep(0.015)
        for t in threads:
            t.join(60)
        check(len(results) == 16 and all(r[0] == 200 for r in results.values()), "ordering: all 200")
        for key in ("wf-a", "wf-b"):
            batches = [int(results[i][2].split("/")[0]) for i in sorted(results) if results[i][1] == key]
            check(len(set(batches)) == len(batches), "%s never co-batched: %s" % (key, batches))
            check(batches == sorted(batches), "%s in arrival order: %s" % (key, batches))
        check(max(sizes) > 1, "requests were batched: %s" % sizes[:50])


def bad_start():
    p = subprocess.run([SERVE, "--model", "/nonexistent.laya", "--port", "0"], capture_output=True, timeout=60)
    check(p.returncode == 1 and b"/nonexistent.laya" in p.stderr, "a missing model exits 1: %s" % p.stderr)
    p = subprocess.run([SERVE, "--port", "0"], capture_output=True, timeout=60)
    check(p.returncode == 2, "no model exits 2")
    p = subprocess.run([SERVE, "--model", ENCODER], capture_output=True, timeout=60,
                       env=dict(os.environ, LAYA_PORT="x"))
    check(p.returncode == 1 and b"invalid LAYA_PORT 'x': must be an integer 1-65535" in p.stderr, "LAYA_PORT")


for test in (main_server, auth_and_admission, strict_mode, ordering_key, bad_start):
    t0 = time.time()
    test()
    print("%s: %.1f s" % (test.__name__, time.time() - t0), flush=True)
if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: %d checks" % checks[0])
