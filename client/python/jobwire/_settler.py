"""The threaded Worker's final Ack / Fail of each job and the report of its
outcome (docs/clients.md, Worker).

Acks go through an ``AckCoalescer`` (on the Worker's Work stream, else as
AckBatch calls: the Worker's ``send_acks``) without waiting for their
answer; a Fail is a unary call on the handler's thread. Both are retried on
UNAVAILABLE / DEADLINE_EXCEEDED, and on a CANCELLED the client did not cause
(a broker shutting down, grpc/grpc#41785: _lease_rules.unanswered), until
the lease has ended by the worker's own estimate (_lease_rules.retry_wait),
per job (an ack's own answer in its batch decides); an attempt sent while
that job's lease was already known lost is final, and one answered after the
lease was learnt lost is sent once more, at once (_lease_rules.may_resend).
An Ack's retries run on a handler thread, since the thread sending an
AckBatch sleeps for no one.
The job's lease is renewed meanwhile (_lease_renewer: a renewal moves the
lease end the retries are bounded by, a refused one marks the lease lost)
until its outcome is decided: ``end_renewal(lease)`` stops it then, before
the outcome is reported (or the job abandoned at shutdown), so that no
renewal answer changes the lease after that.
Every final outcome goes to the Worker's ``report``; its ``lease_lost`` is
``lease.lost_in_handler`` (the lease was lost while the handler ran), not
``lease.lost``, which a renewal refused while the Ack / Fail is in flight
(e.g. because that very call completed the job) may set later. An Ack
refused because the run passed its deadline (RUN_TIMED_OUT) is reported
like any refusal (``ack_error``): the broker fails the attempt with
"timeout" itself.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Optional

import grpc

from ._ack_coalescer import AckCoalescer, SendBatch
from ._errors import JobwireError, Reason
from ._failure import Failure
from ._handler_pool import HandlerPool
from ._lease_renewer import Lease
from ._lease_rules import (cut_by_client, given_up, may_resend, retry_jitter, retry_wait,
                           unanswered)
from ._types import Job, Outcome
from .v1 import broker_pb2 as pb

log = logging.getLogger("jobwire.worker")


def log_refused_ack(job: Job, err: JobwireError) -> None:
    """Logs an Ack the broker refused (both Workers)."""
    if err.reason == Reason.RUN_TIMED_OUT:
        log.warning("jobwire: Ack of job %s/%s refused: the run passed its deadline "
                    "(timeout_ms %d); the broker fails the attempt with error \"timeout\"",
                    job.queue, job.id, job.timeout_ms)
    else:
        log.warning("jobwire: Ack of job %s/%s refused: %s", job.queue, job.id, err)


class Settler:
    """Settles the jobs of one Worker.

    The Worker's callbacks: ``send_acks(requests, timeout)`` sends a batch
    of the ack coalescer (``_ack_coalescer.SendBatch``); ``handled(lease)``
    once the job stops counting toward the concurrency (its final call is
    about to be sent; it sets ``lease.lost_in_handler``); ``settled()``
    once its final call is answered or given up (the job's slot frees);
    ``report(outcome)`` for every final outcome;
    ``end_renewal(lease)`` (LeaseRenewer.remove) once the job's outcome is
    decided, before it is reported (or the job abandoned): after the first
    Ack attempt's answer, else when ``_send_final`` returns.

    Thread safety: every method may be called from any thread; after
    ``close()`` calls cut by the closing channel are abandoned, not
    reported."""

    def __init__(self, stub, metadata, pool: HandlerPool, timeout: float,
                 report: Callable[[Outcome], None], handled: Callable[[Lease], None],
                 settled: Callable[[], None], send_acks: SendBatch,
                 end_renewal: Callable[[Lease], None]):
        self._stub = stub
        self._metadata = metadata
        self._pool = pool
        self._timeout = timeout
        self.report = report
        self._handled = handled
        self._settled = settled
        self._end_renewal = end_renewal
        # Every Ack goes through it (the Work stream or AckBatch calls); Fail
        # stays a unary call.
        self._acks = AckCoalescer(send_acks)
        self._closed = False

    def close(self) -> None:
        """The worker's channel is closing: nothing more is reported."""
        self._closed = True

    # -- Ack ----------------------------------------------------------------
    def ack(self, job: Job, lease: Lease, result: bytes) -> None:
        """Queues the Ack without waiting for its answer (this thread may be
        the one that sends it, and the Acks of other jobs with it); calls
        ``settled()`` once it is answered or given up."""
        req = pb.AckRequest(queue=job.queue, job_id=job.id, lease_token=lease.token, result=result)
        self._handled(lease)
        lost_when_sent = lease.lost
        self._acks.submit(req, self._timeout,
                          lambda err: self._acked(job, lease, req, err, lost_when_sent))

    def _acked(self, job: Job, lease: Lease, req, err: Optional[JobwireError],
               lost_when_sent: bool) -> None:
        # On the thread sending the AckBatch call: must not block.
        if (err is not None and not self._closed
                and may_resend(err.code, lost_when_sent, cancelled_by_client=self._cut(err))
                and (lease.lost or time.monotonic() < lease.deadline)):
            # Sent again on a handler thread (the sender sleeps for no one).
            try:
                self._pool.submit(self._retry_ack, job, lease, req)
                return
            except RuntimeError:  # the pool shut down meanwhile
                pass
        try:
            self._end_renewal(lease)  # decided: the lease changes no more
            self._report_ack(job, lease, err)
        finally:
            self._settled()

    def _retry_ack(self, job: Job, lease: Lease, req) -> None:
        try:
            if not lease.lost:  # else learnt lost since it was sent: once more, at once
                wait = retry_wait(retry_jitter(0.1), lease.deadline - time.monotonic())
                if wait is not None:
                    time.sleep(wait)
            ok, _, err = self._send_final(self._acks.ack, req, lease, delay=0.2)
            if ok or err is not None:
                self._report_ack(job, lease, err)
        finally:
            self._settled()

    def _report_ack(self, job: Job, lease: Lease, err: Optional[JobwireError]) -> None:
        if self._closed and err is not None:
            return  # shut down meanwhile (the call was cut): abandoned
        if err is None:
            self.report(Outcome("ack_ok", job, lease_lost=lease.lost_in_handler))
        elif unanswered(err.code, self._cut(err)):
            log.warning("jobwire: Ack of job %s/%s unanswered %s (%s); "
                        "it may or may not be stored", job.queue, job.id,
                        given_up(lease.lost), err)
            self.report(Outcome("ack_unknown", job, code=err.code, error=err.message,
                                reason=err.reason, lease_lost=lease.lost_in_handler))
        else:
            log_refused_ack(job, err)
            self.report(Outcome("ack_error", job, code=err.code, error=err.message,
                                reason=err.reason, lease_lost=lease.lost_in_handler))

    # -- Fail ---------------------------------------------------------------
    def fail(self, job: Job, lease: Lease, failure: Failure) -> None:
        """Sends the Fail (retried as the module says) and reports its
        outcome; returns once it is answered or given up. The caller calls
        ``settled()``."""
        req = pb.FailRequest(queue=job.queue, job_id=job.id, lease_token=lease.token,
                             error=failure.error, non_retryable=failure.non_retryable,
                             retry_after_ms=failure.retry_after_ms,
                             keep_attempt=failure.keep_attempt)
        ok, resp, err = self._send_final(self._unary_fail, req, lease)
        if ok:
            outcome = pb.FailResponse.Outcome.Name(resp.outcome).removeprefix("OUTCOME_")
            self.report(Outcome("fail_ok", job, fail_outcome=outcome,
                                next_attempt_at_ms=resp.next_attempt_at_ms, error=failure.error,
                                lease_lost=lease.lost_in_handler))
        elif err is not None and unanswered(err.code, self._cut(err)):
            log.warning("jobwire: Fail of job %s/%s unanswered %s (%s); "
                        "it may or may not be stored", job.queue, job.id,
                        given_up(lease.lost), err)
            self.report(Outcome("fail_unknown", job, code=err.code, error=err.message,
                                reason=err.reason, lease_lost=lease.lost_in_handler))
        elif err is not None:
            log.warning("jobwire: Fail of job %s/%s refused: %s", job.queue, job.id, err)
            self.report(Outcome("fail_error", job, code=err.code, error=err.message,
                                reason=err.reason, lease_lost=lease.lost_in_handler))

    def _unary_fail(self, request, timeout: float):
        return self._stub.Fail(request, timeout=timeout, metadata=self._metadata)

    # -- both ---------------------------------------------------------------
    def _cut(self, err: JobwireError) -> bool:
        """Whether the client caused ``err`` (if CANCELLED: then final, as a
        refusal) rather than the broker (_lease_rules.cut_by_client)."""
        return cut_by_client(err, self._closed)

    def _send_final(self, method, request, lease: Lease, delay: float = 0.1):
        """Ack / Fail (``method(request, timeout)``), retried on UNAVAILABLE /
        DEADLINE_EXCEEDED / a CANCELLED the client did not cause
        (_lease_rules.unanswered) until the lease (as last known) has ended,
        the last attempt at its end (_lease_rules.retry_wait). An attempt
        sent while the lease was known lost is final; one answered after it
        was learnt lost is sent once more, at once (_lease_rules.may_resend).
        Returns (ok, response, JobwireError), the error one of those when the
        outcome is unknown; (False, None, None) when the worker was shut
        down meanwhile. The lease's renewal ends
        before it returns: the outcome is decided (or abandoned)."""
        self._handled(lease)
        try:
            return self._send_until_decided(method, request, lease, delay)
        finally:
            self._end_renewal(lease)  # the lease changes no more

    def _send_until_decided(self, method, request, lease: Lease, delay: float):
        first = True
        while True:
            lost_when_sent = lease.lost
            timeout = self._timeout
            if not first and not lost_when_sent:
                timeout = min(self._timeout, max(lease.deadline - time.monotonic(), 0.5))
            first = False
            try:
                return True, method(request, timeout), None
            except grpc.RpcError as e:
                err = JobwireError.from_rpc_error(e)
            except JobwireError as e:  # from the ack coalescer
                err = e
            except ValueError:  # channel closed after the grace: abandoned
                return False, None, None
            if self._closed:
                return False, None, None
            if may_resend(err.code, lost_when_sent, cancelled_by_client=self._cut(err)):
                if lease.lost:
                    continue  # learnt lost since it was sent: once more, at once
                wait = retry_wait(retry_jitter(delay), lease.deadline - time.monotonic())
                if wait is not None:
                    time.sleep(wait)  # learnt lost meanwhile: the next attempt is the last
                    delay = min(delay * 2, 2.0)
                    continue
            return False, None, err
