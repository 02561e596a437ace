"""laya-serve's HTTP API on Ray Serve: N replicas of one model, each an Agent in fixed memory.

    python -m laya_runtime.serve --model support=model.laya --replicas 2 [--address auto]
    serve run laya_runtime.serve:app_builder model=model.laya replicas=2     # Ray's own CLI
    app = laya_runtime.serve.build_app("model.laya", replicas=2); ray.serve.run(app)

Each replica opens the model once and holds an `Agent` (rules="server": laya-serve's checks and
limits) with one context per batch it runs. `@serve.batch` gathers up to `max_batch_size`
requests for at most `batch_wait_timeout_s` (laya-serve's defaults: 16, 10 ms) and answers them
with one `laya_decide_batch` (their rows packed into shared passes). Every answer comes from the
library; this module adds only laya-serve's HTTP layer (routes, bearer key, zstd bodies, status
codes, the batch route's `total_usage`, the strict projection). What laya-serve adds from its own
C++ above the C API is left out: `routing` (upstream's Router) and `x_jev_confidence`; a request's
`model` never changes which model answers (docs/scale-out.md).
"""
from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import os
import random
import re
import sys
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

try:
    from ray import serve
    from starlette.requests import Request
    from starlette.responses import Response
except ImportError as _e:  # ray is an optional dependency
    raise ImportError("laya_runtime.serve needs Ray Serve: pip install 'ray[serve]' (or "
                      "'laya-runtime[serve]'); missing: %s" % _e.name) from None

try:  # Python 3.14's zstd, else the backport typesafe-sdk[zstd] installs
    from compression import zstd as _zstd  # type: ignore
except ImportError:
    try:
        from backports import zstd as _zstd  # type: ignore
    except ImportError:
        _zstd = None

from . import _capi
from .agent import Agent, LayaRuntimeError

MAX_BODY_BYTES = 2097152  # upstream's server limit, laya-serve's kMaxBodyBytes
MAX_BATCH_SIZE = 16  # laya-serve --max-batch
BATCH_WAIT_TIMEOUT_S = 0.010  # laya-serve --batch-window-ms 10

# laya-serve's fixed messages (tools/laya-serve/upstream.h).
UNAUTHORIZED = "invalid or missing bearer token"
TOO_LARGE = "request body too large"
BAD_JSON = "request body must be valid JSON"
SURROGATE = "request body contains an unpaired surrogate escape; those cannot be encoded as UTF-8"
BAD_ZSTD = "request body is not a valid zstd frame"
INFERENCE_FAILED = "inference failed"

ROUTES = {"/v1/systemone": "POST", "/v1/systemone/batch": "POST", "/health": "GET",
          "/ready": "GET", "/v1/models": "GET"}

# The HTTP status of a refused call (laya-serve's http_status); anything else is 500.
HTTP_STATUS = {_capi.E_REQUEST_INVALID: 400, _capi.E_REQUEST_TOO_LARGE: 413, _capi.E_LIMIT: 413,
               _capi.E_REQUEST_UNPROCESSABLE: 422, _capi.E_UNSUPPORTED: 422,
               _capi.E_DEADLINE: 504}

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

# One decision's outcome: laya_status, result JSON or message, inference ms, queue ms, batch id,
# batch size.
Outcome = Tuple[int, str, float, float, int, int]


def served_name(model_name: str) -> str:
    """laya-serve's name for a model given without NAME=: its lowercase name, ' ' and '/' as '-'."""
    out = "".join(c for c in model_name.lower().replace(" ", "-").replace("/", "-")
                  if c.isascii() and (c.isalnum() or c in "._-"))
    return "model" if out in ("", "auto") else out


