"""Run deadlines for the threaded Worker: one thread signals "timeout" to
every run whose local deadline passes (_run_control), started with the
first run that has one. The asyncio Worker uses the loop's call_later.

Removed runs stay in the heap until they come up, unless they outnumber
the live ones (then the heap is rebuilt), so a worker with long timeouts
keeps no more than about twice its running jobs.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import List, Optional, Tuple

from ._run_control import TIMEOUT, RunControl


class DeadlineTimer:
    """Thread safety: every method may be called from any thread."""

    def __init__(self):
        self._cond = threading.Condition()
        # (deadline, tie-breaker, run); runs no longer ``timed`` are skipped.
        # Guarded by _cond, as is every run's ``timed``.
        self._due: List[Tuple[float, int, RunControl]] = []
        self._order = itertools.count()
        self._live = 0
        self._closed = False
        self._thread: Optional[threading.Thread] = None

    def add(self, run: RunControl) -> None:
        """Signals ``run`` "timeout" at its deadline, unless removed first
        (nothing for a run without a deadline)."""
        if run.deadline is None:
            return
        with self._cond:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="jobwire-deadline-timer")
                self._thread.start()
            run.timed = True
            self._live += 1
            earliest = not self._due or run.deadline < self._due[0][0]
            heapq.heappush(self._due, (run.deadline, next(self._order), run))
            if earliest:
                self._cond.notify()

    def remove(self, run: RunControl) -> None:
        """No signal for ``run`` after this (its handler has returned)."""
        with self._cond:
            if not run.timed:
                return
            run.timed = False
            self._live -= 1
            if len(self._due) > 2 * self._live + 64:
                self._due = [entry for entry in self._due if entry[2].timed]
                heapq.heapify(self._due)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                fired: List[RunControl] = []
                while not fired:
                    if self._closed:
                        return
                    now = time.monotonic()
                    while self._due and (self._due[0][0] <= now or not self._due[0][2].timed):
                        _, _, run = heapq.heappop(self._due)
                        if run.timed:
                            run.timed = False
                            self._live -= 1
                            fired.append(run)
                    if not fired:
                        self._cond.wait(self._due[0][0] - now if self._due else None)
            for run in fired:
                run.signal(TIMEOUT)
