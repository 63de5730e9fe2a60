"""Errors raised by the jobwire client.

Contract (proto/jobwire/v1/broker.proto, "Error details"): every error the
broker answers carries, in the standard gRPC binary details (trailer
``grpc-status-details-bin``, a ``google.rpc.Status``), a
``google.rpc.ErrorInfo`` of domain ``jobwire.dev`` whose ``reason`` is a
stable value (``Reason``), plus ``google.rpc.BadRequest`` (one field
violation) with ``INVALID_FIELD`` and ``google.rpc.RetryInfo`` where the
broker knows how long to wait. ``JobwireError.from_rpc_error`` decodes them
(grpcio-status, googleapis-common-protos) for sync and ``grpc.aio`` errors
alike; batch results (EnqueueResult, AckResult) carry the reason in their
``reason`` field, which the per-item errors take (``JobwireError.from_result``).
"""
from __future__ import annotations

import datetime as _dt
import decimal
import enum
from typing import Dict, Optional, Union

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

_CODE_BY_VALUE = {c.value[0]: c for c in grpc.StatusCode}

# The ErrorInfo domain of the broker's errors.
ERROR_DOMAIN = "jobwire.dev"
_DETAILS_KEY = "grpc-status-details-bin"


def status_code(value: int) -> grpc.StatusCode:
    """grpc.StatusCode for a google.rpc.Code number (UNKNOWN if out of range)."""
    return _CODE_BY_VALUE.get(int(value), grpc.StatusCode.UNKNOWN)


class Reason(str, enum.Enum):
    """The stable error reasons of the broker (``google.rpc.ErrorInfo.reason``
    and the batch results' ``reason``; broker.proto "Error details").

    A ``str`` enum: ``JobwireError.reason`` is a plain ``str`` that compares
    equal to its member (``e.reason == Reason.LEASE_STALE``, or
    ``Reason(e.reason)`` for a member, ValueError for a value this client does
    not know). A reason keeps its meaning once published; the broker may add
    new ones, and an error no row names has the name of its code as its reason
    (``"UNAVAILABLE"``, ``"INTERNAL"``, ...), which is not a member here.
    """

    INVALID_FIELD = "INVALID_FIELD"  # INVALID_ARGUMENT; metadata "field"
    JOB_NOT_FOUND = "JOB_NOT_FOUND"  # NOT_FOUND: no such job in that queue
    QUEUE_NOT_FOUND = "QUEUE_NOT_FOUND"  # NOT_FOUND (UpdateQueue)
    # NOT_FOUND (Enqueue); metadata "job_id". EnqueueBatch also: a batch parent
    # (depends_on_batch_index) that was not stored.
    DEPENDENCY_NOT_FOUND = "DEPENDENCY_NOT_FOUND"
    LEASE_STALE = "LEASE_STALE"  # FAILED_PRECONDITION: not the current lease
    JOB_STATE = "JOB_STATE"  # FAILED_PRECONDITION; metadata "state"
    JOB_CANCEL_REQUESTED = "JOB_CANCEL_REQUESTED"  # FAILED_PRECONDITION: stop the run
    RUN_TIMED_OUT = "RUN_TIMED_OUT"  # FAILED_PRECONDITION: the run passed its deadline
    QUEUE_HAS_ACTIVE_JOBS = "QUEUE_HAS_ACTIVE_JOBS"  # FAILED_PRECONDITION
    PARTITIONS_DECREASE = "PARTITIONS_DECREASE"  # FAILED_PRECONDITION
    QUEUE_EXISTS = "QUEUE_EXISTS"  # ALREADY_EXISTS (CreateQueue)
    TOKEN_MISSING = "TOKEN_MISSING"  # UNAUTHENTICATED
    TOKEN_INVALID = "TOKEN_INVALID"  # UNAUTHENTICATED
    TOKEN_NOT_PERMITTED = "TOKEN_NOT_PERMITTED"  # PERMISSION_DENIED; metadata "queue"
    REDIS_OUT_OF_MEMORY = "REDIS_OUT_OF_MEMORY"  # RESOURCE_EXHAUSTED, RetryInfo
    TOO_MANY_CLAIM_STREAMS = "TOO_MANY_CLAIM_STREAMS"  # RESOURCE_EXHAUSTED, RetryInfo
    TOO_MANY_WAITS = "TOO_MANY_WAITS"  # RESOURCE_EXHAUSTED (WaitJob), RetryInfo
    WAIT_TIMEOUT = "WAIT_TIMEOUT"  # DEADLINE_EXCEEDED (WaitJob): timeout_ms passed
    TOO_MANY_SUBSCRIPTIONS = "TOO_MANY_SUBSCRIPTIONS"  # RESOURCE_EXHAUSTED (Subscribe), RetryInfo
    SUBSCRIBER_TOO_SLOW = "SUBSCRIBER_TOO_SLOW"  # RESOURCE_EXHAUSTED (Subscribe): fell behind
    REDIS_UNAVAILABLE = "REDIS_UNAVAILABLE"  # UNAVAILABLE
    BROKER_SHUTTING_DOWN = "BROKER_SHUTTING_DOWN"  # UNAVAILABLE: reconnect
    CLAIM_STREAM_MAX_AGE = "CLAIM_STREAM_MAX_AGE"  # UNAVAILABLE (Claim): reconnect
    JOB_RECORD_CORRUPT = "JOB_RECORD_CORRUPT"  # DATA_LOSS

    def __str__(self) -> str:  # the value, on every Python version
        return self.value