def _dumps(v: Any) -> bytes:
    """Starlette's JSONResponse text (as laya-serve writes it)."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _detail(message: str) -> bytes:
    return _dumps({"detail": message})


def _strict(result: Dict[str, Any]) -> Dict[str, Any]:
    """LAYA_JEV_STRICT's projection: model, the answers' contracted keys, usage's two counts."""
    keys = {"choice": ("type", "choice", "confidence", "probabilities"),
            "score": ("type", "score", "confidence", "probabilities", "legend"),
            "noul": ("type", "noul")}
    answers = {}
    for name, a in (result.get("answers") or {}).items():
        kind = a.get("type") if isinstance(a, dict) else None
        answers[name] = {k: a.get(k) for k in keys[kind]} if kind in keys else a
    usage = result.get("usage") or {}
    return {"model": result.get("model"), "answers": answers,
            "usage": {k: usage.get(k, 0) for k in ("input_tokens", "output_tokens")}}


def _unzstd(raw: bytes) -> Tuple[int, bytes]:
    """A zstd body decoded into at most MAX_BODY_BYTES: (0, body), or (413 | 400, b"")."""
    if _zstd is None:
        return 400, b""
    out = b""
    try:
        while True:  # every frame, as laya-serve decodes them
            d = _zstd.ZstdDecompressor()
            out += d.decompress(raw, max_length=MAX_BODY_BYTES + 1 - len(out))
            if len(out) > MAX_BODY_BYTES:
                return 413, b""
            if not d.eof:
                return (400 if d.needs_input else 413), b""
            raw = d.unused_data
            if not raw:
                return 0, out
    except _zstd.ZstdError:
        return 400, b""


