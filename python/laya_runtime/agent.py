"""`load` and `Agent`: upstream `laya.Agent`'s calls over the C API, with its results and refusals.

A call becomes the request body upstream `laya-serve` takes (`/v1/systemone`: state, questions,
states, schema, shortlist, budgets, min_confidence), answered by `laya_decide` on one of a pool of
contexts; the result is the JSON the SDK's call returns, parsed. The pool lets several Python
threads decide at once (ctypes releases the GIL during the call).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _capi
from ._pool import ContextPool

State = Union[str, dict, list]

# What upstream raises for a refused question or request (laya.structured.SchemaError is a
# ValueError there too).


class SchemaError(ValueError):
    """A schema `decide` cannot turn into typed questions (upstream laya.structured.SchemaError)."""


_RULES = {"sdk": _capi.RULES_SDK, "server": _capi.RULES_SERVER}

_REFUSALS = (_capi.E_REQUEST_INVALID, _capi.E_REQUEST_UNPROCESSABLE, _capi.E_REQUEST_TOO_LARGE)


class LayaRuntimeError(RuntimeError):
    """A failure that is not the request's: the model, memory, a backend (with its laya_status)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _raise(e: _capi.CallError, schema: bool = False):
    if e.code in _REFUSALS:
        # The schema planner's refusals name a property path ("properties.x: ...").
        if schema and e.message.startswith("properties."):
            raise SchemaError(e.message) from None
        raise ValueError(e.message) from None
    raise LayaRuntimeError(e.code, e.message) from None


def _check_state(state: Any) -> None:
    if state is None:
        raise TypeError("state must not be None; pass a string, dict, or list")


def _check_questions(questions: Any) -> None:
    if not isinstance(questions, dict):
        raise TypeError("questions must be a dict of question id -> definition, got %s"
                        % type(questions).__name__)


def _not_here(what: str, given: Any) -> None:
    if given is not None:
        raise NotImplementedError("laya_runtime does not support %s yet; call without it (the "
                                  "upstream SDK runs it in Python around predict)" % what)


def _no_hooks(hooks: Any, on_predict_start: Any, on_predict_end: Any) -> None:
    """Upstream's hook arguments, refused by name when given (hooks are not supported yet)."""
    for what, given in (("hooks", hooks), ("on_predict_start", on_predict_start),
                        ("on_predict_end", on_predict_end)):
        _not_here(what, given)


