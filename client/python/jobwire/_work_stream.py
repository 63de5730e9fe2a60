"""The acks a Worker sends on its Work stream (broker.proto, Work;
docs/clients.md, Worker): the design of client/node/src/claim_stream.ts
(``sendAcks``, ``endAcks``) and client/go/work_acks.go.

A Work stream is a Claim stream whose first request message holds the
ClaimRequest; every later one holds a batch of the ack coalescer
(``WorkAcks``, under an id), answered once in ``WorkResponse.ack_answers``.
``send_acks`` waits for that answer at most the call timeout an AckBatch call
would get (then the batch fails DEADLINE_EXCEEDED, as that call would), and
returns None when the stream ended before answering (or had already ended):
the acks may or may not be stored, and the caller sends them again as an
AckBatch call (a repeated ack answers OK).

``WorkStream`` is for the threaded Worker: its requests are the iterator
grpcio reads the request side from (``requests()``, fed by a queue, ending
once ``end()`` was called); ``AioWorkStream`` for the asyncio one (written
with the call's ``write()``).
"""
from __future__ import annotations

import asyncio
import queue
import threading
from typing import Dict, Iterator, List, Optional, Sequence

import grpc

from ._errors import JobwireError
from .v1 import broker_pb2 as pb

# The error of a batch whose answer did not come within the call timeout.
_NOT_ANSWERED = "Work: the acks were not answered within the call deadline"


def answer_errors(requests: Sequence["pb.AckRequest"],
                  answer: "pb.WorkAcksAnswer") -> List[Optional[JobwireError]]:
    """The per-ack errors of a WorkAcksAnswer, in request order (None: the
    ack was stored), as ``ack_batch_errors`` gives them for an AckBatch.
    Raises JobwireError with the answer's code, message and reason when the
    batch was refused as a whole, INTERNAL when the broker answered a
    different number of results."""
    if answer.code != 0:
        raise JobwireError.from_result(answer.code, answer.message, answer.reason)
    if len(answer.results) != len(requests):
        raise JobwireError(grpc.StatusCode.INTERNAL, "Work answered %d results for %d acks"
                           % (len(answer.results), len(requests)))
    return [None if r.code == 0 else JobwireError.from_result(r.code, r.message, r.reason)
            for r in answer.results]


class _Pending:
    """An acks batch sent on the stream, waiting for its answer."""
    __slots__ = ("requests", "answer", "answered")

    def __init__(self, requests: Sequence["pb.AckRequest"], answered):
        self.requests = requests
        # The WorkAcksAnswer; None when the stream ended before answering.
        self.answer: Optional["pb.WorkAcksAnswer"] = None
        self.answered = answered  # threading.Event / asyncio.Future


class WorkStream:
    """One Work call of the threaded Worker. Thread safety: ``send_acks``
    from any thread (the ack coalescer's sender); ``answer`` and ``end`` from
    the thread reading the call; ``requests`` is read by grpcio."""

    def __init__(self, claim: "pb.ClaimRequest"):
        self._lock = threading.Lock()
        self._requests: "queue.Queue[Optional[pb.WorkRequest]]" = queue.Queue()
        self._requests.put(pb.WorkRequest(claim=claim))
        self._pending: Dict[int, _Pending] = {}  # guarded by _lock
        self._next_id = 0  # guarded by _lock
        self._ended = False  # guarded by _lock

    def requests(self) -> Iterator["pb.WorkRequest"]:
        """The request side of the call: the claim, then each acks message
        as it is sent; ends (half-closes the call) once ``end()`` was called,
        so grpcio's thread reading it never blocks past the stream's end."""
        while True:
            message = self._requests.get()
            if message is None:
                return
            yield message

    def send_acks(self, requests: List["pb.AckRequest"],
                  timeout: float) -> Optional[List[Optional[JobwireError]]]:
        """Sends ``requests`` as one acks message and waits for its answer:
        one error per ack, in order (None: stored). Returns None when the
        stream has ended or ended before answering; raises JobwireError when
        the batch was refused as a whole, DEADLINE_EXCEEDED when no answer
        came within ``timeout`` seconds (a late answer is ignored)."""
        pending = _Pending(requests, threading.Event())
        with self._lock:
            if self._ended:
                return None
            acks_id = self._next_id
            self._next_id += 1
            self._pending[acks_id] = pending
            self._requests.put(pb.WorkRequest(acks=pb.WorkAcks(id=acks_id, acks=requests)))
        if not pending.answered.wait(timeout):
            with self._lock:
                if self._pending.pop(acks_id, None) is not None:
                    raise JobwireError(grpc.StatusCode.DEADLINE_EXCEEDED, _NOT_ANSWERED)
            # Answered (or ended) while the timeout fired: that decides.
        if pending.answer is None:
            return None
        return answer_errors(requests, pending.answer)

    def answer(self, answers: Sequence["pb.WorkAcksAnswer"]) -> None:
        """The ack answers of one WorkResponse: each wakes its batch (an
        answer whose batch stopped waiting is dropped)."""
        for answer in answers:
            with self._lock:
                pending = self._pending.pop(answer.id, None)
            if pending is not None:
                pending.answer = answer
                pending.answered.set()

    def end(self) -> None:
        """The call ended (or is being cancelled): nothing more is sent on
        it, the request iterator ends, and the batches still waiting return
        None. Idempotent."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            left = list(self._pending.values())
            self._pending.clear()
        self._requests.put(None)
        for pending in left:
            pending.answered.set()


class AioWorkStream:
    """One Work call of the asyncio Worker (a grpc.aio stream-stream call
    opened without a request iterator). For the tasks of one event loop."""

    def __init__(self, call):
        self._call = call
        self._pending: Dict[int, _Pending] = {}
        self._next_id = 0
        self._ended = False

    async def send_acks(self, requests: List["pb.AckRequest"],
                        timeout: float) -> Optional[List[Optional[JobwireError]]]:
        """As ``WorkStream.send_acks``, awaited."""
        if self._ended:
            return None
        acks_id = self._next_id
        self._next_id += 1
        pending = _Pending(requests, asyncio.get_running_loop().create_future())
        self._pending[acks_id] = pending
        # The write runs on its own, the timeout counting from now: a write
        # that fails has ended the call, and end() answers the batch then.
        write = asyncio.ensure_future(
            self._call.write(pb.WorkRequest(acks=pb.WorkAcks(id=acks_id, acks=requests))))
        write.add_done_callback(lambda t: t.cancelled() or t.exception())
        try:
            # shield: the timeout leaves the future to answer() / end().
            await asyncio.wait_for(asyncio.shield(pending.answered), timeout)
        except asyncio.TimeoutError:
            if self._pending.pop(acks_id, None) is not None:
                raise JobwireError(grpc.StatusCode.DEADLINE_EXCEEDED, _NOT_ANSWERED) from None
        if pending.answer is None:
            return None
        return answer_errors(requests, pending.answer)

    def answer(self, answers: Sequence["pb.WorkAcksAnswer"]) -> None:
        """As ``WorkStream.answer``."""
        for answer in answers:
            pending = self._pending.pop(answer.id, None)
            if pending is not None:
                pending.answer = answer
                if not pending.answered.done():
                    pending.answered.set_result(None)

    def end(self) -> None:
        """As ``WorkStream.end``: the batches still waiting return None."""
        self._ended = True
        left = list(self._pending.values())
        self._pending.clear()
        for pending in left:
            if not pending.answered.done():
                pending.answered.set_result(None)