class Handler:
    """laya-serve's routes over one Agent, without Ray: `handle` answers one HTTP request, sending
    its decisions through `decide` (in a replica, the @serve.batch method; else any coroutine
    taking (body, enqueued time) and returning an Outcome)."""

    def __init__(self, model_path: str, name: Optional[str] = None, threads: int = 1,
                 contexts: int = 1, api_key: Optional[str] = None, strict: bool = False):
        self.agent = Agent(model_path, threads=threads, contexts=contexts, rules="server")
        self.agent.warmup()
        info = self.agent._model.info
        self.name = name or served_name(self.agent.info["name"])
        self.path = model_path
        self.sha256 = (info.source_sha256 or b"").decode() or None
        self.api_key = api_key or ""
        self.strict = strict
        self.loaded_at = time.gmtime()
        self._id_seed = random.getrandbits(64)
        self._ids = 0
        self._batches = 0
        self._lock = threading.Lock()

    def decide_bodies(self, items: List[Tuple[bytes, float]]) -> List[Outcome]:
        """One batch: the bodies answered together (blocking; the GIL is released in the call)."""
        t0 = time.monotonic()
        with self._lock:
            self._batches += 1
            batch_id = self._batches
        try:
            done = self.agent.decide_bodies([b for b, _ in items])
        except LayaRuntimeError as e:
            print("laya_runtime.serve: inference failed: %s (%s)" % (e, self.name),
                  file=sys.stderr, flush=True)
            done = [(e.code, str(e))] * len(items)
        ms = (time.monotonic() - t0) * 1000.0
        return [(st, text, ms, (t0 - t) * 1000.0, batch_id, len(items))
                for (st, text), (_, t) in zip(done, items)]

    def _request_id(self) -> str:
        with self._lock:
            self._ids += 1
            return "req_%016x%08x" % (self._id_seed, self._ids)

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        if not self.api_key:
            return True
        got = headers.get("authorization", "").strip()
        return hmac.compare_digest(got.encode("utf-8"), ("Bearer " + self.api_key).encode("utf-8"))

    async def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes,
                     decide) -> Tuple[int, List[Tuple[str, str]], bytes]:
        """(status, headers, body) for one request; `headers` with lower-case names."""
        rid = headers.get("x-typesafe-request-id") or self._request_id()
        status, extra, out = await self._route(method, path, headers, body, decide)
        extra.append(("x-typesafe-request-id", rid))
        if status != 307:
            extra.append(("content-type", "application/json"))
        return status, extra, out

    async def _route(self, method, path, headers, body, decide):
        want = ROUTES.get(path)
        if want is None:
            if path.endswith("/") and path[:-1] in ROUTES:
                host = headers.get("host") or "localhost"
                return 307, [("location", "http://%s%s" % (host, path[:-1]))], b""
            return 404, [], _detail("Not Found")
        if method != want:
            return 405, [("allow", want)], _detail("Method Not Allowed")
        if path == "/ready":
            return 200, [], _dumps({"status": "ready"})
        if path == "/health":
            return 200, [], self._health(self._authorized(headers))
        if not self._authorized(headers):
            return 401, [], _detail(UNAUTHORIZED)
        if path == "/v1/models":
            return 200, [], self._models()
        if len(body) > MAX_BODY_BYTES:
            return 413, [], _detail(TOO_LARGE)
        if headers.get("content-encoding", "").lower() == "zstd":
            st, body = _unzstd(body)
            if st:
                return st, [], _detail(TOO_LARGE if st == 413 else BAD_ZSTD)
        try:
            req = json.loads(body)
            if _SURROGATE_ESCAPE.search(body):
                _dumps(req)  # a lone surrogate cannot be written as UTF-8
        except UnicodeEncodeError:
            return 400, [], _detail(SURROGATE)
        except ValueError:  # JSONDecodeError, UnicodeDecodeError
            return 400, [], _detail(BAD_JSON)
        if path == "/v1/systemone":
            if isinstance(req, dict) and "states" in req:  # upstream reads `state` only here
                del req["states"]
                body = _dumps(req)
            return await self._systemone(body, decide)
        if not isinstance(req, dict) or ("questions" not in req and "schema" not in req) or \
                "states" not in req:
            return 400, [], _detail("request body must be an object with 'states' and "
                                    "'questions' fields")
        if "state" in req:
            del req["state"]
            body = _dumps(req)
        return await self._batch(body, decide)

    async def _answer(self, body: bytes, decide):
        """(refusal or None, parsed result, timing headers)."""
        st, text, infer_ms, queue_ms, batch_id, size = await decide((body, time.monotonic()))
        timing = [("server-timing", "inference;dur=%.2f" % infer_ms),
                  ("x-inference-time-ms", "%.2f" % infer_ms),
                  ("x-laya-queue-ms", "%.2f" % queue_ms), ("x-laya-batch", "%d/%d" % (batch_id, size))]
        if st != _capi.OK:
            code = HTTP_STATUS.get(st, 500)
            if code == 500:
                print("laya_runtime.serve: inference failed: %s (%s)" % (text, self.name),
                      file=sys.stderr, flush=True)
            return (code, timing, _detail(text if code != 500 else INFERENCE_FAILED)), None, timing
        return None, json.loads(text), timing

    async def _systemone(self, body: bytes, decide):
        refused, result, timing = await self._answer(body, decide)
        if refused:
            return refused
        return 200, timing, _dumps(_strict(result) if self.strict else result)

    async def _batch(self, body: bytes, decide):
        refused, results, timing = await self._answer(body, decide)
        if refused:
            return refused
        if not isinstance(results, list):
            return 500, timing, _detail(INFERENCE_FAILED)
        total = {"input_tokens": 0, "output_tokens": 0}
        for r in results:
            usage = r.get("usage") or {}
            for k in total:
                v = usage.get(k)
                total[k] += v if isinstance(v, int) and not isinstance(v, bool) else 0
        if self.strict:
            results = [_strict(r) for r in results]
        return 200, timing, _dumps({"results": results, "total_usage": total})

    def _health(self, full: bool) -> bytes:
        if not full:
            return _dumps({"status": "ok"})
        return _dumps({"status": "ok", "loaded": [self.name], "revisions": {self.name: self.sha256},
                       "device": "cpu", "device_is_preference": False,
                       "checkpoint_devices": {self.name: "cpu"},
                       "cpu_fallbacks": {self.name: {"count": 0, "last_reason": None}}})

    def _models(self) -> bytes:
        i = self.agent.info
        desc = "%s encoder decision model, %d parameters (%s), from %s" % (
            i["architecture"], i["parameters"], i["weight_dtypes"], self.path)
        return _dumps({"models": [{"name": self.name, "description": desc,
                                   "release_date": time.strftime("%Y-%m-%d", self.loaded_at)}]})


