"""Value types shared by the producer and the worker."""
from __future__ import annotations

import datetime as _dt
import enum
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import grpc

from ._errors import JobwireError


class JobState(enum.IntEnum):
    """The broker's job states (same numbers as ``jobwire.v1.JobState``)."""

    UNSPECIFIED = 0
    PENDING = 1
    ACTIVE = 2
    COMPLETED = 3
    DEAD = 4


def encode_payload(value: Any) -> bytes:
    """bytes-like values pass through unchanged; anything else becomes JSON."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_result(value: Any) -> bytes:
    """Handler return value → Ack result: bytes unchanged, None → empty,
    anything else JSON."""
    if value is None:
        return b""
    return encode_payload(value)


def to_ms(value: Any, what: str) -> int:
    """Milliseconds from an int/float (ms) or a timedelta."""
    if isinstance(value, _dt.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("%s must be milliseconds (int) or a timedelta, got %r" % (what, value))
    return int(value)


def to_epoch_ms(value: Any) -> int:
    """Epoch milliseconds from an int/float (ms) or a datetime."""
    if isinstance(value, _dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("run_at must be epoch milliseconds (int) or a datetime, got %r" % (value,))
    return int(value)


def check_headers(headers: Any) -> Dict[str, str]:
    """The job headers given to enqueue as a plain dict: a Mapping of str to
    str (None: none). Only the types are checked here; the broker checks the
    limits (keys, sizes, count) and names ``headers`` when it refuses them."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise TypeError("headers must be a mapping of str to str, got %r" % (headers,))
    out: Dict[str, str] = {}
    for key, value in headers.items():
        if not isinstance(key, str):
            raise TypeError("header keys must be str, got %r" % (key,))
        if not isinstance(value, str):
            raise TypeError("header %r: values must be str, got %r" % (key, value))
        out[key] = value
    return out


def check_depends_on(depends_on: Any) -> List[str]:
    """The parent ids given to enqueue as a list: a sequence of str (None:
    none). A str itself is refused (it would be read as its characters), as
    are items that are not str; the broker checks the rest (0..20 distinct
    entries, each a job id of the queue or a ref ``"<queue>/<id>"`` to a job
    of another queue) and names ``depends_on`` when it refuses them."""
    if depends_on is None:
        return []
    if isinstance(depends_on, (str, bytes)) or not isinstance(depends_on, Sequence):
        raise TypeError("depends_on must be a sequence of job ids (str), got %r" % (depends_on,))
    for job_id in depends_on:
        if not isinstance(job_id, str):
            raise TypeError("depends_on: job ids must be str, got %r" % (job_id,))
    return list(depends_on)


_INT32_MAX = 2**31 - 1


def check_depends_on_batch_index(indexes: Any) -> List[int]:
    """The batch parents given to ``enqueue_batch`` as a list: a sequence of
    int (None: none), each an index in the batch's jobs (int32). A str, a
    bool, an item that is not an int or one outside int32 is refused here
    (the request could not carry it); the broker checks the rest (earlier
    jobs of the batch, same queue, distinct, at most 20 parents with
    ``depends_on``) and names ``depends_on_batch_index`` when it refuses
    them."""
    if indexes is None:
        return []
    if isinstance(indexes, (str, bytes)) or not isinstance(indexes, Sequence):
        raise TypeError("depends_on_batch_index must be a sequence of batch indexes (int), got %r"
                        % (indexes,))
    for index in indexes:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError("depends_on_batch_index: indexes must be int, got %r" % (index,))
        if not -_INT32_MAX - 1 <= index <= _INT32_MAX:
            raise TypeError("depends_on_batch_index: index %r is outside int32" % (index,))
    return list(indexes)


@dataclass(frozen=True)
class JobError:
    """One entry of ``Job.errors``: the run that failed (``attempt``; 0 for a
    job cancelled before its first run), when (``at_ms``, Redis clock) and
    its error, cut to at most 512 bytes (at a character boundary)."""

    attempt: int
    at_ms: int
    error: str


def _loads(data: bytes) -> Any:
    if not data:
        return None
    return json.loads(data.decode("utf-8"))


