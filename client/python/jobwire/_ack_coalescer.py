"""Turns the Acks of a Worker's concurrent handlers into AckBatch calls (the
design of client/cpp/ack_coalescer.h). A "call" is whatever the ``send``
function does with a batch: the Workers send it on their Work stream when
one is open (_work_stream), else as an AckBatch call (``batch_sender``).

An ack that finds no AckBatch in flight is sent at once, with whatever is
queued (up to 1000 acks in one call); acks that finish while a call is in
flight are queued and go in the next call. Coalescing so adds no delay, and
under load the calls per job drop to about 1 / (acks finishing during one
round trip). Each ack gets its own outcome: its per-ack result, or the
call's error when the whole call failed; retrying (UNAVAILABLE ...) is left
to the caller, per job.

``AckCoalescer`` is for handler threads (the sending thread is the one whose
ack found no call in flight; the others queue their ack and go on without
waiting for its answer); ``AioAckCoalescer`` for asyncio tasks (a task of
its own sends while acks are queued).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
from typing import Awaitable, Callable, Deque, List, Optional

import grpc
import grpc.aio

from ._errors import ClientCancelled, JobwireError
from ._requests import ack_batch_errors
from .v1 import broker_pb2 as pb

log = logging.getLogger("jobwire.worker")

# The most acks sent in one AckBatch (the broker's limit).
MAX_BATCH = 1000
# The most result bytes in one AckBatch, unless one result alone is larger:
# well under the broker's 64 MiB request limit.
MAX_BATCH_BYTES = 8 * 1024 * 1024


def _take(queued: Deque) -> list:
    """Removes and returns the oldest queued items (``_Entry`` or tuples
    starting with one) that fit one AckBatch: at most MAX_BATCH acks and
    MAX_BATCH_BYTES of results (always at least one)."""
    n, size = 0, 0
    for item in queued:
        entry = item[0] if isinstance(item, tuple) else item
        result_size = len(entry.request.result)
        if n == MAX_BATCH or (n > 0 and size + result_size > MAX_BATCH_BYTES):
            break
        n, size = n + 1, size + result_size
    return [queued.popleft() for _ in range(n)]

# send(requests, timeout) -> one error per request, in order (None: acked);
# raises JobwireError when the call failed as a whole.
SendBatch = Callable[[List["pb.AckRequest"], float], List[Optional[JobwireError]]]
# done(error) for AckCoalescer.submit: None when the ack was stored.
AckDone = Callable[[Optional[JobwireError]], None]
AioSendBatch = Callable[[List["pb.AckRequest"], float], Awaitable[List[Optional[JobwireError]]]]


def batch_sender(stub, metadata) -> SendBatch:
    """``send`` for AckCoalescer: one AckBatch call on ``stub`` (a BrokerStub)
    with the per-call ``metadata`` (the bearer token)."""
    def send(requests: List["pb.AckRequest"], timeout: float) -> List[Optional[JobwireError]]:
        try:
            resp = stub.AckBatch(pb.AckBatchRequest(acks=requests), timeout=timeout,
                                 metadata=metadata)
        except grpc.RpcError as e:
            raise JobwireError.from_rpc_error(e) from None
        except ValueError:  # channel closed: the worker was shut down
            raise ClientCancelled("channel closed") from None
        return ack_batch_errors(requests, resp)
    return send


def aio_batch_sender(stub, metadata) -> AioSendBatch:
    """``send`` for AioAckCoalescer: as ``batch_sender`` on a grpc.aio stub."""
    async def send(requests: List["pb.AckRequest"],
                   timeout: float) -> List[Optional[JobwireError]]:
        try:
            resp = await stub.AckBatch(pb.AckBatchRequest(acks=requests), timeout=timeout,
                                       metadata=metadata)
        except grpc.aio.AioRpcError as e:
            raise JobwireError.from_rpc_error(e) from None
        return ack_batch_errors(requests, resp)
    return send


class _Entry:
    __slots__ = ("request", "timeout", "error", "done")

    def __init__(self, request: "pb.AckRequest", timeout: float):
        self.request = request
        self.timeout = timeout
        self.error: Optional[JobwireError] = None
        self.done = False


# The client cut the call itself: a CANCELLED it caused (_lease_rules.cut_by_client).
_INTERRUPTED = ClientCancelled("AckBatch interrupted")


def _call_failed(exc: BaseException) -> JobwireError:
    """The error each ack of a call that raised ``exc`` gets."""
    if isinstance(exc, JobwireError):
        return exc
    log.error("jobwire: AckBatch call raised %r", exc, exc_info=exc)
    return JobwireError(grpc.StatusCode.UNKNOWN, "AckBatch: %s: %s" % (type(exc).__name__, exc))


def _settle(batch: List[_Entry], errors: List[Optional[JobwireError]]) -> None:
    for entry, err in zip(batch, errors):
        # A distinct exception object per ack: each is raised in its own thread.
        entry.error = None if err is None else err._copy()
        entry.done = True


class AckCoalescer:
    """Thread safety: ``submit`` and ``ack`` may be called from any number of
    threads."""

    def __init__(self, send: SendBatch):
        self._send = send
        self._lock = threading.Lock()
        # (entry, done) pairs; guarded by _lock.
        self._queued: "Deque[tuple[_Entry, AckDone]]" = collections.deque()
        self._sending = False  # guarded by _lock

    def submit(self, request: "pb.AckRequest", timeout: float, done: "AckDone") -> None:
        """Queues one ack; ``done(error)`` receives its outcome exactly once
        (None: stored; else a JobwireError with its per-ack error, or the
        AckBatch call's error, UNAVAILABLE ..., when the whole call failed).

        When no call is in flight this thread sends: the queued acks, one
        call after another, until a call returns with nothing queued, running
        the ``done`` of every ack in its calls (so ``done`` must be quick).
        Otherwise it returns at once and the sending thread takes the ack into
        its next call. A call's deadline is the longest ``timeout`` of the
        acks it carries."""
        with self._lock:
            self._queued.append((_Entry(request, timeout), done))
            if self._sending:
                return
            self._sending = True
        try:
            while True:
                with self._lock:
                    if not self._queued:
                        self._sending = False
                        return
                    items = _take(self._queued)
                batch = [entry for entry, _ in items]
                errors = [_INTERRUPTED] * len(batch)  # unless the call answers
                try:
                    errors = self._send_batch(batch)
                finally:
                    _settle(batch, errors)
                    for entry, answer in items:
                        try:
                            answer(entry.error)
                        except Exception:  # noqa: BLE001 - the other acks still need theirs
                            log.exception("jobwire: ack outcome callback raised")
        except BaseException:
            with self._lock:  # interrupted: let the next ack send
                self._sending = False
            raise

    def ack(self, request: "pb.AckRequest", timeout: float) -> None:
        """Acks one job, as a unary Ack would: returns when it was stored,
        raises JobwireError with its per-ack error, or with the AckBatch
        call's error (UNAVAILABLE ...) when the whole call failed. Blocks
        until the call carrying it has answered."""
        answered = threading.Event()
        outcome: List[Optional[JobwireError]] = []

        def done(error: Optional[JobwireError]) -> None:
            outcome.append(error)
            answered.set()

        self.submit(request, timeout, done)
        answered.wait()
        if outcome[0] is not None:
            raise outcome[0]

    def _send_batch(self, batch: List[_Entry]) -> List[Optional[JobwireError]]:
        try:
            return self._send([e.request for e in batch], max(e.timeout for e in batch))
        except Exception as e:  # noqa: BLE001 - every waiter needs an answer
            return [_call_failed(e)] * len(batch)


class AioAckCoalescer:
    """For the tasks of one event loop (not thread-safe)."""

    def __init__(self, send: AioSendBatch):
        self._send = send
        self._queued: Deque["tuple[_Entry, asyncio.Future]"] = collections.deque()
        self._sender: Optional[asyncio.Task] = None  # sends while acks are queued

    async def ack(self, request: "pb.AckRequest", timeout: float) -> None:
        """As ``AckCoalescer.ack``, awaited."""
        entry = _Entry(request, timeout)
        answered = asyncio.get_running_loop().create_future()
        self._queued.append((entry, answered))
        if self._sender is None:  # no call in flight: send at once
            self._sender = asyncio.create_task(self._send_queued())
        # shield: an ack whose task is cancelled leaves the call to the others.
        await asyncio.shield(answered)
        if entry.error is not None:
            raise entry.error

    async def _send_queued(self) -> None:
        items: List["tuple[_Entry, asyncio.Future]"] = []
        try:
            while self._queued:
                items = _take(self._queued)
                batch = [entry for entry, _ in items]
                try:
                    errors = await self._send([e.request for e in batch],
                                              max(e.timeout for e in batch))
                except Exception as e:  # noqa: BLE001 - every waiter needs an answer
                    errors = [_call_failed(e)] * len(batch)
                self._answer(items, errors)
                items = []
        finally:
            self._sender = None
            # Cancelled (the loop is closing): answer whatever is left.
            items.extend(self._queued)
            self._queued.clear()
            self._answer(items, [_INTERRUPTED] * len(items))

    @staticmethod
    def _answer(items, errors: List[Optional[JobwireError]]) -> None:
        _settle([entry for entry, _ in items], errors)
        for _, answered in items:
            if not answered.done():
                answered.set_result(None)