@serve.deployment(ray_actor_options={"num_cpus": 1}, max_ongoing_requests=2 * MAX_BATCH_SIZE,
                  health_check_period_s=2, health_check_timeout_s=10)
class LayaReplica:
    """One replica: the model, its Agent (one context per concurrent batch), laya-serve's API."""

    def __init__(self, model_path: str, name: Optional[str] = None, threads: int = 1,
                 api_key: Optional[str] = None, strict: bool = False,
                 max_batch_size: int = MAX_BATCH_SIZE,
                 batch_wait_timeout_s: float = BATCH_WAIT_TIMEOUT_S):
        self.handler = Handler(model_path, name=name, threads=threads, contexts=1,
                               api_key=api_key if api_key is not None else
                               os.environ.get("LAYA_API_KEY"), strict=strict)
        self.decide.set_max_batch_size(max_batch_size)
        self.decide.set_batch_wait_timeout_s(batch_wait_timeout_s)

    @serve.batch(max_batch_size=MAX_BATCH_SIZE, batch_wait_timeout_s=BATCH_WAIT_TIMEOUT_S)
    async def decide(self, items: List[Tuple[bytes, float]]) -> List[Outcome]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.handler.decide_bodies, items)

    async def __call__(self, request: Request) -> Response:
        body = await request.body()
        headers = {k.lower(): v for k, v in request.headers.items()}
        status, extra, out = await self.handler.handle(request.method, request.url.path, headers,
                                                       body, self.decide)
        return Response(out, status_code=status, headers=dict(extra))


def build_app(model_path: str, *, name: Optional[str] = None, replicas: int = 1,
              autoscaling: Optional[Dict[str, Any]] = None, num_cpus: float = 1,
              threads: Optional[int] = None, api_key: Optional[str] = None,
              strict: bool = False, max_batch_size: int = MAX_BATCH_SIZE,
              batch_wait_timeout_s: float = BATCH_WAIT_TIMEOUT_S,
              max_ongoing_requests: Optional[int] = None,
              max_queued_requests: int = -1):
    """The Ray Serve application: `replicas` replicas of the model at `model_path` (an absolute
    path of a .laya file every node can read), or with `autoscaling` (Ray's autoscaling_config: min_replicas,
    max_replicas, target_ongoing_requests, upscale_delay_s, downscale_delay_s, ...; defaults
    below) between its bounds. Each replica takes `num_cpus` of Ray's CPUs and runs its context
    on `threads` threads (default: num_cpus). `api_key` (default: the replica's LAYA_API_KEY)
    and `strict` (LAYA_JEV_STRICT) as laya-serve's."""
    ongoing = max_ongoing_requests or 2 * max_batch_size  # a batch running, the next gathering
    opts: Dict[str, Any] = {"ray_actor_options": {"num_cpus": num_cpus},
                            "max_ongoing_requests": ongoing,
                            "max_queued_requests": max_queued_requests}
    if autoscaling:
        cfg = {"min_replicas": 1, "max_replicas": max(1, replicas),
               "target_ongoing_requests": max_batch_size, "upscale_delay_s": 5,
               "downscale_delay_s": 60}
        cfg.update(autoscaling)
        opts["autoscaling_config"] = cfg
    else:
        opts["num_replicas"] = replicas
    return LayaReplica.options(**opts).bind(
        model_path, name=name, threads=threads or max(1, int(num_cpus)),
        api_key=api_key, strict=strict, max_batch_size=max_batch_size,
        batch_wait_timeout_s=batch_wait_timeout_s)


