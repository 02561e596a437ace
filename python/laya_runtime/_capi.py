"""The C API (include/laya/laya.h) through ctypes: the library, its structs, its status codes.

ctypes releases the GIL for the length of every foreign call, so decisions on different contexts
run at once from several Python threads. The structs mirror laya.h field for field; the library
checks each one's struct_size and ABI number, so a mismatch is an error, never a misread.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import List, Optional, Tuple

ABI_VERSION = 1
ERROR_MESSAGE_MAX = 384
REGION_COUNT = 5

# laya_status
OK = 0
E_INVALID_ARGUMENT = 1
E_ABI_MISMATCH = 2
E_BUFFER_TOO_SMALL = 3
E_MEMORY = 4
E_IO = 5
E_MODEL_INVALID = 6
E_UNSUPPORTED = 7
E_REQUEST_INVALID = 8
E_REQUEST_TOO_LARGE = 9
E_REQUEST_UNPROCESSABLE = 10
E_LIMIT = 11
E_DEADLINE = 12
E_ABORTED = 13
E_BACKEND = 14
E_INTERNAL = 15

RULES_SERVER = 0
RULES_SDK = 1

MODEL_ENCODER = 1
MODEL_DECODER = 2

c_size_t = ctypes.c_size_t


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * ERROR_MESSAGE_MAX)]


LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class ModelParams(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", ctypes.c_uint32),
                ("verify", ctypes.c_int), ("backends", ctypes.c_char_p),
                ("kernels", ctypes.c_char_p), ("n_threads", ctypes.c_int32),
                ("kv_type", ctypes.c_char_p), ("log", ctypes.c_void_p),
                ("log_user", ctypes.c_void_p)]


class ModelInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("kind", ctypes.c_int), ("name", ctypes.c_char_p),
                ("architecture", ctypes.c_char_p), ("format", ctypes.c_char_p),
                ("source", ctypes.c_char_p), ("converter", ctypes.c_char_p),
                ("source_sha256", ctypes.c_char_p), ("weight_dtypes", ctypes.c_char_p),
                ("chat_format", ctypes.c_char_p), ("weight_bytes", ctypes.c_uint64),
                ("parameters", ctypes.c_int64), ("vocab_size", ctypes.c_int32),
                ("layers", ctypes.c_int32), ("hidden_size", ctypes.c_int32),
                ("max_tokens", ctypes.c_int64), ("max_options", ctypes.c_int64),
                ("max_len", ctypes.c_int32), ("head_max_len", ctypes.c_int32),
                ("temperature", ctypes.c_double * 3)]


class ContextLimits(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", ctypes.c_uint32),
                ("max_tokens", ctypes.c_int64), ("max_rows", ctypes.c_int64),
                ("max_options", ctypes.c_int64), ("max_request_bytes", ctypes.c_uint64),
                ("max_batch", ctypes.c_int64), ("kv_cells", ctypes.c_int64),
                ("prefix_slots", ctypes.c_int64), ("prefix_cache_bytes", ctypes.c_uint64),
                ("prefix_block", ctypes.c_int64), ("chunk", ctypes.c_int64),
                ("n_threads", ctypes.c_int32), ("arena_bytes", ctypes.c_uint64)]


class Region(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", c_size_t)]


class MemoryRequirements(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("size", ctypes.c_uint64 * REGION_COUNT),
                ("alignment", ctypes.c_uint64 * REGION_COUNT),
                ("model_shared_bytes", ctypes.c_uint64), ("limits", ContextLimits)]


class BatchItem(ctypes.Structure):
    _fields_ = [("body", ctypes.c_char_p), ("body_len", c_size_t), ("status", ctypes.c_int),
                ("json_offset", c_size_t), ("json_len", c_size_t)]


class Sampling(ctypes.Structure):
    _fields_ = [("temperature", ctypes.c_float), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float), ("seed", ctypes.c_uint64)]


class Message(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


TOKEN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                            ctypes.c_size_t)
ABORT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class GenerateParams(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("abi_version", ctypes.c_uint32),
                ("prompt", ctypes.c_char_p), ("messages", ctypes.POINTER(Message)),
                ("n_messages", c_size_t), ("prompt_ids", ctypes.POINTER(ctypes.c_int32)),
                ("n_prompt_ids", c_size_t), ("max_tokens", ctypes.c_int64),
                ("sampling", Sampling), ("stop_after_json", ctypes.c_int32),
                ("no_prefix_cache", ctypes.c_int32), ("on_token", TOKEN_FN),
                ("on_token_user", ctypes.c_void_p), ("abort", ABORT_FN),
                ("abort_user", ctypes.c_void_p), ("profile", ctypes.c_void_p),
                ("profile_user", ctypes.c_void_p)]


def _find_library() -> str:
    """LAYA_LIBRARY, the library beside this package (a wheel), or the system's liblaya."""
    env = os.environ.get("LAYA_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("liblaya.so", "liblaya.so.0", "liblaya.dylib"):
        path = os.path.join(here, "_lib", name)
        if os.path.exists(path):
            return path
    found = ctypes.util.find_library("laya")
    if found:
        return found
    raise OSError("liblaya not found: set LAYA_LIBRARY to the path of liblaya.so, or install the "
                  "library (meson install) or the laya_runtime wheel")


def _declare(lib: ctypes.CDLL) -> None:
    vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, c_size_t
    st = ctypes.c_int
    P = ctypes.POINTER
    sigs = {
        "laya_version": (cp, []),
        "laya_abi_version": (ctypes.c_uint32, []),
        "laya_status_string": (cp, [st]),
        "laya_model_default_params_": (ModelParams, [ctypes.c_uint32, sz]),
        "laya_model_open_file": (st, [cp, P(ModelParams), P(vp), P(Error)]),
        "laya_model_close": (None, [vp]),
        "laya_model_info_init_": (ModelInfo, [ctypes.c_uint32, sz]),
        "laya_model_info_get": (st, [vp, P(ModelInfo)]),
        "laya_context_default_limits_": (ContextLimits, [ctypes.c_uint32, sz]),
        "laya_memory_requirements_init_": (MemoryRequirements, [ctypes.c_uint32, sz]),
        "laya_context_requirements": (st, [vp, P(ContextLimits), P(MemoryRequirements), P(Error)]),
        "laya_context_create": (st, [vp, P(ContextLimits), P(Region), P(vp), P(Error)]),
        "laya_context_destroy": (None, [vp]),
        "laya_context_error": (cp, [vp]),
        "laya_decide": (st, [vp, cp, sz, vp, sz, P(sz)]),
        "laya_decide_batch": (st, [vp, P(BatchItem), sz, vp, sz, P(sz)]),
        "laya_result_json": (st, [vp, vp, sz, P(sz)]),
        "laya_result_text": (st, [vp, vp, sz, P(sz)]),
        "laya_context_set_rules": (st, [vp, ctypes.c_int]),
        "laya_detect_language": (st, [cp, sz, ctypes.c_int32, vp, sz, P(sz), P(Error)]),
        "laya_context_set_sampling": (st, [vp, P(Sampling)]),
        "laya_route": (st, [cp, sz, cp, sz, vp, sz, P(sz), P(Error)]),
        "laya_tournament_create": (st, [cp, sz, ctypes.c_int32, P(vp), P(Error)]),
        "laya_tournament_done": (ctypes.c_int32, [vp]),
        "laya_tournament_next": (st, [vp, vp, sz, P(sz), P(ctypes.c_int32)]),
        "laya_tournament_answer": (st, [vp, cp, sz, P(Error)]),
        "laya_tournament_result": (st, [vp, vp, sz, P(sz)]),
        "laya_tournament_free": (None, [vp]),
        "laya_generate_params_init_": (GenerateParams, [ctypes.c_uint32, sz]),
        "laya_generate": (st, [vp, P(GenerateParams), vp, sz, P(sz)]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


_lib: Optional[ctypes.CDLL] = None
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, c_size_t]
_PROT_RW = 0x1 | 0x2  # PROT_READ | PROT_WRITE
_MAP_PRIVATE_ANON = 0x02 | 0x20  # MAP_PRIVATE | MAP_ANONYMOUS (Linux)
_MAP_FAILED = ctypes.c_void_p(-1).value


def lib() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        l = ctypes.CDLL(_find_library())
        _declare(l)
        if l.laya_abi_version() != ABI_VERSION:
            raise OSError("liblaya has ABI %d; this laya_runtime speaks ABI %d"
                          % (l.laya_abi_version(), ABI_VERSION))
        _lib = l
    return _lib


def detect_language(state_json: bytes, explain: bool) -> str:
    """laya_detect_language: the analysis as JSON text, or CallError."""
    L = lib()
    err = Error()
    n = c_size_t(0)
    s = L.laya_detect_language(state_json, len(state_json), int(explain), None, 0,
                               ctypes.byref(n), ctypes.byref(err))
    if s == OK:
        out = ctypes.create_string_buffer(n.value + 1)
        s = L.laya_detect_language(state_json, len(state_json), int(explain), out, len(out),
                                   ctypes.byref(n), ctypes.byref(err))
    if s != OK:
        raise CallError(s, err.message.decode("utf-8", "replace"))
    return out.raw[: n.value].decode("utf-8")


def route(options_json: bytes, query_json: bytes) -> str:
    """laya_route: the RouteDecision as JSON text, or CallError."""
    L = lib()
    err = Error()
    n = c_size_t(0)
    args = (options_json, len(options_json), query_json, len(query_json))
    s = L.laya_route(*args, None, 0, ctypes.byref(n), ctypes.byref(err))
    if s == OK:
        out = ctypes.create_string_buffer(n.value + 1)
        s = L.laya_route(*args, out, len(out), ctypes.byref(n), ctypes.byref(err))
    if s != OK:
        raise CallError(s, err.message.decode("utf-8", "replace"))
    return out.raw[: n.value].decode("utf-8")


def _copy(fn, *args) -> str:
    """A call of the buffer convention (the size query, then the copy) as text, or CallError."""
    n = c_size_t(0)
    s = fn(*args[:1], None, 0, ctypes.byref(n), *args[1:])
    if s == OK:
        out = ctypes.create_string_buffer(n.value + 1)
        s = fn(*args[:1], out, len(out), ctypes.byref(n), *args[1:])
    if s != OK:
        raise CallError(s, lib().laya_status_string(s).decode())
    return out.raw[: n.value].decode("utf-8")


class Tournament:
    """laya_tournament: the rounds of a predict_tournament, the calls made by the caller."""

    def __init__(self, questions_json: bytes, group_size: int):
        L = lib()
        err = Error()
        handle = ctypes.c_void_p()
        s = L.laya_tournament_create(questions_json, len(questions_json), group_size,
                                     ctypes.byref(handle), ctypes.byref(err))
        if s != OK:
            raise CallError(s, err.message.decode("utf-8", "replace"))
        self.handle = handle

    def done(self) -> bool:
        return bool(lib().laya_tournament_done(self.handle))

    def next(self) -> str:
        """The questions of the next call (JSON text)."""
        return _copy(lib().laya_tournament_next, self.handle, None)

    def answer(self, result_json: bytes) -> None:
        err = Error()
        s = lib().laya_tournament_answer(self.handle, result_json, len(result_json),
                                         ctypes.byref(err))
        if s != OK:
            raise CallError(s, err.message.decode("utf-8", "replace"))

    def result(self) -> str:
        return _copy(lib().laya_tournament_result, self.handle)

    def close(self) -> None:
        if self.handle:
            lib().laya_tournament_free(self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class CallError(Exception):
    """A failed C call: its laya_status and message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class Model:
    """An open model (laya_model)."""

    def __init__(self, path: str, threads: int = 0, kernels: str = "auto", backends: str = "cpu"):
        L = lib()
        p = L.laya_model_default_params_(ABI_VERSION, ctypes.sizeof(ModelParams))
        self._keep = [path.encode(), backends.encode(), kernels.encode()]
        p.backends = self._keep[1]
        p.kernels = self._keep[2]
        p.n_threads = threads
        err = Error()
        handle = ctypes.c_void_p()
        s = L.laya_model_open_file(self._keep[0], ctypes.byref(p), ctypes.byref(handle),
                                   ctypes.byref(err))
        if s != OK:
            raise CallError(s, err.message.decode("utf-8", "replace"))
        self.handle = handle
        info = L.laya_model_info_init_(ABI_VERSION, ctypes.sizeof(ModelInfo))
        L.laya_model_info_get(self.handle, ctypes.byref(info))
        self.info = info

    def close(self) -> None:
        if self.handle:
            lib().laya_model_close(self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Context:
    """A context (laya_context) on regions of anonymous memory this object owns.

    The regions are mmap'd: pages the context never touches are never committed, so a context
    sized for the model's largest request costs what its requests use.
    """

    def __init__(self, model: Model, threads: int = 0, max_batch: int = 0,
                 rules: int = RULES_SERVER):
        L = lib()
        self.handle = None
        self._maps: List[Tuple[int, int]] = []
        lim = L.laya_context_default_limits_(ABI_VERSION, ctypes.sizeof(ContextLimits))
        lim.n_threads = threads
        lim.max_batch = max_batch
        req = L.laya_memory_requirements_init_(ABI_VERSION, ctypes.sizeof(MemoryRequirements))
        err = Error()
        s = L.laya_context_requirements(model.handle, ctypes.byref(lim), ctypes.byref(req),
                                        ctypes.byref(err))
        if s != OK:
            raise CallError(s, err.message.decode("utf-8", "replace"))
        self.limits = req.limits
        regions = (Region * REGION_COUNT)()
        for r in range(REGION_COUNT):
            size, align = int(req.size[r]), max(int(req.alignment[r]), 64)
            if size == 0:
                continue
            base = _libc.mmap(None, size + align, _PROT_RW, _MAP_PRIVATE_ANON, -1, 0)
            if base is None or base == _MAP_FAILED:
                self.close()
                raise CallError(E_MEMORY, "cannot map %d bytes: %s"
                                % (size + align, os.strerror(ctypes.get_errno())))
            self._maps.append((base, size + align))
            regions[r].data = (base + align - 1) & ~(align - 1)
            regions[r].size = size
        handle = ctypes.c_void_p()
        s = L.laya_context_create(model.handle, ctypes.byref(lim), regions, ctypes.byref(handle),
                                  ctypes.byref(err))
        if s != OK:
            self.close()
            raise CallError(s, err.message.decode("utf-8", "replace"))
        self.handle = handle
        if rules != RULES_SERVER:
            s = L.laya_context_set_rules(self.handle, rules)
            if s != OK:
                self.close()
                raise CallError(s, "laya_context_set_rules(%d) refused" % rules)
        self.model = model  # the model outlives its contexts
        self._out = ctypes.create_string_buffer(1 << 16)

    def _grow(self, need: int) -> None:
        self._out = ctypes.create_string_buffer(max(need + 1, 2 * len(self._out)))

    def error(self) -> str:
        return lib().laya_context_error(self.handle).decode("utf-8", "replace")

    def decide(self, body: bytes) -> str:
        """laya_decide: the result JSON text, or CallError."""
        L = lib()
        n = c_size_t(0)
        s = L.laya_decide(self.handle, body, len(body), self._out, len(self._out), ctypes.byref(n))
        if s == E_BUFFER_TOO_SMALL:
            self._grow(n.value)
            s = L.laya_result_json(self.handle, self._out, len(self._out), ctypes.byref(n))
        if s != OK:
            raise CallError(s, self.error())
        return self._out.raw[: n.value].decode("utf-8")

    def decide_batch(self, bodies: List[bytes]) -> List[Tuple[int, str]]:
        """laya_decide_batch: (status, JSON or message) per body."""
        L = lib()
        items = (BatchItem * len(bodies))()
        for i, b in enumerate(bodies):
            items[i].body = b
            items[i].body_len = len(b)
        n = c_size_t(0)
        while True:
            s = L.laya_decide_batch(self.handle, items, len(bodies), self._out, len(self._out),
                                    ctypes.byref(n))
            if s != E_BUFFER_TOO_SMALL:
                break
            self._grow(n.value)
        if s != OK:
            raise CallError(s, self.error())
        raw = self._out.raw
        return [(it.status, raw[it.json_offset: it.json_offset + it.json_len].decode("utf-8"))
                for it in items]

    def set_sampling(self, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
                     seed: int = 0) -> None:
        s = Sampling(temperature, top_k, top_p, seed)
        code = lib().laya_context_set_sampling(self.handle, ctypes.byref(s))
        if code != OK:
            raise CallError(code, "laya_context_set_sampling refused %r" % ((temperature, top_k,
                                                                               top_p, seed),))

    def generate(self, p: GenerateParams) -> str:
        """laya_generate with `p` (callbacks included): the new text, or CallError."""
        L = lib()
        n = c_size_t(0)
        s = L.laya_generate(self.handle, ctypes.byref(p), self._out, len(self._out),
                            ctypes.byref(n))
        if s == E_BUFFER_TOO_SMALL:
            self._grow(n.value)
            s = L.laya_result_text(self.handle, self._out, len(self._out), ctypes.byref(n))
        if s != OK:
            raise CallError(s, self.error())
        return self._out.raw[: n.value].decode("utf-8", "replace")

    def close(self) -> None:
        if self.handle:
            lib().laya_context_destroy(self.handle)
            self.handle = None
        for base, length in self._maps:
            _libc.munmap(base, length)
        self._maps = []

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
