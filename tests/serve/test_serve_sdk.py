#!/usr/bin/env python3
"""laya-serve with the official client: typesafe-sdk 0.7.5 (PyPI, with its zstd extra, so bodies
of 1 KiB or more go compressed) against the server on loopback. Every response must parse into
the client's own models: model listing, every answer type, many concurrent calls through the
async client (batched by the server), 401 / 413 / 422 as the client's errors, 503 and the
client's retry after Retry-After; and /metrics through prometheus_client's parser.

    LAYA_TEST_PYTHON=VENV/bin/python test_serve_sdk.py LAYA_SERVE ENCODER.laya
Run by meson with the interpreter of tools/setup-test-venv.sh; without LAYA_TEST_PYTHON the test
reports itself skipped (exit 77) and tools/test-all.sh, which sets it, fails if it is missing.
"""
import asyncio
import os
import socket
import sys
import threading
import time

if os.environ.get("LAYA_TEST_PYTHON") and not os.environ.get("LAYA_TEST_PYTHON_ACTIVE"):
    os.environ["LAYA_TEST_PYTHON_ACTIVE"] = "1"
    os.execv(os.environ["LAYA_TEST_PYTHON"], [os.environ["LAYA_TEST_PYTHON"]] + sys.argv)
try:
    import typesafe_sdk
    from prometheus_client.parser import text_string_to_metric_families
    from typesafe_sdk import (AsyncTypeSafeClient, Choice, Noul, RetryPolicy, Score, TypeSafeAPIError,
                              TypeSafeAuthenticationError, TypeSafeClient, TypeSafeInternalServerError,
                              TypeSafeUnprocessableEntityError)
except ImportError as e:
    if os.environ.get("LAYA_TEST_PYTHON"):
        raise
    print("SKIPPED: typesafe-sdk / prometheus_client not importable (%s); set LAYA_TEST_PYTHON to the "
          "python of tools/setup-test-venv.sh" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
from serve_util import Server  # noqa: E402

SERVE, ENCODER = sys.argv[1:3]
failures = []
checks = [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


QUESTIONS = {
    "department": Choice(instructions="Which team should take this ticket?",
                         criteria={"billing": "money, invoices, refunds", "support": "broken things",
                                   "sales": "buying more"}),
    "urgency": Score(instructions="How urgent is it?", criteria=["can wait", "today", "now"]),
    "refund": Noul(instructions="Does the customer ask for a refund?"),
}
LONG_STATE = {"ticket": "I was charged twice for my subscription this month. " * 40, "plan": "pro"}

with Server(SERVE, ["support=" + ENCODER], env={"LAYA_API_KEY": "k-123", "LAYA_MAX_CONCURRENT": "40"}) as s:
    base = "http://127.0.0.1:%d" % s.port
    c = TypeSafeClient(api_key="k-123", base_url=base)
    check(typesafe_sdk.__version__ == "0.7.5", "typesafe-sdk 0.7.5")
    models = c.models.list()
    check([m.name for m in models.models] == ["support"], "models.list: %s" % models)
    # Every answer type; a compressed body (the state is over 1 KiB) and a plain one.
    for state in (LONG_STATE, "short text"):
        r = c.system_one(state=state, questions=QUESTIONS)
        check(r.model == "laya-rl-agent", "model")
        check(r.answers["department"].choice in ("billing", "support", "sales"), "choice answer")
        check(abs(sum(r.answers["department"].probabilities.values()) - 1) < 1e-3, "choice probabilities")
        check(0 <= r.answers["urgency"].score <= 2 and set(r.answers["urgency"].legend) == {0, 1, 2}, "score answer")
        check(0 <= r.answers["refund"].noul <= 1, "noul answer")
        check(isinstance(r.usage.input_tokens, int) and r.usage.input_tokens > 0, "usage")
        check(r.request_id.startswith("req_"), "request id")
    st, _, b = s.request("GET", "/metrics")
    fams = {f.name: f for f in text_string_to_metric_families(b.decode())}
    check("laya_serve_requests" in fams and "laya_serve_batch_size" in fams, "metrics parse: %s" % list(fams))
    # Many calls at once through the async client: every one parses; the server batches them.
    async def many():
        ac = AsyncTypeSafeClient(api_key="k-123", base_url=base)
        states = ["ticket %d: the app crashes when I log in" % i for i in range(32)]
        rs = await asyncio.gather(*[ac.system_one(state=st, questions=QUESTIONS) for st in states])
        await ac.aclose()
        return rs
    rs = asyncio.run(many())
    check(len(rs) == 32 and all(r.answers["refund"].noul >= 0 for r in rs), "32 concurrent calls")
    st, _, b = s.request("GET", "/metrics")
    fams = {f.name: f for f in text_string_to_metric_families(b.decode())}
    batched = [x for x in fams["laya_serve_batch_size"].samples
               if x.name.endswith("_bucket") and x.labels["le"] == "1.0"]
    count = [x for x in fams["laya_serve_batch_size"].samples if x.name.endswith("_count")][0].value
    check(count > batched[0].value, "some batches held more than one request")
    # Refusals as the client's errors.
    bad = TypeSafeClient(api_key="wrong", base_url=base)
    try:
        bad.system_one(state="x", questions=QUESTIONS)
        check(False, "401 raised")
    except TypeSafeAuthenticationError as e:
        check(e.status == 401 and "invalid or missing bearer token" in str(e), "401: %s" % e)
    try:
        c.system_one(state="x", questions=QUESTIONS, extra_body={"max_len": 0})
        check(False, "422 raised")
    except TypeSafeUnprocessableEntityError as e:
        check(e.status == 422 and "max_len must be a positive integer" in str(e), "422: %s" % e)
    try:
        c.system_one(state="x" * (3 << 20), questions=QUESTIONS)
        check(False, "413 raised")
    except TypeSafeAPIError as e:
        check(e.status == 413 and "request body too large" in str(e), "413: %s" % e)

with Server(SERVE, ["support=" + ENCODER], env={"LAYA_MAX_CONCURRENT": "1", "LAYA_BODY_READ_TIMEOUT": "30"}) as s:
    base = "http://127.0.0.1:%d" % s.port
    # The only slot held by a stalled body: the client gets 503, waits Retry-After (1 s), retries;
    # the slot comes back within the retries, so the call succeeds.
    hold = socket.create_connection(("127.0.0.1", s.port))
    hold.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
    time.sleep(0.2)
    threading.Timer(1.5, hold.close).start()
    c = TypeSafeClient(api_key="k", base_url=base)
    t0 = time.time()
    r = c.system_one(state="the pump is loud", questions={"refund": QUESTIONS["refund"]})
    waited = time.time() - t0
    check(0 <= r.answers["refund"].noul <= 1 and 0.9 < waited < 10, "retried after 503 (%.1f s)" % waited)
    st, _, b = s.request("GET", "/metrics")
    fams = {f.name: f for f in text_string_to_metric_families(b.decode())}
    check(fams["laya_serve_admission_rejections"].samples[0].value >= 1, "a 503 was counted")
    # Still full after every retry: the client's error after 3 attempts.
    hold = socket.create_connection(("127.0.0.1", s.port))
    hold.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
    time.sleep(0.2)
    try:
        c.system_one(state="x", questions={"refund": QUESTIONS["refund"]},
                     retry=RetryPolicy(max_retries=1))
        check(False, "503 raised")
    except TypeSafeInternalServerError as e:
        check(e.status == 503 and e.headers.get("retry-after") == "1", "503: %s" % e)
    hold.close()

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: %d checks" % checks[0])