def app_builder(args: Dict[str, Any]):
    """For Ray's config files and CLI (`serve run laya_runtime.serve:app_builder model=PATH
    replicas=2`, a RayService's serveConfigV2 `args:`): build_app's keywords, `model` the path."""
    a = dict(args)
    path = a.pop("model")
    conv = {"replicas": int, "num_cpus": float, "threads": int, "max_batch_size": int,
            "batch_wait_timeout_s": float, "max_ongoing_requests": int,
            "max_queued_requests": int,
            "strict": lambda v: str(v).lower() in ("1", "true", "yes")}
    kw = {k: conv[k](v) if k in conv else v for k, v in a.items()}
    return build_app(path, **kw)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m laya_runtime.serve",
                                description="laya-serve's HTTP API on Ray Serve (docs/scale-out.md)")
    p.add_argument("--model", required=True, help="[NAME=]PATH of a .laya file")
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--autoscale", metavar="MIN:MAX", help="autoscale between MIN and MAX replicas")
    p.add_argument("--target-ongoing", type=float, default=MAX_BATCH_SIZE,
                   help="autoscaling: requests in flight per replica to aim for (default 16)")
    p.add_argument("--num-cpus", type=float, default=1, help="Ray CPUs per replica (default 1)")
    p.add_argument("--threads", type=int, default=0, help="threads per replica (default: num-cpus)")
    p.add_argument("--max-batch", type=int, default=MAX_BATCH_SIZE)
    p.add_argument("--batch-wait-ms", type=float, default=BATCH_WAIT_TIMEOUT_S * 1000)
    p.add_argument("--max-queued", type=int, default=-1,
                   help="requests queued per caller before Ray answers 503 (default: no bound)")
    p.add_argument("--strict", action="store_true", help="LAYA_JEV_STRICT's projection")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--proxy-location", default="HeadOnly",
                   help="Ray's HTTP proxies: HeadOnly (default; one machine) or EveryNode")
    p.add_argument("--address", default=os.environ.get("RAY_ADDRESS"),
                   help="a running cluster (deploy and exit); default: start Ray here and serve "
                        "until Ctrl-C")
    p.add_argument("--app-name", default="laya")
    a = p.parse_args(argv)
    import ray

    name, _, path = a.model.rpartition("=")
    path = os.path.abspath(path)  # the replicas' working directory is not this one
    if not os.path.isfile(path):
        p.error("no model file at %r: the replicas open a .laya file (convert a checkpoint "
                "directory with laya-convert)" % path)
    autoscaling = None
    if a.autoscale:
        lo, _, hi = a.autoscale.partition(":")
        autoscaling = {"min_replicas": int(lo), "max_replicas": int(hi or lo),
                       "target_ongoing_requests": a.target_ongoing}
    app = build_app(path, name=name or None, replicas=a.replicas, autoscaling=autoscaling,
                    num_cpus=a.num_cpus, threads=a.threads or None, strict=a.strict,
                    max_batch_size=a.max_batch, batch_wait_timeout_s=a.batch_wait_ms / 1000.0,
                    max_queued_requests=a.max_queued)
    ray.init(address=a.address, log_to_driver=False)
    serve.start(proxy_location=a.proxy_location, http_options={"host": a.host, "port": a.port})
    serve.run(app, name=a.app_name, route_prefix="/")
    print("laya_runtime.serve: http://%s:%d/ (%s)" % (
        a.host, a.port, "autoscaling %s" % a.autoscale if a.autoscale else
        "%d replicas" % a.replicas), flush=True)
    if a.address:
        return 0  # the application lives in the cluster: `serve shutdown` or `ray stop` ends it
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        serve.shutdown()
    return 0


if __name__ == "__main__":
    from laya_runtime.serve import main as _main  # the module by name, so Ray pickles it by reference

    sys.exit(_main())
