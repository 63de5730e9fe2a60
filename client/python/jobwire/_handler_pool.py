"""The threaded Worker's handler threads (docs/clients.md, Worker)."""
from __future__ import annotations

import logging
import queue as _queue
import threading
from typing import Callable

log = logging.getLogger("jobwire.worker")


class HandlerPool:
    """A small thread pool that grows only when every thread is busy.

    Normally it holds ``concurrency`` threads (the Claim stream never
    delivers more jobs than free slots); the rare extra job (the broker
    freed a slot because a lease was lost while its handler still runs) gets
    its own thread instead of waiting, so the worker never holds a job it
    does not start. Threads are daemons so that handlers abandoned after the
    stop grace do not keep the process alive.

    Thread safety: ``submit`` and ``shutdown`` may be called from any
    thread."""

    def __init__(self, name: str):
        self._name = name
        self._tasks: "_queue.SimpleQueue" = _queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._closed = False

    def submit(self, fn: Callable, *args) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("pool is shut down")
            if self._idle > 0:
                self._idle -= 1
            else:
                self._threads += 1
                t = threading.Thread(target=self._loop, daemon=True,
                                     name="%s-handler-%d" % (self._name, self._threads))
                t.start()
            self._tasks.put((fn, args))

    def _loop(self) -> None:
        while True:
            item = self._tasks.get()
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except BaseException:  # never lose a pool thread
                log.exception("jobwire: unexpected error in handler thread")
            with self._lock:
                if self._closed:
                    return
                self._idle += 1

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            n = self._threads
        for _ in range(n):
            self._tasks.put(None)