def _dumps(body: Dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


class Agent:
    """A Laya encoder decision model: `predict` / `system_one`, `predict_batch`, `decide`,
    `decide_batch`, `warmup`, as upstream `laya.Agent` (see `load`)."""

    def __init__(self, path: str, threads: int = 0, contexts: Optional[int] = None,
                 kernels: str = "auto", backends: str = "cpu", model_id: Optional[str] = None,
                 rules: str = "sdk"):
        """`rules`: "sdk" (the SDK's checks, as its calls make them) or "server" (laya-serve's
        /v1/systemone checks and limits: what `decide_bodies` answers for an HTTP server)."""
        if rules not in _RULES:
            raise ValueError("rules must be 'sdk' or 'server', got %r" % (rules,))
        self._model = _capi.Model(path, threads=threads, kernels=kernels, backends=backends)
        if self._model.info.kind != _capi.MODEL_ENCODER:
            self._model.close()
            raise ValueError("%s is a decoder LM; laya_runtime.Agent runs Laya encoder models"
                             % path)
        self.path = path
        self.model_id = model_id or path
        self._pool = ContextPool(contexts if contexts is not None else (os.cpu_count() or 1),
                                 lambda: _capi.Context(self._model, threads=threads, max_batch=64,
                                                       rules=_RULES[rules]))
        i = self._model.info
        self.info = {
            "name": i.name.decode(), "architecture": i.architecture.decode(),
            "format": i.format.decode(), "source": i.source.decode(),
            "weight_dtypes": i.weight_dtypes.decode(), "parameters": i.parameters,
            "layers": i.layers, "hidden_size": i.hidden_size, "vocab_size": i.vocab_size,
            "max_len": i.max_len, "head_max_len": i.head_max_len,
            "temperature": list(i.temperature),
        }
        self.device = "cpu"

    def _call(self, body: Dict[str, Any], schema: bool = False) -> Any:
        try:
            with self._pool.context() as ctx:
                return json.loads(ctx.decide(_dumps(body)))
        except _capi.CallError as e:
            _raise(e, schema)

    def decide_bodies(self, bodies: List[bytes]) -> List[Tuple[int, str]]:
        """Request bodies (upstream laya-serve's /v1/systemone JSON) answered together on one
        context (laya_decide_batch: their rows packed into shared passes, each result identical
        to the body alone): per body its laya_status and its result JSON, or its message. Bodies
        go in groups within the context's limits (max_batch bodies, max_request_bytes together);
        a failure that is not a body's own raises LayaRuntimeError."""
        out: List[Tuple[int, str]] = []
        try:
            with self._pool.context() as ctx:
                lim = ctx.limits
                i = 0
                while i < len(bodies):
                    j, size = i + 1, len(bodies[i])
                    while (j < len(bodies) and j - i < lim.max_batch
                           and size + len(bodies[j]) <= lim.max_request_bytes):
                        size += len(bodies[j])
                        j += 1
                    out.extend(ctx.decide_batch(bodies[i:j]))
                    i = j
        except _capi.CallError as e:
            raise LayaRuntimeError(e.code, e.message) from None
        return out

    # ---- upstream's calls -----------------------------------------------------------------

    def system_one(self, state: State, questions: Dict[str, Dict[str, Any]],
                   lang: Optional[str] = None, hooks=None, on_predict_start=None,
                   on_predict_end=None, hooks_raise: Optional[bool] = None,
                   hooks_timeout: Optional[float] = None, max_len: Optional[int] = None,
                   head_max_len: Optional[int] = None,
                   min_confidence: Optional[float] = None) -> Dict[str, Any]:
        """Typed questions about one state in one forward pass: upstream `Agent.system_one`."""
        _no_hooks(hooks, on_predict_start, on_predict_end)
        _check_state(state)
        _check_questions(questions)
        body: Dict[str, Any] = {"state": state, "questions": questions}
        for k, v in (("lang", lang), ("max_len", max_len), ("head_max_len", head_max_len),
                     ("min_confidence", min_confidence)):
            if v is not None:
                body[k] = v
        return self._call(body)

    predict = system_one

    def predict_batch(self, states: List[State], questions: Dict[str, Dict[str, Any]],
                      batch_size: Optional[int] = None, lang: Optional[str] = None, hooks=None,
                      on_predict_start=None, on_predict_end=None,
                      hooks_raise: Optional[bool] = None, hooks_timeout: Optional[float] = None,
                      max_len: Optional[int] = None, head_max_len: Optional[int] = None,
                      sort_by_length: bool = False,
                      min_confidence: Optional[float] = None) -> List[Dict[str, Any]]:
        """The same questions over many states, rows packed into shared passes: upstream
        `Agent.predict_batch` (results in input order)."""
        _no_hooks(hooks, on_predict_start, on_predict_end)
        if isinstance(states, (str, bytes, dict)):
            raise TypeError("predict_batch expects a list of states; pass a single state to "
                            "predict()/system_one().")
        states = list(states)
        _check_questions(questions)
        for s in states:
            _check_state(s)
        if not states:
            return []
        body: Dict[str, Any] = {"states": states, "questions": questions}
        for k, v in (("batch_size", batch_size), ("lang", lang), ("max_len", max_len),
                     ("head_max_len", head_max_len), ("min_confidence", min_confidence)):
            if v is not None:
                body[k] = v
        return self._call(body)

    def decide(self, state: State, schema: Any = None, *,
               questions: Optional[Dict[str, Any]] = None, return_details: bool = False,
               min_confidence: Optional[float] = None, **predict_kwargs) -> Any:
        """Typed values for a JSON schema (or the answers for `questions`): upstream
        `Agent.decide`."""
        _one_of(schema, questions)
        _check_state(state)
        out = self._decide({"state": state}, schema, questions, return_details, min_confidence,
                           predict_kwargs)
        return out["answers"] if questions is not None else out

    def decide_batch(self, states: List[State], schema: Any = None, *,
                     questions: Optional[Dict[str, Any]] = None, return_details: bool = False,
                     min_confidence: Optional[float] = None, **predict_kwargs) -> List[Any]:
        """`decide` over many states in shared passes: upstream `Agent.decide_batch`."""
        _one_of(schema, questions)
        if isinstance(states, (str, bytes, dict)):
            raise TypeError("predict_batch expects a list of states; pass a single state to "
                            "predict()/system_one().")
        states = list(states)
        for s in states:
            _check_state(s)
        if not states:
            return []
        out = self._decide({"states": states}, schema, questions, return_details,
                           min_confidence, predict_kwargs)
        return [r["answers"] for r in out] if questions is not None else out

    def _decide(self, body: Dict[str, Any], schema: Any, questions: Optional[Dict[str, Any]],
                return_details: bool, min_confidence: Optional[float],
                predict_kwargs: Dict[str, Any]) -> Any:
        """decide / decide_batch: the schema or the questions, the options, the call."""
        if questions is not None:
            _check_questions(questions)
            body["questions"] = questions
        else:
            body["schema"] = _schema_dict(schema)
            body["return_details"] = bool(return_details)
        if min_confidence is not None:
            body["min_confidence"] = min_confidence
        body.update(_predict_options(predict_kwargs))
        return self._call(body, schema=questions is None)

    def warmup(self, shapes=None) -> float:
        """Makes every context of the pool and runs one decision on each; returns the seconds."""
        import contextlib
        import time
        t0 = time.perf_counter()
        body = _dumps({"state": "warm-up", "questions": {"q": {"type": "noul",
                                                               "instructions": "ok?"}}})
        try:
            with contextlib.ExitStack() as stack:
                for _ in range(self._pool.size):
                    stack.enter_context(self._pool.context()).decide(body)
        except _capi.CallError as e:
            _raise(e)
        return time.perf_counter() - t0

    @property
    def backend(self) -> str:
        return "laya-runtime"

    def set_backend(self, name: str = "auto", strict: bool = False, **options) -> str:
        """Upstream picks torch backends here; this runtime has one. Returns its name."""
        if strict and name not in ("auto", "laya-runtime", "eager"):
            raise ValueError("backend %r is not available in laya_runtime (it runs on its own "
                             "kernels: 'laya-runtime')" % name)
        return self.backend

    def close(self) -> None:
        self._pool.close()
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
        return False

    def __repr__(self) -> str:
        return "Agent(model_id=%r, device=%s)" % (self.model_id, self.device)


def _one_of(schema: Any, questions: Any) -> None:
    if (schema is None) == (questions is None):
        raise ValueError("pass exactly one of schema= or questions=")


def _predict_options(kw: Dict[str, Any]) -> Dict[str, Any]:
    out = {}
    for k in ("lang", "max_len", "head_max_len", "batch_size"):
        v = kw.pop(k, None)
        if v is not None:
            out[k] = v
    for what in ("hooks", "on_predict_start", "on_predict_end"):
        _not_here(what, kw.pop(what, None))
    kw.pop("hooks_raise", None)
    kw.pop("hooks_timeout", None)
    kw.pop("sort_by_length", None)
    if kw:
        raise TypeError("unexpected keyword arguments: %s" % ", ".join(sorted(kw)))
    return out


def _schema_dict(schema: Any) -> Any:
    """A pydantic model class becomes its JSON schema (as upstream's structured.py reads it)."""
    if schema is None or isinstance(schema, dict):
        return schema
    js = getattr(schema, "model_json_schema", None)
    if callable(js):
        return js()
    raise SchemaError("schema must be a JSON schema dict or a pydantic model class, got %s"
                      % type(schema).__name__)


# ---- load ---------------------------------------------------------------------------------------

def _cache_dir() -> str:
    base = os.environ.get("LAYA_RUNTIME_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "laya_runtime")
    os.makedirs(base, exist_ok=True)
    return base


def _checkpoint_key(directory: str) -> str:
    """sha256 over the checkpoint's files (names and bytes): the converted file's cache key."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            h.update(os.path.relpath(path, directory).encode() + b"\0")
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()


def _convert(directory: str) -> str:
    """The checkpoint directory as a .laya file, converted once (laya-convert) and cached."""
    out = os.path.join(_cache_dir(), _checkpoint_key(directory) + ".laya")
    if os.path.exists(out):
        return out
    packaged = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", "laya-convert")
    tool = (os.environ.get("LAYA_CONVERT") or (packaged if os.access(packaged, os.X_OK) else None)
            or _beside_library("laya-convert") or "laya-convert")
    tmp = out + ".%d.tmp" % os.getpid()
    try:
        p = subprocess.run([tool, directory, "-o", tmp, "--quiet"], capture_output=True,
                           text=True)
    except FileNotFoundError:
        raise OSError("converting %s needs laya-convert: set LAYA_CONVERT, put it on PATH, or "
                      "load a .laya file" % directory) from None
    if p.returncode != 0:
        raise ValueError("cannot convert %s: %s" % (directory, p.stderr.strip()))
    os.replace(tmp, out)
    return out


def _beside_library(name: str) -> Optional[str]:
    lib = os.environ.get("LAYA_LIBRARY")
    if not lib:
        return None
    for cand in (os.path.join(os.path.dirname(lib), name),
                 os.path.join(os.path.dirname(lib), "..", "..", "tools", name)):
        if os.access(cand, os.X_OK):
            return os.path.normpath(cand)
    return None


def load(model_id_or_path: str, device: Optional[str] = None, *, threads: int = 0,
         contexts: Optional[int] = None, kernels: str = "auto", backend: Optional[str] = None,
         **upstream_options: Any) -> Agent:
    """An Agent on a `.laya` file or a Laya checkpoint directory (converted once, cached by its
    files' sha256): upstream `laya.load`'s first argument.

    `device` "cpu" (or None) runs here; "cuda", "mps", "xpu" are refused (no such device in this
    runtime), as are the torch-only backends ("tilelang", "onnx", "compile"). Upstream options
    with no meaning here (`fast`, `compile`, `token`, `revision`, ...) are accepted when off and
    refused when set, so nothing is silently different."""
    if device not in (None, "cpu", "auto"):
        raise ValueError("device %r is not available in laya_runtime: it runs on the CPU (and "
                         "its HAL backends); use device='cpu'" % device)
    if backend not in (None, "auto", "eager", "laya-runtime"):
        raise ValueError("backend %r is a torch backend of the upstream SDK; laya_runtime runs "
                         "its own kernels (backend='auto')" % backend)
    for k, v in upstream_options.items():
        if v not in (None, False):
            raise ValueError("%s=%r has no meaning in laya_runtime (upstream torch option); "
                             "leave it unset" % (k, v))
    path = model_id_or_path
    if os.path.isdir(path):
        path = _convert(path)
    elif not os.path.exists(path):
        raise FileNotFoundError("no model at %r: laya_runtime loads a .laya file or a local "
                                "checkpoint directory (no hub downloads)" % model_id_or_path)
    try:
        return Agent(path, threads=threads, contexts=contexts, kernels=kernels,
                     model_id=model_id_or_path)
    except _capi.CallError as e:
        _raise(e)