@dataclass
class Job:
    """A job as the broker reports it (``Client.get_job``) or as a handler
    receives it (``attempt`` is 1 for the first run; ``lease_expires_at_ms``
    follows the renewals while the handler runs).

    Delivered to a handler, it also carries the lease: ``lease_ms``, the
    lease length the broker granted (the Worker's ``lease_ms`` or the
    broker's default; 0 from ``get_job`` or from a broker older than the
    field), and ``lease_lost`` / ``lease_lost_event``, set as soon as a
    renewal is refused (FAILED_PRECONDITION / NOT_FOUND: the job moved on,
    its outcome will be refused).

    Run control (docs/clients.md, Worker): ``timeout_ms`` (the longest a run
    may take; 0: no limit), ``run_deadline_ms`` (the current run's deadline,
    Redis clock; 0 when none), ``cancel_requested_at_ms`` (when Cancel asked
    the current run to stop; 0 when it did not), ``progress_percent`` (0..100,
    None when no report gave one) and ``progress_data`` (the latest report's
    bytes). A handler's job also carries the run's stop signal:
    ``cancelled``, ``cancel_reason``, ``deadline``, ``check_cancelled()``,
    ``wait_cancelled()``, and reports progress with ``progress()``.

    ``headers``: the producer's headers (``enqueue(..., headers=...)``), a
    plain dict of str to str, unchanged (empty when none were given).
    ``concurrency_key``: the key given at enqueue ("" when none).
    Dependencies (``enqueue(..., depends_on=[...])``; docs/semantics.md,
    "Dependencies"): ``depends_on``, the parent ids as given (a list of str;
    with ``enqueue_batch``'s ``depends_on_batch_index``, also the ids its
    batch parents got);
    ``dependencies_left``, the parents not ended yet (0 once the job is due,
    so always 0 on a handler's job); ``dependency_results``, a dict of parent
    id to its result (bytes), filled as each parent completes (a parent that
    completed without a result, or failed under
    ``run_after_failed_dependency``, is absent); and
    ``run_after_failed_dependency``, as given.
    ``errors``: the error history, a list of ``JobError`` for the last 10
    failed runs and a cancel that made the job dead, oldest first
    (``error`` is the latest, whole)."""

    id: str
    queue: str
    type: str
    payload: bytes
    attempt: int
    max_attempts: int
    lease_expires_at_ms: int = 0
    priority: int = 0
    state: JobState = JobState.UNSPECIFIED
    available_at_ms: int = 0
    result: bytes = b""
    error: str = ""
    idempotency_key: str = ""
    created_at_ms: int = 0
    finished_at_ms: int = 0
    backoff_base_ms: int = 0
    backoff_max_ms: int = 0
    worker_id: str = ""
    lease_ms: int = 0
    timeout_ms: int = 0
    run_deadline_ms: int = 0
    cancel_requested_at_ms: int = 0
    progress_percent: Optional[int] = None
    progress_data: bytes = b""
    headers: Dict[str, str] = field(default_factory=dict)
    concurrency_key: str = ""
    errors: List[JobError] = field(default_factory=list)
    depends_on: List[str] = field(default_factory=list)
    dependencies_left: int = 0
    dependency_results: Dict[str, bytes] = field(default_factory=dict)
    run_after_failed_dependency: bool = False
    # Set by the Worker that runs the job (threading.Event, or asyncio.Event
    # in jobwire.aio); None otherwise.
    _lease_lost_event: Any = field(default=None, init=False, repr=False, compare=False)
    # The run's stop signal and progress reports (_run_control.RunControl or
    # AioRunControl), set by the Worker that runs the job; None otherwise.
    _run: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def lease_lost(self) -> bool:
        """True once the broker refused a renewal of this job's lease (the
        job moved on: its Ack / Fail will be refused). A handler may stop
        early; the Worker sends its outcome anyway. Always False for a job
        not run by a Worker."""
        event = self._lease_lost_event
        return event is not None and event.is_set()

    @property
    def lease_lost_event(self) -> Any:
        """The event set when the lease is lost (see ``lease_lost``): a
        ``threading.Event`` from ``jobwire.Worker`` (``job.lease_lost_event.wait(t)``
        in a handler thread), an ``asyncio.Event`` from ``jobwire.aio.Worker``
        (``await job.lease_lost_event.wait()`` in an ``async def`` handler; a
        plain-function handler there reads ``job.lease_lost``). None for a job
        not run by a Worker (e.g. from ``get_job``)."""
        return self._lease_lost_event

    @property
    def cancelled(self) -> bool:
        """True once the run was told to stop (see ``cancel_reason``). The
        handler should give up: raise (``check_cancelled()`` does) and the
        Worker fails the job with the reason as its error. Always False for
        a job not run by a Worker."""
        return self._run is not None and self._run.reason is not None

    @property
    def cancel_reason(self) -> Optional[str]:
        """Why the run was told to stop: ``"cancelled"`` (Cancel asked it:
        pushed on the Claim stream, or a renewal / progress report refused
        with JOB_CANCEL_REQUESTED) or ``"timeout"`` (its local deadline
        passed, or the broker answered RUN_TIMED_OUT); None while it runs
        on (and for a job not run by a Worker)."""
        return None if self._run is None else self._run.reason

    @property
    def deadline(self) -> Optional[float]:
        """The run's local deadline, a ``time.monotonic()`` value: when the
        Worker received the job plus ``timeout_ms``; None when the job has no
        timeout (or is not run by a Worker)."""
        return None if self._run is None else self._run.deadline

    def check_cancelled(self) -> None:
        """Raises ``jobwire.JobCancelled`` (``.reason``) once the run was
        told to stop; returns otherwise."""
        if self._run is not None:
            self._run.check()

    def wait_cancelled(self, timeout: Optional[float] = None) -> Any:
        """Blocks until the run is told to stop, or ``timeout`` seconds
        (None: no limit) pass; returns ``cancelled``. From
        ``jobwire.aio.Worker``, in an ``async def`` handler, it is a
        coroutine: ``await job.wait_cancelled(5)``. RuntimeError for a job
        not run by a Worker."""
        return self._worker_run().wait(timeout)

    def progress(self, percent: Optional[int] = None, data: Any = b"") -> Any:
        """Reports the run's progress (ReportProgress with its lease token):
        ``percent`` 0..100 (None: none) and ``data`` (at most 4096 bytes;
        bytes unchanged, anything else JSON), replacing the job's progress
        as a whole; at least one is required. Raises ``JobCancelled`` when
        the broker refused it because the run was told to stop
        (JOB_CANCEL_REQUESTED, RUN_TIMED_OUT: the job is signalled too), else
        ``JobwireError`` (INVALID_ARGUMENT naming ``percent`` / ``data``, ...).
        From ``jobwire.aio.Worker``, in an ``async def`` handler, it is a
        coroutine: ``await job.progress(50)``. RuntimeError for a job not run
        by a Worker (``Client.report_progress`` takes the lease token)."""
        return self._worker_run().progress(percent, data)

    def _worker_run(self) -> Any:
        if self._run is None:
            raise RuntimeError("job %s was not delivered by a Worker: no run to control"
                               % self.id)
        return self._run

    @property
    def attempts(self) -> int:
        """The broker's name for ``attempt`` (runs so far, this one included)."""
        return self.attempt

    def json(self) -> Any:
        """The payload decoded as JSON (None for an empty payload)."""
        return _loads(self.payload)

    def result_json(self) -> Any:
        """The result decoded as JSON (None for an empty result)."""
        return _loads(self.result)

    @classmethod
    def from_proto(cls, pb, lease_expires_at_ms: Optional[int] = None,
                   lease_ms: int = 0) -> "Job":
        try:
            state = JobState(pb.state)
        except ValueError:
            state = JobState.UNSPECIFIED
        return cls(
            id=pb.id,
            queue=pb.queue,
            type=pb.type,
            payload=bytes(pb.payload),
            attempt=pb.attempts,
            max_attempts=pb.max_attempts,
            lease_expires_at_ms=(
                pb.lease_expires_at_ms if lease_expires_at_ms is None else lease_expires_at_ms
            ),
            priority=pb.priority,
            state=state,
            available_at_ms=pb.available_at_ms,
            result=bytes(pb.result),
            error=pb.error,
            idempotency_key=pb.idempotency_key,
            created_at_ms=pb.created_at_ms,
            finished_at_ms=pb.finished_at_ms,
            backoff_base_ms=pb.backoff_base_ms,
            backoff_max_ms=pb.backoff_max_ms,
            worker_id=pb.worker_id,
            lease_ms=lease_ms,
            timeout_ms=pb.timeout_ms,
            run_deadline_ms=pb.run_deadline_ms,
            cancel_requested_at_ms=pb.cancel_requested_at_ms,
            progress_percent=(pb.progress_percent if pb.HasField("progress_percent")
                              else None),
            progress_data=bytes(pb.progress_data),
            headers=dict(pb.headers),
            concurrency_key=pb.concurrency_key,
            errors=[JobError(e.attempt, e.at_ms, e.error) for e in pb.errors],
            depends_on=list(pb.depends_on),
            dependencies_left=pb.dependencies_left,
            dependency_results={k: bytes(v) for k, v in pb.dependency_results.items()},
            run_after_failed_dependency=pb.run_after_failed_dependency,
        )


