"""The asyncio Worker (grpc.aio), public as ``jobwire.aio.Worker``: import
it from ``jobwire.aio``, which re-exports it; this module is private.

Same behaviour as ``jobwire.Worker`` (docs/clients.md): one Work stream
(a Claim stream once the broker answers Work UNIMPLEMENTED), lease renewal,
Ack (coalesced, on the Work stream, else AckBatch calls) / Fail with
retries, reconnects, graceful stop; it logs to the same ``jobwire.worker``
logger. Handlers may be ``async def`` (awaited on the loop) or plain
functions (run in a thread with ``asyncio.to_thread``). Run control is the
same too (_run_control): in an ``async def`` handler ``job.wait_cancelled()``
and ``job.progress()`` are awaited; in a plain-function handler they block.

The parts it shares with ``jobwire.Worker`` live next to it:
``_worker_options`` (the constructor's options), ``_claim_types``,
``_lease_renewer`` / ``_lease_rules`` (leases), ``_run_control`` (a run's
stop signal and progress reports), ``_middleware`` (``use()``), ``_failure``
(an exception's Fail), ``_settler``, ``_reconnect``, ``_ack_coalescer`` /
``_work_stream`` (the acks' batches, on the Work stream or as AckBatch calls).
"""
from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import signal
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

import grpc
import grpc.aio

from ._ack_coalescer import AioAckCoalescer, aio_batch_sender
from ._channel import DEFAULT_TIMEOUT, PemSource, Security, open_aio_channel
from ._claim_types import check_handlers, claim_types
from ._errors import JobwireError
from ._failure import Failure, cut_error_text, failure_of
from ._lease_renewer import LEASE_LOST
from ._lease_rules import (cut_by_client, given_up, lease_ended_ago_ms, lease_length_s,
                           may_resend, renew_lease_ms, retry_jitter, retry_wait, unanswered)
from ._middleware import Middleware, aio_chain, check_middleware
from ._reconnect import reconnect_delay
from ._run_control import (AioRunControl, failure_after_stop, local_deadline, stop_reason,
                           stop_run)
from ._settler import log_refused_ack
from ._types import Job, Outcome, encode_result
from .v1 import broker_pb2 as pb
from .v1 import broker_pb2_grpc as pb_grpc
from ._work_stream import AioWorkStream
from ._worker_options import init_settings

log = logging.getLogger("jobwire.worker")


async def _call_handler(fn: Callable, job: Job) -> Any:
    """Runs one handler: an ``async def`` awaited on the loop, a plain
    function in a thread (with a copy of the context); an awaitable it
    returns is awaited."""
    if inspect.iscoroutinefunction(fn):
        return await fn(job)
    value = await asyncio.to_thread(fn, job)
    if inspect.isawaitable(value):
        value = await value
    return value