def _rich_status(err: grpc.RpcError) -> Optional["status_pb2.Status"]:
    """The google.rpc.Status of a failed call (sync ``grpc.RpcError`` or
    ``grpc.aio.AioRpcError``: both answer code() / details() /
    trailing_metadata() synchronously, which is what
    ``grpc_status.rpc_status.from_call`` reads), or None when it carries none.
    grpcio-status refuses a Status whose message differs from the call's
    (e.g. rewritten by a proxy): its details are still used then, as long as
    the code matches. Details that cannot be decoded are ignored."""
    try:
        return rpc_status.from_call(err)
    except DecodeError:
        return None
    except ValueError:
        pass
    except Exception:  # not a call (no trailing_metadata()): no details
        return None
    try:
        for key, value in err.trailing_metadata() or ():
            if key == _DETAILS_KEY:
                st = status_pb2.Status.FromString(value)
                code = err.code()
                return st if code is not None and st.code == code.value[0] else None
    except Exception:
        return None
    return None


class JobwireError(Exception):
    """A failed RPC: the gRPC status code and the broker's message, unchanged,
    with the typed error details the broker attached.

    ``code`` is a ``grpc.StatusCode`` (e.g. ``grpc.StatusCode.INVALID_ARGUMENT``)
    and ``message`` the broker's text (``details`` is an alias).

    ``reason`` (str): the error's stable reason, compare it with ``Reason``
    (``if e.reason == Reason.LEASE_STALE``): the broker's
    ``google.rpc.ErrorInfo.reason``, or for a per-item error of
    ``enqueue_batch`` / ``ack_batch`` the result's ``reason`` field; ``""``
    when there is none (errors raised by the client or by gRPC itself, e.g.
    DEADLINE_EXCEEDED or a broker that cannot be reached).
    ``metadata`` (dict[str, str]): the ErrorInfo metadata (``"field"`` with
    INVALID_FIELD, ``"state"`` with JOB_STATE, ``"queue"`` with
    TOKEN_NOT_PERMITTED, ``"job_id"`` with DEPENDENCY_NOT_FOUND); ``{}`` for
    per-item batch errors.
    ``field`` (str or None): the field path of the BadRequest field violation
    (``"priority"``, ``"jobs[3].priority"``), INVALID_FIELD only.
    ``retry_delay`` (float seconds or None): the broker's RetryInfo, how long
    to wait before retrying (REDIS_OUT_OF_MEMORY, TOO_MANY_CLAIM_STREAMS,
    TOO_MANY_WAITS, TOO_MANY_SUBSCRIPTIONS).
    """

    def __init__(self, code: grpc.StatusCode, message: str, *, reason: str = "",
                 metadata: Optional[Dict[str, str]] = None, field: Optional[str] = None,
                 retry_delay: Optional[float] = None):
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.reason = str(reason or "")
        self.metadata: Dict[str, str] = dict(metadata or {})
        self.field = field
        self.retry_delay = retry_delay

    @property
    def details(self) -> str:
        return self.message

    def __str__(self) -> str:
        return "%s: %s" % (self.code.name, self.message)

    def __reduce__(self):
        # Pickles / copies keep the details (Exception's default keeps args only).
        return _rebuild, (type(self), self.code, self.message, self.reason, self.metadata,
                          self.field, self.retry_delay)

    def _copy(self) -> "JobwireError":
        """A distinct exception object with the same code, message and details."""
        return JobwireError(self.code, self.message, reason=self.reason,
                            metadata=self.metadata, field=self.field,
                            retry_delay=self.retry_delay)

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> "JobwireError":
        """The JobwireError of a failed call, sync (``grpc.RpcError``) or
        asyncio (``grpc.aio.AioRpcError``), with the details decoded from its
        ``grpc-status-details-bin`` trailer (none: reason ``""``)."""
        code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        details = err.details() if hasattr(err, "details") else str(err)
        kwargs = _decode_details(_rich_status(err)) if hasattr(err, "trailing_metadata") else {}
        return cls(code or grpc.StatusCode.UNKNOWN, details or "", **kwargs)

    @classmethod
    def from_result(cls, code: int, message: str, reason: str = "") -> "JobwireError":
        """The per-item error of a batch result (EnqueueResult / AckResult):
        its google.rpc.Code number, message and ``reason`` field."""
        return cls(status_code(code), message, reason=reason)


