"""The state of one ``Client.wait`` (sync and asyncio alike): follows a job
over WaitJob calls until it is COMPLETED or DEAD, calling again after
UNAVAILABLE, or a CANCELLED the client did not cause (a broker shutting down:
``_reconnect.broker_went_away``), with the reconnect backoff and the time
that remains (docs/clients.md, Producer)."""
from __future__ import annotations

import math
import time
from typing import Optional, Tuple

import grpc

from ._errors import JobDeadError, JobwireError, Reason, WaitTimeoutError
from ._reconnect import broker_went_away, reconnect_delay
from ._types import Job, JobState
from .v1 import broker_pb2 as pb

# How long past the wait's timeout the call's own gRPC deadline lies: the
# broker ends the call at the timeout (WAIT_TIMEOUT, with the job's latest
# state); the deadline only ends a call the broker no longer answers.
DEADLINE_MARGIN_S = 1.0


def check_timeout(timeout) -> Optional[float]:
    """``timeout`` in seconds as a float, or None for no limit. Raises
    TypeError / ValueError unless it is None or a number > 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError("wait timeout must be seconds (a number) or None, got %r" % (timeout,))
    if not timeout > 0 or math.isinf(timeout):
        raise ValueError("wait timeout must be a finite number of seconds > 0, got %r" % (timeout,))
    return float(timeout)


def _seen(job: Job) -> tuple:
    """What a wait reports a change of: state, attempts and progress."""
    return job.state, job.attempt, job.progress_percent, job.progress_data


class Waiter:
    """One wait: what to send, what each message means, what each error
    means. Not thread-safe (one wait, one caller)."""

    def __init__(self, queue: str, job_id: str, timeout: Optional[float]):
        self.queue = queue
        self.job_id = job_id
        self.timeout = check_timeout(timeout)
        self.deadline = None if self.timeout is None else time.monotonic() + self.timeout
        self.last: Optional[Job] = None
        self._attempt = 0  # calls failed (broker_went_away) since a message came
        self._resumed = False  # the next message is the first of a later call

    def request(self) -> Tuple["pb.WaitJobRequest", Optional[float]]:
        """The next call's request and gRPC deadline (seconds; None: none).
        Raises WaitTimeoutError when the time is up."""
        req = pb.WaitJobRequest(queue=self.queue, job_id=self.job_id)
        self._resumed = self.last is not None
        if self.deadline is None:
            return req, None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise WaitTimeoutError("job %s in queue %s did not finish within %gs"
                                   % (self.job_id, self.queue, self.timeout), self.last)
        req.timeout_ms = max(1, math.ceil(left * 1000))
        return req, left + DEADLINE_MARGIN_S

    def take(self, resp: "pb.WaitJobResponse") -> Optional[Job]:
        """The job a message carries, or None when it only repeats, as the
        first message of a later call, the state, attempts and progress last
        seen."""
        if not resp.HasField("job"):
            raise JobwireError(grpc.StatusCode.INTERNAL, "WaitJob sent a message without a job")
        job = Job.from_proto(resp.job)
        repeat = (self._resumed and self.last is not None
                  and _seen(job) == _seen(self.last))
        self._resumed = False
        self._attempt = 0
        self.last = job
        return None if repeat else job

    @staticmethod
    def finished(job: Job) -> bool:
        """True when the job is COMPLETED; raises JobDeadError when it is DEAD."""
        if job.state == JobState.DEAD:
            raise JobDeadError(job)
        return job.state == JobState.COMPLETED

    def retry_delay(self, err: JobwireError, *, cancelled_by_client: bool) -> float:
        """How long to wait (seconds) before calling again after the call
        failed with ``err`` (UNAVAILABLE: the broker restarts or drains, or
        Redis is down; or CANCELLED when ``cancelled_by_client`` is false: a
        broker shutting down, grpc/grpc#41785, see
        ``_reconnect.broker_went_away``), at most until the deadline. Raises
        any other error: WaitTimeoutError for DEADLINE_EXCEEDED with a
        timeout or the reason WAIT_TIMEOUT, else ``err`` itself (CANCELLED
        too when ``cancelled_by_client``: the Client was closed)."""
        if err.code == grpc.StatusCode.DEADLINE_EXCEEDED and (
                self.deadline is not None or err.reason == Reason.WAIT_TIMEOUT):
            raise WaitTimeoutError(err.message, self.last, reason=err.reason,
                                   metadata=err.metadata) from None
        if not broker_went_away(err.code, cancelled_by_client):
            raise err
        delay = reconnect_delay(self._attempt)
        self._attempt += 1
        if self.deadline is not None:
            delay = min(delay, max(0.0, self.deadline - time.monotonic()))
        return delay

    def ended(self) -> None:
        """The call ended OK before a finished job: a broker bug. Raises."""
        raise JobwireError(grpc.StatusCode.INTERNAL,
                           "WaitJob ended before job %s in queue %s finished"
                           % (self.job_id, self.queue))