class Worker:
    """asyncio worker; same constructor as ``jobwire.Worker`` (``weights``
    included).
    ``await worker.run()`` until ``await worker.stop()`` (or a signal).
    ``async with Worker(...) as w:`` awaits ``w.stop()`` when the block ends.
    A handler raising SystemExit / KeyboardInterrupt stops the worker and
    ``run()`` raises it, its job neither acked nor failed (as
    ``jobwire.Worker``). ``use(mw)`` adds a middleware (``async def mw(job,
    call_next)``, ``await call_next(job)``) around every handler, as
    ``jobwire.Worker.use``; e.g.
    ``jobwire.tracing.async_tracing_middleware()``."""

    def __init__(self, addr: Optional[str] = None, queues: Union[str, Sequence[str], None] = None,
                 concurrency: int = 1, lease_ms: Optional[int] = None,
                 worker_id: Optional[str] = None, grace: float = 25.0,
                 on_outcome: Optional[Callable[[Outcome], Any]] = None, *,
                 weights: Optional[Mapping[str, int]] = None,
                 timeout: float = DEFAULT_TIMEOUT, token: Optional[str] = None,
                 tls: bool = False, tls_root_ca: PemSource = None,
                 tls_client_cert: PemSource = None, tls_client_key: PemSource = None,
                 channel_options=None):
        init_settings(self, addr, queues, concurrency, lease_ms, worker_id, grace, on_outcome,
                      timeout, weights)
        self._security = Security(token, tls, tls_root_ca, tls_client_cert, tls_client_key)
        self._metadata = self._security.metadata
        self._channel_options = channel_options
        self._handlers: Dict[str, Callable] = {}
        self._middlewares: List[Middleware] = []  # the first is the outermost
        self._running = 0
        self._tasks: Set[asyncio.Task] = set()
        self._call = None  # the open Work (or Claim) stream
        self._work: Optional[AioWorkStream] = None  # the open Work stream's acks
        # The broker answered Work UNIMPLEMENTED (older than Work): Claim
        # streams and AckBatch calls from then on.
        self._claim_only = False
        self._fatal: Optional[JobwireError] = None
        self._exit: Optional[BaseException] = None  # see jobwire.Worker
        self._closed = False
        self._started = False
        self._stop_event: Optional[asyncio.Event] = None
        self._cond: Optional[asyncio.Condition] = None
        self._done: Optional[asyncio.Event] = None
        self._stop_at: Optional[float] = None
        # Set by stop() / a signal, also before run(): run() then returns at once.
        self._stop_requested = False
        self._wakers: Set[asyncio.Task] = set()
        self._expired_dropped = 0
        # The runs held, by (job id, lease token): a StopRun finds its run here.
        self._runs: Dict[Tuple[str, str], AioRunControl] = {}

    def stats(self) -> Dict[str, int]:
        """As ``jobwire.Worker.stats()``: ``expired_deliveries_dropped``."""
        return {"expired_deliveries_dropped": self._expired_dropped}

    async def __aenter__(self) -> "Worker":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return "jobwire.aio.Worker(addr=%r, queues=%r, worker_id=%r, tls=%s, token=%s)" % (
            self.addr, self.queues, self.worker_id, self._security.tls,
            "set" if self._metadata else "none")

    def register(self, job_type: str, fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError("handler must be callable")
        self._handlers[job_type] = fn
        return fn

    def handler(self, job_type: str):
        def deco(fn):
            return self.register(job_type, fn)
        return deco

    def use(self, mw: Middleware) -> Middleware:
        """As ``jobwire.Worker.use``, on the loop: ``async def mw(job,
        call_next)`` gets the job and ``await call_next(job)`` runs the next
        layer (in the end the handler: awaited, or a plain function in a
        thread, which sees the context the middlewares set). Raises
        RuntimeError once ``run()`` was called, TypeError for what is not
        callable or a middleware made for ``jobwire.Worker``
        (``jobwire.tracing.tracing_middleware``)."""
        check_middleware(mw, "asyncio", self._started)
        self._middlewares.append(mw)
        return mw

    async def run(self, install_signal_handlers: bool = True) -> None:
        if self._started:
            raise RuntimeError("Worker.run() can be called once")
        check_handlers(self._handlers)
        self._started = True
        loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        self._cond = asyncio.Condition()
        self._done = asyncio.Event()
        self._channel = open_aio_channel(self.addr, self._channel_options, self._security)
        self._stub = pb_grpc.BrokerServiceStub(self._channel)
        # Every Ack goes through it (the Work stream or AckBatch calls); Fail
        # stays a unary call.
        self._ack_batch = aio_batch_sender(self._stub, self._metadata)
        self._acks = AioAckCoalescer(self._send_acks)
        if self._stop_requested:  # stop() came before run(): nothing to drain
            self._stop_at = time.monotonic()
            self._stop_event.set()
        sigs = []
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self._request_stop)
                    sigs.append(sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        claim = asyncio.create_task(self._claim_loop())
        try:
            await self._stop_event.wait()
        finally:
            self._request_stop()
            for sig in sigs:
                loop.remove_signal_handler(sig)
            await self._drain(claim)
        if self._fatal is not None:
            raise self._fatal
        if self._exit is not None:
            raise self._exit

    async def stop(self) -> None:
        """Stop taking jobs, wait up to ``grace`` for running handlers. Called
        before ``run()``, it makes ``run()`` return at once."""
        self._request_stop()
        if not self._started or self._done is None:
            return
        await self._done.wait()

    def _request_stop(self) -> None:
        self._stop_requested = True
        if self._stop_at is None:
            self._stop_at = time.monotonic()
        if self._stop_event is not None:
            self._stop_event.set()
        if self._call is not None:
            self._call.cancel()
        if self._cond is not None:
            # Wake the claim loop waiting for a free slot (the condition can
            # only be notified with its lock held, hence a task).
            try:
                t = asyncio.get_running_loop().create_task(self._wake())
            except RuntimeError:  # no running loop
                return
            self._wakers.add(t)
            t.add_done_callback(self._wakers.discard)

    async def _wake(self) -> None:
        async with self._cond:
            self._cond.notify_all()

    async def _drain(self, claim: asyncio.Task) -> None:
        try:
            await asyncio.wait_for(claim, self.timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            claim.cancel()
        left = (self._stop_at or time.monotonic()) + self.grace - time.monotonic()

        async def idle():
            async with self._cond:
                await self._cond.wait_for(lambda: self._running == 0)
        try:
            await asyncio.wait_for(idle(), max(left, 0))
        except asyncio.TimeoutError:
            log.warning("jobwire: %d handler(s) still running after the %.1fs grace are "
                        "abandoned; their leases will expire", self._running, self.grace)
        self._closed = True
        for t in list(self._tasks):
            t.cancel()
        await self._channel.close()
        self._done.set()

    async def _claim_loop(self) -> None:
        """As ``jobwire.Worker._claim_loop``: one Work stream (the
        ClaimRequest first, then the acks messages ``_send_acks`` writes), or
        a Claim stream once the broker answered Work UNIMPLEMENTED."""
        if self._security.error is not None:
            self._fatal = self._security.error
            log.error("jobwire: cannot connect: %s", self._fatal)
            self._request_stop()
            return
        attempt = 0  # reopens since a stream last delivered
        while not self._stop_event.is_set():
            async with self._cond:
                await self._cond.wait_for(
                    lambda: self._running < self.concurrency or self._stop_event.is_set())
                free = self.concurrency - self._running
            if self._stop_event.is_set():
                return
            req = pb.ClaimRequest(queues=self.queues, max_in_flight=free,
                                  lease_ms=self.lease_ms or 0, worker_id=self.worker_id,
                                  types=claim_types(self._handlers), weights=self.weights)
            delivered = False
            work = None
            try:
                if self._claim_only:
                    self._call = self._stub.Claim(req, metadata=self._metadata)
                else:
                    self._call = self._stub.Work(metadata=self._metadata)
                    work = AioWorkStream(self._call)
                    self._work = work
                    try:
                        await self._call.write(pb.WorkRequest(claim=req))
                    except asyncio.InvalidStateError:
                        pass  # the call has ended already: reading it raises its status
                # Each message carries jobs (all claimed for this stream since
                # the previous message, in claim order) and / or stops (runs
                # Cancel asked to stop), and on a Work stream ack answers; any
                # may be empty.
                async for message in self._call:
                    if work is not None:
                        work.answer(message.ack_answers)
                    if not delivered:
                        delivered, attempt = True, 0
                    for claimed in message.jobs:
                        self._dispatch(claimed)
                    for stop in message.stops:
                        self._stop_run(stop)
                log.info("jobwire: claim stream ended by the broker; reopening")
            except grpc.aio.AioRpcError as e:
                if self._stop_event.is_set():
                    return
                if e.code() == grpc.StatusCode.INVALID_ARGUMENT:
                    self._fatal = JobwireError.from_rpc_error(e)
                    log.error("jobwire: broker refused the Claim: %s", self._fatal)
                    self._request_stop()
                    return
                if e.code() == grpc.StatusCode.UNIMPLEMENTED and work is not None:
                    log.info("jobwire: the broker has no Work streams: Claim streams and "
                             "AckBatch calls from now on")
                    self._claim_only = True
                    continue  # at once, with no backoff
                log.info("jobwire: claim stream error %s: %s; reconnecting",
                         e.code().name, e.details())
            except asyncio.CancelledError:
                if self._stop_event.is_set():
                    return
                raise
            finally:
                self._call = None
                self._work = None
                if work is not None:
                    work.end()  # its unanswered acks go as AckBatch calls
            if self._stop_event.is_set():
                return
            delay = reconnect_delay(attempt)
            attempt += 1
            try:
                await asyncio.wait_for(self._stop_event.wait(), delay)
            except asyncio.TimeoutError:
                pass

    async def _send_acks(self, requests: List["pb.AckRequest"],
                         timeout: float) -> List[Optional[JobwireError]]:
        """As ``jobwire.Worker._send_acks``: on the Work stream when one is
        open, else (or when it ended before answering) as an AckBatch call."""
        work = self._work
        if work is not None:
            errors = await work.send_acks(requests, timeout)
            if errors is not None:
                return errors
        return await self._ack_batch(requests, timeout)

    def _dispatch(self, claimed) -> None:
        self._running += 1
        job = Job.from_proto(claimed.job, lease_expires_at_ms=claimed.lease_expires_at_ms,
                             lease_ms=claimed.lease_ms)
        received = time.monotonic()
        run = AioRunControl(job, claimed.lease_token, local_deadline(job.timeout_ms, received),
                            self._report_progress)
        self._runs[(job.id, run.token)] = run
        run.start_deadline()
        t = asyncio.create_task(self._process(job, run, received))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    def _stop_run(self, stop) -> None:
        """A StopRun from the Claim stream (see _run_control.stop_run)."""
        stop_run(self._runs.get((stop.job_id, stop.lease_token)), stop)

    async def _report_progress(self, request) -> None:
        """ReportProgress (job.progress()): raises JobwireError when refused."""
        try:
            await self._stub.ReportProgress(request, timeout=self.timeout,
                                            metadata=self._metadata)
        except grpc.aio.AioRpcError as e:
            raise JobwireError.from_rpc_error(e) from None

    def _lease_end(self, run: AioRunControl, end: float) -> float:
        """``end``, at most the run's deadline (the broker never extends the
        lease past it)."""
        return end if run.deadline is None else min(end, run.deadline)

    async def _renew(self, job: Job, run: AioRunControl, state: dict) -> None:
        """Renews the job's lease (as jobwire.Worker's LeaseRenewer) from
        delivery until ``_end_renewal`` (the outcome decided) cancels it:
        also while the final Ack / Fail is retried. After the handler
        returned a lost lease only marks ``state["lost"]`` (and
        ``job.lease_lost_event``), which the Ack / Fail retries read."""
        token = run.token
        lease_s = state["lease_s"]
        interval = max(lease_s / 3.0, 0.05)
        req = pb.ExtendLeaseRequest(queue=job.queue, job_id=job.id, lease_token=token,
                                    lease_ms=renew_lease_ms(job.lease_ms, self.lease_ms))
        delay = interval
        while True:
            await asyncio.sleep(delay)
            sent = time.monotonic()
            try:
                resp = await self._stub.ExtendLease(
                    req, timeout=min(self.timeout, max(interval, 0.25)), metadata=self._metadata)
            except grpc.aio.AioRpcError as e:
                stop = stop_reason(JobwireError.from_rpc_error(e))
                if stop is not None:
                    # No lost lease: the run may still Fail (and Ack, unless timed out).
                    log.info("jobwire: lease renewal of job %s/%s refused (%s); renewal stops",
                             job.queue, job.id, e.details())
                    if state["handling"]:
                        run.signal(stop)
                    return
                if e.code() in LEASE_LOST:
                    state["lost"] = True
                    job.lease_lost_event.set()  # tells the handler (job.lease_lost)
                    log.warning("jobwire: lease of job %s/%s lost (%s); renewal stops",
                                job.queue, job.id, e.code().name)
                    return
                delay = min(interval, 1.0)
                continue
            state["deadline"] = self._lease_end(run, sent + lease_s)
            job.lease_expires_at_ms = resp.lease_expires_at_ms
            delay = interval

    async def _process(self, job: Job, run: AioRunControl, received: float) -> None:
        token = run.token
        lease_s = lease_length_s(job.lease_ms, self.lease_ms)
        # "renew": the task renewing the lease until the outcome is decided
        # (_end_renewal); "handling": the handler runs; "lost_in_handler":
        # "lost" when the handler returned, the outcome's lease_lost (a loss
        # learnt later, while the Ack / Fail is in flight or retried, is not
        # the handler's; "lost" stays what the retries read).
        state = {"lease_s": lease_s, "deadline": self._lease_end(run, received + lease_s),
                 "lost": False, "renew": None, "handling": False, "lost_in_handler": False}
        job._lease_lost_event = asyncio.Event()
        try:
            ended_ago = lease_ended_ago_ms(job.lease_expires_at_ms, state["deadline"])
            if ended_ago is not None:
                # No handler, no Ack / Fail: the broker's reaper delivers it again.
                self._expired_dropped += 1
                log.warning("jobwire: delivery of job %s/%s (attempt %d) dropped: its lease "
                            "ended %.0f ms ago, before its handler could start", job.queue,
                            job.id, job.attempt, ended_ago)
                await self._report(Outcome("expired_dropped", job))
                return
            state["renew"] = asyncio.create_task(self._renew(job, run, state))
            ran = await self._run_handler(job, run, state)
            if ran is None:
                return  # abandoned: its lease expires
            result, failure = ran
            if failure is None:
                await self._ack(job, token, state, result)
            else:
                await self._fail(job, token, state, failure)
        finally:
            self._end_renewal(state)  # abandoned (else ended already)
            run.finish()
            self._runs.pop((job.id, token), None)
            async with self._cond:
                self._running -= 1
                self._cond.notify_all()

    async def _run_handler(self, job: Job, run: AioRunControl,
                           state: dict) -> Optional[Tuple[bytes, Optional[Failure]]]:
        """Runs the job's handler: (result, None) to ack, (b"", failure) to
        fail, or None when the job is abandoned (the handler raised
        SystemExit / KeyboardInterrupt, which stops the worker). Raises
        CancelledError when the handler is abandoned after the stop grace."""
        fn = self._handlers.get(job.type)
        if fn is None:
            # Only a broker older than ClaimRequest.types delivers a type
            # the Claim did not name: failed for a retry (as jobwire.Worker).
            text = 'no handler for job type "%s" in worker %s' % (job.type, self.worker_id)
            log.warning("jobwire: %s (job %s/%s failed for a retry)", text, job.queue, job.id)
            return b"", Failure(text)
        state["handling"] = True
        try:
            value = await aio_chain(self._middlewares, functools.partial(_call_handler, fn))(job)
        except asyncio.CancelledError:
            raise  # abandoned after the grace: no outcome
        except (SystemExit, KeyboardInterrupt) as e:
            log.warning("jobwire: handler of job %s/%s raised %s: stopping the worker; the "
                        "job is not failed (its lease expires and it is delivered again)",
                        job.queue, job.id, type(e).__name__)
            if self._exit is None:
                self._exit = e
            self._request_stop()
            return None
        except BaseException as e:  # noqa: B036 - every other handler failure is a Fail
            self._handler_returned(run, state)
            failure = failure_of(e)
            if run.reason is not None:  # told to stop: failed with the reason
                failure = failure_after_stop(run.reason, failure)
            return b"", failure
        self._handler_returned(run, state)
        try:
            return encode_result(value), None
        except (TypeError, ValueError) as e:
            return b"", Failure(cut_error_text(
                "%s: handler result is not JSON-encodable: %s" % (type(e).__name__, e)))

    @staticmethod
    def _handler_returned(run: AioRunControl, state: dict) -> None:
        state["handling"] = False
        state["lost_in_handler"] = state["lost"]
        run.finish()

    @staticmethod
    def _end_renewal(state: dict) -> None:
        """The job's outcome is decided (or the job abandoned): its lease is
        renewed no more. Called before the outcome is reported: once the
        renewing task is cancelled (on the loop) no answer of a renewal in
        flight changes ``state`` any more."""
        renew = state["renew"]
        if renew is not None:
            renew.cancel()

    async def _unary_fail(self, request, timeout: float):
        return await self._stub.Fail(request, timeout=timeout, metadata=self._metadata)

    def _cut(self, err: JobwireError) -> bool:
        """As ``jobwire.Worker``'s: whether the client caused ``err`` (if
        CANCELLED: then final, as a refusal; _lease_rules.cut_by_client)."""
        return cut_by_client(err, self._closed)

    async def _send_final(self, method, request, state):
        """Ack / Fail (``await method(request, timeout)``), retried on
        UNAVAILABLE / DEADLINE_EXCEEDED / a CANCELLED the client did not cause
        (_lease_rules.unanswered) until the lease (as last known) has ended,
        the last attempt at its end (_lease_rules.retry_wait). An attempt
        sent while the lease was known lost is final; one answered after it
        was learnt lost is sent once more, at once (_lease_rules.may_resend).
        Returns (response, None) or (None, JobwireError), the error one of
        those when the outcome is unknown. The lease's renewal ends before it
        returns: the outcome is decided."""
        try:
            return await self._send_until_decided(method, request, state)
        finally:
            self._end_renewal(state)  # decided: the lease changes no more

    async def _send_until_decided(self, method, request, state):
        delay, first = 0.1, True
        while True:
            lost_when_sent = state["lost"]
            timeout = self.timeout if first or lost_when_sent else min(
                self.timeout, max(state["deadline"] - time.monotonic(), 0.5))
            first = False
            try:
                return await method(request, timeout), None
            except grpc.aio.AioRpcError as e:
                err = JobwireError.from_rpc_error(e)
            except JobwireError as e:  # from the ack coalescer
                err = e
            if may_resend(err.code, lost_when_sent, cancelled_by_client=self._cut(err)):
                if state["lost"]:
                    continue  # learnt lost since it was sent: once more, at once
                wait = retry_wait(retry_jitter(delay), state["deadline"] - time.monotonic())
                if wait is not None:
                    await asyncio.sleep(wait)  # learnt lost meanwhile: the next one is the last
                    delay = min(delay * 2, 2.0)
                    continue
            return None, err

    async def _ack(self, job, token, state, result: bytes) -> None:
        resp, err = await self._send_final(
            self._acks.ack, pb.AckRequest(queue=job.queue, job_id=job.id, lease_token=token,
                                          result=result), state)
        if err is None:
            await self._report(Outcome("ack_ok", job, lease_lost=state["lost_in_handler"]))
        elif unanswered(err.code, self._cut(err)):
            log.warning("jobwire: Ack of job %s/%s unanswered %s (%s); "
                        "it may or may not be stored", job.queue, job.id,
                        given_up(state["lost"]), err)
            await self._report(Outcome("ack_unknown", job, code=err.code, error=err.message,
                                       reason=err.reason, lease_lost=state["lost_in_handler"]))
        else:
            log_refused_ack(job, err)
            await self._report(Outcome("ack_error", job, code=err.code, error=err.message,
                                       reason=err.reason, lease_lost=state["lost_in_handler"]))

    async def _fail(self, job, token, state, failure: Failure) -> None:
        resp, err = await self._send_final(
            self._unary_fail, pb.FailRequest(queue=job.queue, job_id=job.id, lease_token=token,
                                             error=failure.error,
                                             non_retryable=failure.non_retryable,
                                             retry_after_ms=failure.retry_after_ms,
                                             keep_attempt=failure.keep_attempt), state)
        if err is None:
            await self._report(Outcome("fail_ok", job,
                                       fail_outcome=pb.FailResponse.Outcome.Name(resp.outcome).removeprefix("OUTCOME_"),
                                       next_attempt_at_ms=resp.next_attempt_at_ms,
                                       error=failure.error,
                                       lease_lost=state["lost_in_handler"]))
        elif unanswered(err.code, self._cut(err)):
            log.warning("jobwire: Fail of job %s/%s unanswered %s (%s); "
                        "it may or may not be stored", job.queue, job.id,
                        given_up(state["lost"]), err)
            await self._report(Outcome("fail_unknown", job, code=err.code, error=err.message,
                                       reason=err.reason, lease_lost=state["lost_in_handler"]))
        else:
            log.warning("jobwire: Fail of job %s/%s refused: %s", job.queue, job.id, err)
            await self._report(Outcome("fail_error", job, code=err.code, error=err.message,
                                       reason=err.reason, lease_lost=state["lost_in_handler"]))

    async def _report(self, outcome: Outcome) -> None:
        if self.on_outcome is None or self._closed:
            return
        try:
            r = self.on_outcome(outcome)
            if inspect.isawaitable(r):
                await r
        except Exception:
            log.exception("jobwire: on_outcome hook raised")
