"""`Decoder`: a decoder decision LM (a GGUF or a decoder `.laya`) — schema decisions that cannot be
invalid, and generation as an iterator of text pieces (docs/generation.md)."""
from __future__ import annotations

import ctypes
import json
import os
import queue
import threading
from typing import Any, Dict, Iterator, List, Optional

from . import _capi
from ._pool import ContextPool
from .agent import LayaRuntimeError, _raise

_END = "end"


class Decoder:
    """`decide(system=..., state=..., schema=..., fallback=...)` answers with the runtime's
    decision JSON (`decision`, `fields`, `fallback`, `usage`, `timings`; docs/generation.md);
    `generate(...)` yields the new text piece by piece."""

    def __init__(self, path: str, threads: int = 0, contexts: Optional[int] = None,
                 kernels: str = "auto"):
        if not os.path.exists(path):
            raise FileNotFoundError("no model at %r" % path)
        try:
            self._model = _capi.Model(path, threads=threads, kernels=kernels)
        except _capi.CallError as e:
            _raise(e)
        if self._model.info.kind != _capi.MODEL_DECODER:
            self._model.close()
            raise ValueError("%s is a Laya encoder model; use laya_runtime.load" % path)
        self.path = path
        i = self._model.info
        self.info = {"name": i.name.decode(), "architecture": i.architecture.decode(),
                     "weight_dtypes": i.weight_dtypes.decode(), "parameters": i.parameters,
                     "layers": i.layers, "hidden_size": i.hidden_size,
                     "vocab_size": i.vocab_size, "context_length": i.max_tokens,
                     "chat_format": i.chat_format.decode()}
        self._pool = ContextPool(contexts if contexts is not None else 1,
                                 lambda: _capi.Context(self._model, threads=threads))

    def decide(self, system: Optional[str] = None, state: Any = None, schema: Any = None,
               fallback: Any = None, *, questions: Optional[Dict[str, Any]] = None,
               states: Optional[List[Any]] = None, max_tokens: Optional[int] = None,
               deadline_ms: Optional[int] = None, min_confidence: Optional[float] = None,
               temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
               seed: int = 0) -> Any:
        """A schema decision (or typed `questions`) about `state` (or each of `states`)."""
        if (schema is None) == (questions is None):
            raise ValueError("pass exactly one of schema= or questions=")
        if (state is None) == (states is None):
            raise TypeError("pass exactly one of state= or states=")
        body: Dict[str, Any] = {}
        if system is not None:
            body["system"] = system
        if states is not None:
            body["states"] = list(states)
        else:
            body["state"] = state
        if schema is not None:
            body["schema"] = schema
            if fallback is not None:
                body["fallback"] = fallback
        else:
            body["questions"] = questions
        for k, v in (("max_tokens", max_tokens), ("deadline_ms", deadline_ms),
                     ("min_confidence", min_confidence)):
            if v is not None:
                body[k] = v
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            with self._pool.context() as ctx:
                ctx.set_sampling(temperature, top_k, top_p, seed)
                return json.loads(ctx.decide(data))
        except _capi.CallError as e:
            _raise(e)

    def generate(self, prompt: Optional[str] = None, *, system: Optional[str] = None,
                 messages: Optional[List[Dict[str, str]]] = None, max_tokens: int = 16,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 stop_after_json: bool = False) -> Iterator[str]:
        """New text piece by piece (one per token). `prompt` alone is raw text; with `system`,
        or as `messages` ([{"role", "content"}, ...]), the model's chat template renders it.
        Closing the iterator early stops the generation."""
        if (prompt is None) == (messages is None):
            raise ValueError("pass exactly one of prompt= or messages=")
        if messages is None and system is not None:
            messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        keep: List[Any] = []
        p = _capi.lib().laya_generate_params_init_(_capi.ABI_VERSION,
                                                   ctypes.sizeof(_capi.GenerateParams))
        if messages is not None:
            arr = (_capi.Message * len(messages))()
            for i, m in enumerate(messages):
                role, content = m["role"].encode(), m["content"].encode()
                keep += [role, content]
                arr[i].role, arr[i].content = role, content
            p.messages, p.n_messages = arr, len(messages)
            keep.append(arr)
        else:
            text = prompt.encode()
            keep.append(text)
            p.prompt = text
        p.max_tokens = max_tokens
        p.sampling = _capi.Sampling(temperature, top_k, top_p, seed)
        p.stop_after_json = int(stop_after_json)
        pieces: "queue.Queue[Any]" = queue.Queue()
        stop = threading.Event()
        pending = bytearray()  # a piece may end inside a UTF-8 character

        def on_token(user, token, piece, n):
            pending.extend(ctypes.string_at(piece, n))
            try:
                text = pending.decode("utf-8")
            except UnicodeDecodeError:
                return 1 if stop.is_set() else 0
            pending.clear()
            pieces.put(text)
            return 1 if stop.is_set() else 0

        def abort(user):
            return 1 if stop.is_set() else 0

        p.on_token = _capi.TOKEN_FN(on_token)
        p.abort = _capi.ABORT_FN(abort)
        keep += [p.on_token, p.abort]

        def run():
            try:
                with self._pool.context() as ctx:
                    pieces.put((_END, ctx.generate(p)))
            except _capi.CallError as e:
                pieces.put(e)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        emitted = []
        try:
            while True:
                item = pieces.get()
                if isinstance(item, tuple):
                    # The end: what no piece carried yet (a character whose bytes the last tokens
                    # left incomplete), as the library decodes the whole answer.
                    text, so_far = item[1], "".join(emitted)
                    if text.startswith(so_far) and len(text) > len(so_far):
                        yield text[len(so_far):]
                    break
                if isinstance(item, _capi.CallError):
                    if item.code == _capi.E_ABORTED and stop.is_set():
                        break
                    _raise(item)
                emitted.append(item)
                yield item
        finally:
            stop.set()
            worker.join()
            del keep

    def close(self) -> None:
        self._pool.close()
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
        return False


__all__ = ["Decoder", "LayaRuntimeError"]