@dataclass(frozen=True)
class EnqueueResult:
    """Outcome of one enqueue. From ``enqueue_batch`` a job the broker refused
    has ``error`` set (a JobwireError with the per-job code, message and
    ``reason``) and an empty ``job_id``."""

    job_id: str
    duplicate: bool = False
    error: Optional[JobwireError] = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class AckResult:
    """Outcome of one ack of ``ack_batch``. ``error`` is None when the job is
    COMPLETED with the result (or already was, by an ack with the same
    token), else a JobwireError with the per-ack code, message and ``reason``:
    INVALID_ARGUMENT (the message names ``acks[<i>].<field>``), NOT_FOUND, or
    FAILED_PRECONDITION (the token is not the job's current lease)."""

    queue: str
    job_id: str
    error: Optional[JobwireError] = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Outcome:
    """A final outcome reported to the worker's ``on_outcome`` hook.

    kind: ``ack_ok``, ``ack_error``, ``ack_unknown``, ``fail_ok``,
    ``fail_error``, ``fail_unknown`` or ``expired_dropped``.
    ``*_error``: the broker refused the Ack / Fail (stored nothing).
    ``*_unknown``: the Ack / Fail was still answered UNAVAILABLE /
    DEADLINE_EXCEEDED, or CANCELLED the client did not cause (a broker
    shutting down, grpc/grpc#41785), when the lease ended: it may or may not
    have been stored. ``expired_dropped``: the delivery's lease had ended before its
    handler could start; no handler ran and nothing was sent (the broker
    delivers the job again).
    code: the gRPC code of the last answer for ``*_error`` / ``*_unknown``
    (else None).
    fail_outcome: ``RETRY_SCHEDULED`` or ``DEAD`` for ``fail_ok``.
    error: the error text sent with a Fail, or the broker's message for
    ``*_error`` / ``*_unknown``.
    reason: the error's reason (``jobwire.Reason``, e.g. ``LEASE_STALE``) for
    ``*_error`` / ``*_unknown``; ``""`` when the answer carried none (and for
    the other kinds).
    lease_lost: the job's lease was reported lost while its handler ran
    (``job.lease_lost`` was True when the handler returned). A loss learnt
    after that, while the Ack / Fail is in flight or retried (e.g. a renewal
    refused because that very Ack completed the job), does not set it; the
    Worker still acts on it (an Ack / Fail left unanswered is sent once more)
    and sets ``job.lease_lost_event``. False for ``expired_dropped``.
    """

    kind: str
    job: Job
    code: Optional[grpc.StatusCode] = None
    fail_outcome: Optional[str] = None
    next_attempt_at_ms: int = 0
    error: str = ""
    lease_lost: bool = False
    reason: str = ""


