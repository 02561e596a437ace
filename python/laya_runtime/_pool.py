"""A pool of contexts on one model: a call takes one (making it, up to `size`, on first need) and
gives it back, so `size` Python threads decide at once (ctypes releases the GIL during calls)."""
from __future__ import annotations

import contextlib
import queue
import threading
from typing import Callable, Iterator

from . import _capi


class ContextPool:
    def __init__(self, size: int, make: Callable[[], _capi.Context]):
        self.size = max(1, size)
        self._make = make
        self._free: "queue.LifoQueue[_capi.Context]" = queue.LifoQueue()
        self._made = 0
        self._lock = threading.Lock()

    def _acquire(self) -> _capi.Context:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            make = self._made < self.size
            if make:
                self._made += 1
        if not make:
            return self._free.get()
        try:
            return self._make()
        except BaseException:
            with self._lock:
                self._made -= 1
            raise

    @contextlib.contextmanager
    def context(self) -> Iterator[_capi.Context]:
        ctx = self._acquire()
        try:
            yield ctx
        finally:
            self._free.put(ctx)

    def close(self) -> None:
        while True:
            try:
                self._free.get_nowait().close()
            except queue.Empty:
                break