class JobDeadError(JobwireError):
    """``Client.wait``: the job ended DEAD (failed non-retryable, out of
    attempts, or cancelled). ``job`` is the job as the broker sent it last
    (``job.error``: its last error text). The WaitJob call itself succeeded:
    this error is made by the client, with code FAILED_PRECONDITION (the
    job's state refuses what the caller waited for), reason ``""`` and the
    message ``job <id> in queue <queue> is dead: <job.error>``."""

    def __init__(self, job):
        super().__init__(grpc.StatusCode.FAILED_PRECONDITION,
                         "job %s in queue %s is dead: %s" % (job.id, job.queue, job.error))
        self.job = job

    def __reduce__(self):
        return type(self), (self.job,)


class WaitTimeoutError(JobwireError):
    """``Client.wait``: its ``timeout`` passed before the job finished. Code
    DEADLINE_EXCEEDED; ``reason`` is ``WAIT_TIMEOUT`` with the broker's
    message when the broker ended the wait, ``""`` when the client did (its
    own deadline of the call, or the time ran out while it waited to call
    again after UNAVAILABLE or a CANCELLED it did not cause). ``job``: the
    job as last seen (its latest state), None when no message came."""

    def __init__(self, message: str, job=None, *, reason: str = "",
                 metadata: Optional[Dict[str, str]] = None):
        super().__init__(grpc.StatusCode.DEADLINE_EXCEEDED, message, reason=reason,
                         metadata=metadata)
        self.job = job

    def __reduce__(self):
        return _rebuild_wait_timeout, (self.message, self.job, self.reason, self.metadata)


class ClientCancelled(JobwireError):
    """A CANCELLED the client made itself for a call it cut (the ack
    coalescer's sending interrupted, or its channel closed), not a status
    gRPC or the broker answered: the Workers' settle rules take it for a
    CANCELLED the client caused (``_lease_rules.cut_by_client``), never
    for one of a broker shutting down. Internal; code CANCELLED."""

    def __init__(self, message: str):
        super().__init__(grpc.StatusCode.CANCELLED, message)

    def __reduce__(self):
        return ClientCancelled, (self.message,)

    def _copy(self) -> "ClientCancelled":
        return ClientCancelled(self.message)


def _rebuild_wait_timeout(message, job, reason, metadata):
    return WaitTimeoutError(message, job, reason=reason, metadata=metadata)


def _rebuild(cls, code, message, reason, metadata, field, retry_delay):
    return cls(code, message, reason=reason, metadata=metadata, field=field,
               retry_delay=retry_delay)


