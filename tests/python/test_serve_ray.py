#!/usr/bin/env python3
"""laya_runtime.serve's request handling without a Ray cluster: its Handler (what each replica
runs) called directly, with a stand-in for @serve.batch that gathers concurrent calls the same
way (up to 16, 10 ms) into one decide_bodies.

  - upstream laya-serve's recorded requests (tests/fixtures/serve/upstream.json.gz; those of the
    default configuration): status, content type, Allow, the timing headers, and the body as
    upstream's within 2e-4, minus what the C API does not give (`routing`, `x_jev_confidence`);
  - 24 different requests at once: batches of more than one, every answer equal to the request
    answered alone;
  - zstd bodies (one frame, two frames, a bomb, garbage), strict mode, request ids, 307.

    test_serve_ray.py PYTHON_DIR LIBLAYA ENCODER.laya RECORDING      (meson; exit 77: skipped)
    LAYA_TEST_ARGS="PYTHON_DIR LIBLAYA ENCODER RECORDING" pytest tests/python/test_serve_ray.py
Ray comes from LAYA_TEST_PYTHON's venv (tools/setup-test-venv.sh); without it, skipped.
"""
import asyncio
import gzip
import json
import os
import sys

if __name__ == "__main__" and os.environ.get("LAYA_TEST_PYTHON") and \
        not os.environ.get("LAYA_TEST_PYTHON_ACTIVE"):
    os.environ["LAYA_TEST_PYTHON_ACTIVE"] = "1"
    os.execv(os.environ["LAYA_TEST_PYTHON"], [os.environ["LAYA_TEST_PYTHON"]] + sys.argv)

ARGS = sys.argv[1:5] if __name__ == "__main__" else os.environ.get("LAYA_TEST_ARGS", "").split()
PYTHON_DIR, LIBLAYA, ENCODER, RECORDING = (ARGS + ["-"] * 4)[:4]
if LIBLAYA != "-":
    os.environ["LAYA_LIBRARY"] = LIBLAYA
if PYTHON_DIR != "-":
    sys.path.insert(0, PYTHON_DIR)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from json_same import same  # noqa: E402

try:
    import ray.serve  # noqa: F401
except ImportError as e:
    reason = "ray[serve] is not installed (%s); tools/setup-test-venv.sh installs it" % e
    if __name__ == "__main__":
        print("SKIPPED:", reason)
        sys.exit(77)
    import pytest
    pytest.skip(reason, allow_module_level=True)

from laya_runtime import serve as lserve  # noqa: E402

KEY = "k-serve"
NOUL = {"type": "noul", "instructions": "Is it urgent?"}
TEAM = {"type": "choice", "instructions": "Which team?",
        "criteria": {"billing": "money and invoices", "support": "things that broke", "sales": "buying"}}


class Batcher:
    """@serve.batch's behaviour for the handler: calls arriving within 10 ms, at most 16, go to
    one decide_bodies in a thread."""

    def __init__(self, handler, max_size=16, wait_s=0.010):
        self.h, self.max, self.wait = handler, max_size, wait_s
        self.queue, self.sizes = [], []

    async def __call__(self, item):
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self.queue.append((item, fut))
        if len(self.queue) == 1:
            loop.call_later(self.wait, lambda: loop.create_task(self.flush()))
        elif len(self.queue) >= self.max:
            await self.flush()
        return await fut

    async def flush(self):
        batch, self.queue = self.queue[:self.max], self.queue[self.max:]
        if not batch:
            return
        self.sizes.append(len(batch))
        outs = await asyncio.get_running_loop().run_in_executor(
            None, self.h.decide_bodies, [i for i, _ in batch])
        for (_, fut), out in zip(batch, outs):
            fut.set_result(out)
        if self.queue:
            await self.flush()


_handlers = {}


def handler(strict=False, key=KEY):
    if (strict, key) not in _handlers:
        _handlers[(strict, key)] = lserve.Handler(ENCODER, name="multilingual", api_key=key,
                                                  strict=strict)
    return _handlers[(strict, key)]


def call(h, method, path, body=b"", headers=None, batcher=None):
    hdr = {"authorization": "Bearer " + KEY}
    hdr.update({k.lower(): v for k, v in (headers or {}).items()})
    body = body.encode() if isinstance(body, str) else body
    return asyncio.run(h.handle(method, path, hdr, body, batcher or Batcher(h)))


def strip_server_extras(v):
    """Upstream's answer without what laya-serve adds above the C API."""
    if isinstance(v, dict):
        return {k: strip_server_extras(x) for k, x in v.items()
                if k not in ("routing", "x_jev_confidence")}
    if isinstance(v, list):
        return [strip_server_extras(x) for x in v]
    return v