@dataclass(frozen=True)
class QueueEvent:
    """One event of ``Client.subscribe``: what happened to a job.

    ``kind``: ``'enqueued'``, ``'active'``, ``'completed'``, ``'retry'``,
    ``'dead'``, ``'cancelled'``, ``'lease_expired'``, ``'released'``,
    ``'redriven'``, ``'deleted'``, ``'progress'``, ``'cancel_requested'``,
    ``'timed_out'`` (broker.proto, EventKind), ``'unknown'``
    for a kind this client does not know (a newer broker's), or
    ``'events_missed'``, made by the client: events may have been lost just
    before it (``queue``, ``job_id`` empty; read the jobs with ``get_job`` if
    they matter).
    ``queue``: as ``subscribe`` named it. ``job_id``: empty for
    ``'events_missed'`` and the queue-wide ``'deleted'`` of DeleteQueue.
    ``attempts``: the job's attempts after the event (runs started so far).
    ``at_ms``: when it happened, Redis time, epoch ms (0 for
    ``'events_missed'``). ``result`` (``'completed'``) and ``error``
    (``'retry'``, ``'dead'``): only with ``include_details=True``, as read from
    the job just after the event (empty when it was gone by then).
    ``progress_percent`` (``'progress'``): the percentage reported, None
    when the report had none; ``progress_data``: the job's progress data just
    after it, only with ``include_details=True``."""

    kind: str
    queue: str = ""
    job_id: str = ""
    type: str = ""
    attempts: int = 0
    at_ms: int = 0
    result: bytes = b""
    error: str = ""
    progress_percent: Optional[int] = None
    progress_data: bytes = b""

    def result_json(self) -> Any:
        """The result decoded as JSON (None for an empty result)."""
        return _loads(self.result)