def _decode_details(st: Optional["status_pb2.Status"]) -> dict:
    """JobwireError keyword arguments from a google.rpc.Status's details: the
    ErrorInfo of domain jobwire.dev (else the first ErrorInfo), the first
    BadRequest field violation, the RetryInfo. Unknown details are skipped."""
    out: dict = {}
    if st is None:
        return out
    info = None
    for any_msg in st.details:
        try:
            if any_msg.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                ei = error_details_pb2.ErrorInfo()
                any_msg.Unpack(ei)
                if info is None or (info.domain != ERROR_DOMAIN and ei.domain == ERROR_DOMAIN):
                    info = ei
            elif any_msg.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                br = error_details_pb2.BadRequest()
                any_msg.Unpack(br)
                if br.field_violations and "field" not in out:
                    out["field"] = br.field_violations[0].field
            elif any_msg.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                ri = error_details_pb2.RetryInfo()
                any_msg.Unpack(ri)
                d = ri.retry_delay
                out["retry_delay"] = d.seconds + d.nanos / 1e9
        except DecodeError:
            continue
    if info is not None:
        out["reason"] = info.reason
        out["metadata"] = dict(info.metadata)
    return out


class JobCancelled(Exception):
    """Raised in a handler by ``job.check_cancelled()`` and ``job.progress()``
    once the run was told to stop: ``reason`` is ``"cancelled"`` (Cancel
    asked it to stop) or ``"timeout"`` (it passed its deadline,
    ``timeout_ms``). Let it propagate: the Worker fails the job with that
    reason as the error text (the broker makes a cancelled job DEAD
    "cancelled"; a timed-out attempt is retried or DEAD as any failure)."""

    def __init__(self, reason: str):
        super().__init__("job run stopped: %s" % reason)
        self.reason = reason

    def __reduce__(self):
        return type(self), (self.reason,)


class NonRetryableError(Exception):
    """Raise from a handler to fail the job for good (``non_retryable``):
    the job becomes DEAD whatever attempts it has left."""


# The broker's limit on retry_after_ms (FailRequest): 7 days.
MAX_RETRY_AFTER_MS = 7 * 24 * 3600 * 1000


def _delay_ms(delay) -> int:
    """``delay`` (seconds as an int / float / Decimal, or a timedelta) in whole
    milliseconds, rounded up, at least 1, at most MAX_RETRY_AFTER_MS."""
    if isinstance(delay, _dt.timedelta):
        us = (delay.days * 86400 + delay.seconds) * 1_000_000 + delay.microseconds
        ms = -(-us // 1000)
    elif isinstance(delay, (int, float, decimal.Decimal)) and not isinstance(delay, bool):
        # Through the decimal text, so that 0.1 s is 100 ms, not 101.
        exact = decimal.Decimal(str(delay)) * 1000
        if exact.is_nan():
            raise ValueError("RetryAfter delay is NaN")
        if exact.is_infinite():
            return MAX_RETRY_AFTER_MS if exact > 0 else 1
        ms = int(exact.to_integral_value(rounding=decimal.ROUND_CEILING))
    else:
        raise TypeError("RetryAfter delay must be seconds (a number) or a timedelta, got %r"
                        % (delay,))
    return min(max(ms, 1), MAX_RETRY_AFTER_MS)


class RetryAfter(Exception):
    """Raise from a handler to fail the job and have it retried after
    ``delay`` (seconds as a number, or a ``datetime.timedelta``) instead of
    the backoff: the Fail carries ``retry_after_ms``, the delay in whole
    milliseconds rounded up, at least 1 and at most 7 days (the broker's
    limit). The error text is ``"RetryAfter: <message>"`` (a subclass: its
    own name). A job with no attempt left still becomes DEAD.

    ``keep_attempt=True`` says the run was turned away rather than failed
    (a downstream answered "rate limited, retry after X"): the Fail also
    carries ``keep_attempt``, so this run does not count as an attempt and
    never uses up ``max_attempts`` (docs/semantics.md, "Retries and
    backoff"). A run that Cancel asked to stop, or past its deadline,
    counts anyway.

    An exception that is also a ``NonRetryableError`` (a subclass of both)
    fails the job for good: non-retryable wins, neither the delay nor
    ``keep_attempt`` is sent.

    ``delay`` is kept as given; ``retry_after_ms`` is what the Worker sends.
    Raises TypeError for a delay of another type, ValueError for NaN."""

    def __init__(self, delay: Union[float, int, _dt.timedelta], message: str = "",
                 keep_attempt: bool = False):
        self.retry_after_ms = _delay_ms(delay)
        super().__init__(message)
        self.delay = delay
        self.message = message
        self.keep_attempt = bool(keep_attempt)

    def __reduce__(self):
        return type(self), (self.delay, self.message, self.keep_attempt)