def test_upstream_recording():
    rec = json.load(gzip.open(RECORDING) if RECORDING.endswith(".gz") else open(RECORDING))
    h = handler()
    n = 0
    problems = []
    for r in rec["requests"]:
        if r.get("env"):  # the tournament's configuration: not in laya_runtime.serve
            continue
        n += 1
        hdr = {k.lower(): v for k, v in r["headers"].items()}
        hdr.setdefault("authorization", "")
        st, headers, body = asyncio.run(h.handle(r["method"], r["path"], hdr,
                                                 (r["body"] or "").encode(), Batcher(h)))
        headers = dict(headers)
        got = json.loads(body)
        want = json.loads(r["response"])
        why = []
        if st != r["status"]:
            why.append("status %d, upstream %d" % (st, r["status"]))
        for k, v in r["headers_out"].items():
            if headers.get(k) != v:
                why.append("header %s %r, upstream %r" % (k, headers.get(k), v))
        if r["timing"] and not ("server-timing" in headers and "x-inference-time-ms" in headers):
            why.append("no timing headers")
        if r["name"] == "health":
            if set(got) != set(want) or got["loaded"] != ["multilingual"]:
                why.append("health %s" % got)
        else:
            d = same(got, strip_server_extras(want), "$")
            if d:
                why.append(d)
        if why:
            problems.append("%s: %s" % (r["name"], "; ".join(why)))
    assert n >= 40, n
    assert not problems, "\n".join(problems)


def body_of(i):
    return json.dumps({"state": "ticket %d: the invoice %d was charged %d times" % (i, 1000 + i, i % 3 + 2),
                       "questions": {"team": TEAM, "q": NOUL}})


def test_concurrent_requests_batch_and_answer_as_alone():
    h = handler()
    alone = [call(h, "POST", "/v1/systemone", body_of(i)) for i in range(24)]
    assert all(st == 200 for st, _, _ in alone)
    b = Batcher(h)

    async def many():
        return await asyncio.gather(*[h.handle("POST", "/v1/systemone", {"authorization": "Bearer " + KEY},
                                               body_of(i).encode(), b) for i in range(24)])
    together = asyncio.run(many())
    assert max(b.sizes) > 1, b.sizes
    assert max(b.sizes) <= 16, b.sizes
    for i, ((st, hd, body), (_, _, want)) in enumerate(zip(together, alone)):
        assert st == 200 and body == want, (i, body, want)
    sizes = {dict(hd)["x-laya-batch"].split("/")[1] for _, hd, _ in together}
    assert sizes - {"1"}, sizes


def test_zstd_bodies():
    z = lserve._zstd
    h = handler()
    plain = body_of(3)
    st, _, want = call(h, "POST", "/v1/systemone", plain)
    assert st == 200
    st, _, got = call(h, "POST", "/v1/systemone", z.compress(plain.encode()), {"content-encoding": "zstd"})
    assert (st, got) == (200, want)
    half = len(plain) // 2  # two frames, as a streaming client may send
    two = z.compress(plain[:half].encode()) + z.compress(plain[half:].encode())
    st, _, got = call(h, "POST", "/v1/systemone", two, {"content-encoding": "zstd"})
    assert (st, got) == (200, want)
    bomb = z.compress(b'{"state": "' + b"x" * (3 << 20) + b'"}')
    st, _, got = call(h, "POST", "/v1/systemone", bomb, {"content-encoding": "zstd"})
    assert (st, json.loads(got)) == (413, {"detail": "request body too large"})
    for bad in (b"not zstd at all", z.compress(plain.encode())[:-3], b""):
        st, _, got = call(h, "POST", "/v1/systemone", bad, {"content-encoding": "zstd"})
        assert (st, json.loads(got)) == (400, {"detail": "request body is not a valid zstd frame"}), bad


def test_strict_projection_ids_and_paths():
    st, _, full = call(handler(), "POST", "/v1/systemone", body_of(5))
    st2, _, strict = call(handler(strict=True), "POST", "/v1/systemone", body_of(5))
    full, strict = json.loads(full), json.loads(strict)
    assert st == st2 == 200
    assert list(strict) == ["model", "answers", "usage"]
    assert list(strict["usage"]) == ["input_tokens", "output_tokens"]
    assert list(strict["answers"]["team"]) == ["type", "choice", "confidence", "probabilities"]
    assert list(strict["answers"]["q"]) == ["type", "noul"]
    assert strict["answers"]["team"]["probabilities"] == full["answers"]["team"]["probabilities"]
    assert len(full["answers"]["team"]) > 4 and "usage" in full
    st, hd, _ = call(handler(), "POST", "/v1/systemone", body_of(1), {"x-typesafe-request-id": "abc-1"})
    assert dict(hd)["x-typesafe-request-id"] == "abc-1"
    ids = {dict(call(handler(), "GET", "/ready")[1])["x-typesafe-request-id"] for _ in range(3)}
    assert len(ids) == 3 and all(i.startswith("req_") for i in ids), ids
    st, hd, body = call(handler(), "POST", "/v1/systemone/", body_of(1), {"host": "h:9"})
    assert (st, dict(hd)["location"], body) == (307, "http://h:9/v1/systemone", b"")
    st, _, body = call(handler(), "GET", "/v1/models")
    models = json.loads(body)["models"]
    assert st == 200 and [m["name"] for m in models] == ["multilingual"], body
    st, _, body = call(handler(), "GET", "/v1/models", headers={"authorization": "Bearer nope"})
    assert (st, json.loads(body)) == (401, {"detail": "invalid or missing bearer token"})
    st, _, body = call(handler(key=None), "GET", "/v1/models", headers={"authorization": ""})
    assert st == 200


if __name__ == "__main__":
    failed = 0
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print("ok", name)
            except AssertionError as e:
                failed += 1
                print("FAIL", name, str(e)[:2000])
    sys.exit(1 if failed else 0)
