"""Run control, the same for both Workers (threaded and asyncio;
docs/clients.md, Worker): each delivered run has a stop signal, set once
with a reason, the first one winning:

- ``"cancelled"``: a StopRun for the run (job id and lease token) came on the
  Claim stream, or an ExtendLease / ReportProgress was refused with
  JOB_CANCEL_REQUESTED;
- ``"timeout"``: the run's local deadline passed (the time the job was
  received plus ``Job.timeout_ms``: no clock is compared with the broker's),
  or the broker answered RUN_TIMED_OUT.

The handler sees it on its job (``job.cancelled``, ``job.cancel_reason``,
``job.check_cancelled()``, ``job.wait_cancelled()``); a handler that raises
once signalled is failed with the reason as the error text (``failure_after_stop``).
``RunControl`` is the threaded Worker's, ``AioRunControl`` the asyncio
Worker's; both also send the run's progress reports (``job.progress()``).
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any, Awaitable, Callable, Optional

import grpc

from ._errors import JobCancelled, JobwireError, Reason
from ._failure import Failure
from ._types import Job
from ._requests import build_progress_request
from .v1 import broker_pb2 as pb

log = logging.getLogger("jobwire.worker")

CANCELLED = "cancelled"
TIMEOUT = "timeout"

# The FAILED_PRECONDITION reasons telling a run to stop, and the signal each gives.
_STOP_REASONS = {Reason.JOB_CANCEL_REQUESTED.value: CANCELLED,
                 Reason.RUN_TIMED_OUT.value: TIMEOUT}


def stop_reason(err: JobwireError) -> Optional[str]:
    """``"cancelled"`` / ``"timeout"`` when ``err`` (an ExtendLease,
    ReportProgress or Ack refusal) tells the run to stop, else None."""
    if err.code != grpc.StatusCode.FAILED_PRECONDITION:
        return None
    return _STOP_REASONS.get(err.reason)


def local_deadline(timeout_ms: int, received: float) -> Optional[float]:
    """The run's deadline (``time.monotonic()``): ``received`` (when the job
    was read off the Claim stream) plus ``timeout_ms``; None without one."""
    return received + timeout_ms / 1000.0 if timeout_ms > 0 else None


def stop_run(run: Optional["RunControl"], stop) -> None:
    """A StopRun from the Claim stream (`stop`: queue, job id, lease token):
    tells the handler of that run, `run` as the Worker found it by job id and
    token (None when it is no longer held here)."""
    if run is None:
        log.debug("jobwire: stop for job %s/%s: not running here (finished meanwhile)",
                  stop.queue, stop.job_id)
        return
    run.signal(CANCELLED)  # REASON_CANCEL_REQUESTED, the only reason so far


def failure_after_stop(reason: str, failure: Failure) -> Failure:
    """The Fail of a signalled run whose handler raised: the reason as the
    error text (the broker writes "cancelled" / "timeout" anyway), the
    exception's non_retryable / retry_after_ms / keep_attempt kept (the
    broker counts a cancelled or timed-out run whatever keep_attempt says)."""
    return Failure(reason, failure.non_retryable, failure.retry_after_ms,
                   failure.keep_attempt)


class RunControl:
    """One run's stop signal and progress reports (threaded Worker).

    ``report(request)`` sends a ReportProgressRequest and raises JobwireError
    when refused. ``timed``: the run waits in the DeadlineTimer (guarded by
    the timer's lock).

    Thread safety: every method may be called from any thread."""

    def __init__(self, job: Job, token: str, deadline: Optional[float],
                 report: Callable[["pb.ReportProgressRequest"], Any]):
        self.job = job
        self.token = token
        self.deadline = deadline
        self.reason: Optional[str] = None  # set once, under _lock
        self.event = threading.Event()
        self.timed = False
        self._report = report
        self._lock = threading.Lock()
        job._run = self

    def signal(self, reason: str) -> bool:
        """Tells the handler to stop; False when it was told already (the
        first reason stays)."""
        with self._lock:
            if self.reason is not None:
                return False
            self.reason = reason
        self._set()
        log.info("jobwire: job %s/%s (attempt %d) told to stop: %s",
                 self.job.queue, self.job.id, self.job.attempt, reason)
        return True

    def _set(self) -> None:
        self.event.set()

    def check(self) -> None:
        """Raises JobCancelled once signalled."""
        reason = self.reason
        if reason is not None:
            raise JobCancelled(reason)

    def wait(self, timeout: Optional[float]) -> bool:
        return self.event.wait(timeout)

    def progress(self, percent: Optional[int], data: Any) -> None:
        req = build_progress_request(self.job.queue, self.job.id, self.token, percent, data)
        try:
            self._report(req)
        except JobwireError as e:
            self._refused(e)

    def _refused(self, err: JobwireError) -> None:
        """A refused progress report: JobCancelled (the run signalled) when
        it tells the run to stop, else ``err``."""
        reason = stop_reason(err)
        if reason is None:
            raise err
        self.signal(reason)
        raise JobCancelled(self.reason or reason) from None


class AioRunControl(RunControl):
    """One run's stop signal and progress reports (asyncio Worker), made and
    signalled on the event loop. ``async def`` handlers await
    ``wait`` / ``progress``; a plain-function handler (run in a thread) gets
    blocking ones: each call checks which thread it is on.

    ``report(request)`` is a coroutine function (raises JobwireError)."""

    def __init__(self, job: Job, token: str, deadline: Optional[float],
                 report: Callable[["pb.ReportProgressRequest"], Awaitable[Any]]):
        super().__init__(job, token, deadline, report)
        self._loop = asyncio.get_running_loop()
        self.aio_event = asyncio.Event()
        self.deadline_timer: Optional[asyncio.TimerHandle] = None

    def _set(self) -> None:
        self.event.set()
        if self._on_loop():
            self.aio_event.set()
        else:
            self._loop.call_soon_threadsafe(self.aio_event.set)

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def start_deadline(self) -> None:
        """Signals "timeout" at the deadline (on the loop), if there is one."""
        if self.deadline is not None:
            delay = max(self.deadline - time.monotonic(), 0.0)
            self.deadline_timer = self._loop.call_later(delay, self.signal, TIMEOUT)

    def finish(self) -> None:
        """The run is over: its deadline no longer signals."""
        if self.deadline_timer is not None:
            self.deadline_timer.cancel()

    def wait(self, timeout: Optional[float]) -> Any:
        if self._on_loop():
            return self._wait(timeout)
        return self.event.wait(timeout)

    async def _wait(self, timeout: Optional[float]) -> bool:
        try:
            await asyncio.wait_for(self.aio_event.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        return self.reason is not None

    def progress(self, percent: Optional[int], data: Any) -> Any:
        req = build_progress_request(self.job.queue, self.job.id, self.token, percent, data)
        if self._on_loop():
            return self._progress(req)
        return asyncio.run_coroutine_threadsafe(self._progress(req), self._loop).result()

    async def _progress(self, req) -> None:
        try:
            await self._report(req)
        except JobwireError as e:
            self._refused(e)
