"""Worker side: one Work stream (a Claim stream that also carries the acks),
a thread pool of handlers, lease renewal, Ack (coalesced into acks messages
on the Work stream, else AckBatch calls) / Fail with retries, reconnects,
graceful stop (docs/clients.md).

This file holds the Worker and its Work stream; the parts live next to it:
``_worker_options`` (the constructor's options), ``_handler_pool`` (handler
threads), ``_lease_renewer`` / ``_lease_rules`` (leases), ``_run_control`` /
``_deadline_timer`` (a run's stop signal: cancel, timeout; its progress
reports), ``_middleware`` (``use()``: layers around every handler),
``_failure`` (an exception's Fail), ``_settler`` (the final Ack / Fail and
the outcome), ``_ack_coalescer`` / ``_work_stream`` (the acks' batches, on
the Work stream or as AckBatch calls)."""
from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import grpc

from ._ack_coalescer import batch_sender
from ._channel import (DEFAULT_TIMEOUT, PemSource, Security,
                       open_channel)
from ._claim_types import check_handlers, claim_types
from ._deadline_timer import DeadlineTimer
from ._errors import JobwireError
from ._failure import Failure, cut_error_text, failure_of
from ._handler_pool import HandlerPool
from ._lease_renewer import Lease, LeaseRenewer
from ._lease_rules import lease_ended_ago_ms, lease_length_s, renew_lease_ms
from ._middleware import Middleware, chain, check_middleware
from ._reconnect import reconnect_delay
from ._run_control import RunControl, failure_after_stop, local_deadline, stop_run
from ._settler import Settler
from ._types import Job, Outcome, encode_result
from ._work_stream import WorkStream
from ._worker_options import default_worker_id, init_settings  # noqa: F401 (re-exported)
from .v1 import broker_pb2 as pb
from .v1 import broker_pb2_grpc as pb_grpc

log = logging.getLogger("jobwire.worker")

Handler = Callable[[Job], Any]
OutcomeHook = Callable[[Outcome], None]


class Worker:
    """Consumes jobs from ``queues`` (earlier first, unless ``weights``) with
    ``concurrency`` handlers running at once.

    ``weights`` (queue name -> an int 1..1000, for every queue of ``queues``
    and no other) turns on weighted fair claiming: while several queues have
    due jobs, the free slots are split between them in proportion to their
    weights, a queue without due jobs leaving its share to the others. None
    or empty (the default): strict order. A bad mapping raises ValueError.

    ``lease_ms`` defaults to the broker's default (30 s); ``worker_id`` to
    ``python-<host>-<pid>``; ``grace`` (seconds) bounds how long ``stop()``
    waits for running handlers. ``on_outcome(outcome)`` receives every final
    outcome (see ``jobwire.Outcome``).

    ``token``, ``tls``, ``tls_root_ca``, ``tls_client_cert``,
    ``tls_client_key``: as for ``jobwire.Client`` (every call, the Claim
    stream included, carries the token). A TLS file that cannot be read (or
    an unusable token) makes ``run()`` raise ``JobwireError(INVALID_ARGUMENT)``.

    ``with Worker(...) as w:`` calls ``w.stop()`` when the block ends: the
    worker drains (see ``stop``) and its channel is closed.

    Each Claim names the job types registered (``ClaimRequest.types``), so
    the broker delivers only those: a job of another type waits pending,
    using no attempt, for a worker that handles it.

    Run control: a job enqueued with ``timeout_ms`` gets a local deadline
    (receipt plus ``timeout_ms``) at which its handler is told to stop
    (``job.cancelled``, ``job.cancel_reason == "timeout"``); a Cancel of a
    running job tells it the same way (``"cancelled"``), pushed on the Claim
    stream. A told handler that raises (``job.check_cancelled()`` raises
    ``JobCancelled``) fails the job with the reason as its error; one that
    returns is acked as usual (the broker refuses an Ack past the deadline:
    ``ack_error``, reason RUN_TIMED_OUT). ``job.progress(percent, data)``
    reports progress.

    Middleware: ``use(mw)`` wraps every handler in ``mw(job, call_next)``
    (the first registered outermost); e.g.
    ``jobwire.tracing.tracing_middleware()``.

    Thread safety: ``stop()`` may be called from any thread; register
    handlers and middlewares before ``run()``.
    """

    def __init__(
        self,
        addr: Optional[str] = None,
        queues: Union[str, Sequence[str], None] = None,
        concurrency: int = 1,
        lease_ms: Optional[int] = None,
        worker_id: Optional[str] = None,
        grace: float = 25.0,
        on_outcome: Optional[OutcomeHook] = None,
        *,
        weights: Optional[Mapping[str, int]] = None,
        timeout: float = DEFAULT_TIMEOUT,
        token: Optional[str] = None,
        tls: bool = False,
        tls_root_ca: PemSource = None,
        tls_client_cert: PemSource = None,
        tls_client_key: PemSource = None,
        channel_options=None,
    ):
        init_settings(self, addr, queues, concurrency, lease_ms, worker_id, grace, on_outcome,
                      timeout, weights)
        self._security = Security(token, tls, tls_root_ca, tls_client_cert, tls_client_key)
        self._metadata = self._security.metadata

        self._handlers: Dict[str, Handler] = {}
        self._middlewares: List[Middleware] = []  # the first is the outermost
        self._channel = open_channel(self.addr, channel_options, self._security)
        self._stub = pb_grpc.BrokerServiceStub(self._channel)
        self._pool = HandlerPool("jobwire")
        # The acks' batches that no Work stream carries.
        self._ack_batch = batch_sender(self._stub, self._metadata)
        # Sends every job's final Ack / Fail and reports its outcome.
        # Renews the lease of every job held (delivered, outcome not yet
        # decided), from one thread.
        self._renewer = LeaseRenewer(self._stub, self._metadata)
        self._settler = Settler(self._stub, self._metadata, self._pool, self.timeout,
                                self._report, self._handled, self._settled, self._send_acks,
                                self._renewer.remove)
        # Signals "timeout" to the runs whose deadline passes, from one thread.
        self._deadlines = DeadlineTimer()
        # The runs held, by (job id, lease token): a StopRun finds its run
        # here. Guarded by _lock.
        self._runs: Dict[Tuple[str, str], RunControl] = {}

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._running = 0  # jobs held: delivered, final Ack/Fail not done
        # Jobs whose handler has not returned: the broker frees a job's slot
        # when its final Ack / Fail arrives, so a job counts toward
        # concurrency only until that call is sent (on_outcome may still run).
        self._handling = 0
        self._call = None  # the open Work (or Claim) stream
        self._work: Optional[WorkStream] = None  # the open Work stream's acks
        # The broker answered Work UNIMPLEMENTED (older than Work): Claim
        # streams and AckBatch calls from then on. Read by the claim thread only.
        self._claim_only = False
        self._stop_requested = threading.Event()
        self._stop_at: Optional[float] = None
        self._skip_grace = False
        self._done = threading.Event()
        self._closed = False
        self._run_thread: Optional[threading.Thread] = None
        self._fatal: Optional[JobwireError] = None
        # The first SystemExit / KeyboardInterrupt a handler raised: it stops
        # the worker and run() raises it (the job is not failed).
        self._exit: Optional[BaseException] = None
        self._expired_dropped = 0  # guarded by _lock

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return "jobwire.Worker(addr=%r, queues=%r, worker_id=%r, tls=%s, token=%s)" % (
            self.addr, self.queues, self.worker_id, self._security.tls,
            "set" if self._metadata else "none")

    # -- registration -----------------------------------------------------
    def register(self, job_type: str, fn: Handler) -> Handler:
        """Run ``fn(job)`` for jobs of ``job_type`` (one of the types the
        worker's Claim names: at most 64)."""
        if not callable(fn):
            raise TypeError("handler must be callable")
        self._handlers[job_type] = fn
        return fn

    def handler(self, job_type: str) -> Callable[[Handler], Handler]:
        """Decorator form of ``register``: ``@worker.handler("send-email")``."""
        def deco(fn: Handler) -> Handler:
            return self.register(job_type, fn)
        return deco

    def use(self, mw: Middleware) -> Middleware:
        """Wrap every handler of this worker (all job types) in ``mw(job,
        call_next)``: it gets the job the handler gets and calls
        ``call_next(job)`` to run the next layer (the next middleware, in
        the end the handler), in the handler's thread. What it returns is
        the job's result (acked), what it raises fails the job, as for a
        handler. Several may be used; the first registered is the
        outermost. Returns ``mw``. Raises RuntimeError once ``run()`` was
        called, TypeError for what is not callable or is an ``async def``
        (that is for ``jobwire.aio.Worker``)."""
        with self._lock:
            check_middleware(mw, "threaded", self._run_thread is not None)
            self._middlewares.append(mw)
        return mw

    @property
    def running(self) -> int:
        """Jobs currently held (handler running or outcome being sent)."""
        with self._lock:
            return self._running

    def stats(self) -> Dict[str, int]:
        """Counters of this worker: ``expired_deliveries_dropped`` (deliveries
        whose lease had ended before their handler could start)."""
        with self._lock:
            return {"expired_deliveries_dropped": self._expired_dropped}

    # -- run / stop -------------------------------------------------------
    def run(self, install_signal_handlers: bool = True) -> None:
        """Consume until ``stop()`` (or SIGTERM / SIGINT when
        ``install_signal_handlers`` and called from the main thread). Raises
        ValueError at once, starting nothing, when no handler is registered or
        more than 64 job types have one (``ClaimRequest.types``' limit).
        Raises JobwireError if the broker refuses the Claim (INVALID_ARGUMENT)
        or the TLS / token options are unusable (INVALID_ARGUMENT). A handler that
        raises SystemExit or KeyboardInterrupt stops the worker (with the
        grace for the other handlers), and run() then raises that exception;
        its job is neither acked nor failed (its lease expires and the broker
        delivers it again)."""
        check_handlers(self._handlers)
        with self._lock:
            if self._run_thread is not None:
                raise RuntimeError("Worker.run() can be called once")
            self._run_thread = threading.current_thread()
        previous = {}
        if install_signal_handlers and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, self._on_signal)
        claim_thread = threading.Thread(target=self._claim_loop, daemon=True,
                                        name="jobwire-claim")
        log.info("jobwire worker %s: consuming %s at %s (concurrency %d)",
                 self.worker_id, ",".join(self.queues), self.addr, self.concurrency)
        try:
            claim_thread.start()
            while not self._stop_requested.wait(0.25):
                pass
        finally:
            self._request_stop()
            self._drain(claim_thread)
            for sig, prev in previous.items():
                signal.signal(sig, prev)
        if self._fatal is not None:
            raise self._fatal
        if self._exit is not None:
            raise self._exit

    def stop(self, wait: bool = True, timeout: Optional[float] = None) -> None:
        """Stop taking jobs; let running handlers finish and their Ack / Fail
        be sent within ``grace``. With ``wait`` (and when called from another
        thread than ``run()``'s), return once ``run()`` has finished."""
        self._request_stop()
        if self._run_thread is None:
            self._close()
            return
        me = threading.current_thread()
        # Never wait from run()'s own thread or from a handler (it would wait
        # for itself until the grace ends).
        if wait and me is not self._run_thread and not me.name.startswith("jobwire-handler-"):
            self._done.wait(timeout if timeout is not None else self.grace + self.timeout + 5)

    def _on_signal(self, signum, frame) -> None:
        if self._stop_requested.is_set():
            log.warning("jobwire: second signal %d: not waiting for running handlers", signum)
            self._skip_grace = True
            with self._cond:
                self._cond.notify_all()
            return
        log.info("jobwire: signal %d: stopping (grace %.1fs)", signum, self.grace)
        self._request_stop()

    def _request_stop(self) -> None:
        with self._cond:
            if self._stop_at is None:
                self._stop_at = time.monotonic()
            self._stop_requested.set()
            call = self._call
            self._cond.notify_all()
        if call is not None:
            call.cancel()

    def _drain(self, claim_thread: threading.Thread) -> None:
        claim_thread.join(timeout=self.timeout)
        deadline = (self._stop_at or time.monotonic()) + self.grace
        with self._cond:
            while self._running > 0 and not self._skip_grace:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.25))
            left_running = self._running
        if left_running:
            log.warning("jobwire: %d handler(s) still running after the %.1fs grace are "
                        "abandoned; their leases will expire and the jobs be retried",
                        left_running, self.grace)
        self._close()
        log.info("jobwire worker %s: stopped", self.worker_id)
        self._done.set()

    def _close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._settler.close()
        self._pool.shutdown()
        self._renewer.close()
        self._deadlines.close()
        self._channel.close()

    # -- Work stream ------------------------------------------------------
    def _claim_loop(self) -> None:
        """Keeps one stream open: a Work stream (the ClaimRequest first, then
        the acks messages ``_send_acks`` queues), or a Claim stream once the
        broker answered Work UNIMPLEMENTED; reopened after any end or error
        with backoff, at once after that UNIMPLEMENTED."""
        if self._security.error is not None:
            self._fatal = self._security.error
            log.error("jobwire: cannot connect: %s", self._fatal)
            self._request_stop()
            return
        attempt = 0  # reopens since a stream last delivered
        failures = 0
        while not self._stop_requested.is_set():
            with self._cond:
                while self._running >= self.concurrency and not self._stop_requested.is_set():
                    self._cond.wait(0.5)
                if self._stop_requested.is_set():
                    return
                free = self.concurrency - self._running
            req = pb.ClaimRequest(queues=self.queues, max_in_flight=free,
                                  lease_ms=self.lease_ms or 0, worker_id=self.worker_id,
                                  types=claim_types(self._handlers), weights=self.weights)
            delivered = False
            work = None if self._claim_only else WorkStream(req)
            try:
                if work is None:
                    call = self._stub.Claim(req, metadata=self._metadata)
                else:
                    call = self._stub.Work(work.requests(), metadata=self._metadata)
                with self._lock:
                    self._call = call
                    self._work = work
                if self._stop_requested.is_set():
                    call.cancel()
                # Each message carries jobs (all claimed for this stream since
                # the previous message, in claim order) and / or stops (runs
                # Cancel asked to stop), and on a Work stream ack answers; any
                # may be empty.
                for message in call:
                    if work is not None:
                        work.answer(message.ack_answers)
                    if not delivered:
                        delivered = True
                        if failures:
                            log.info("jobwire: claim stream delivering again")
                        failures = 0
                        attempt = 0
                    # Every job of a message read is leased to this worker:
                    # all are started, even if stop() came meanwhile.
                    for claimed in message.jobs:
                        self._dispatch(claimed)
                    for stop in message.stops:
                        self._stop_run(stop)
                log.info("jobwire: claim stream ended by the broker; reopening")
            except grpc.RpcError as e:
                if self._stop_requested.is_set():
                    return
                code = e.code()
                if code == grpc.StatusCode.INVALID_ARGUMENT:
                    self._fatal = JobwireError.from_rpc_error(e)
                    log.error("jobwire: broker refused the Claim: %s", self._fatal)
                    self._request_stop()
                    return
                if code == grpc.StatusCode.UNIMPLEMENTED and work is not None:
                    log.info("jobwire: the broker has no Work streams: Claim streams and "
                             "AckBatch calls from now on")
                    self._claim_only = True
                    continue  # at once, with no backoff
                failures += 1
                level = logging.WARNING if failures == 1 else logging.DEBUG
                log.log(level, "jobwire: claim stream error %s: %s; reconnecting",
                        code.name if code else "?", e.details())
            except ValueError:  # channel closed
                return
            finally:
                with self._lock:
                    self._call = None
                    self._work = None
                if work is not None:
                    work.end()  # its unanswered acks go as AckBatch calls
            if self._stop_requested.is_set():
                return
            delay = reconnect_delay(attempt)
            attempt += 1
            self._stop_requested.wait(delay)

    def _send_acks(self, requests: List["pb.AckRequest"],
                   timeout: float) -> List[Optional[JobwireError]]:
        """The ack coalescer's ``send``: the batch goes on the Work stream
        when one is open, else (or when it ended before answering) as an
        AckBatch call."""
        with self._lock:
            work = self._work
        if work is not None:
            errors = work.send_acks(requests, timeout)
            if errors is not None:
                return errors
        return self._ack_batch(requests, timeout)

    def _dispatch(self, claimed) -> None:
        with self._cond:
            self._running += 1
            self._handling += 1
            over = self._handling > self.concurrency
        if over:
            log.warning("jobwire: job %s delivered beyond concurrency %d (a lease was lost "
                        "while its handler runs); starting it anyway",
                        claimed.job.id, self.concurrency)
        job = Job.from_proto(claimed.job, lease_expires_at_ms=claimed.lease_expires_at_ms,
                             lease_ms=claimed.lease_ms)
        received = time.monotonic()
        run = RunControl(job, claimed.lease_token, local_deadline(job.timeout_ms, received),
                         self._report_progress)
        with self._lock:
            self._runs[(job.id, run.token)] = run
        self._deadlines.add(run)
        self._pool.submit(self._process, job, run, received)

    def _stop_run(self, stop) -> None:
        """A StopRun from the Claim stream (see _run_control.stop_run)."""
        with self._lock:
            run = self._runs.get((stop.job_id, stop.lease_token))
        stop_run(run, stop)

    def _report_progress(self, request) -> None:
        """ReportProgress (job.progress()): raises JobwireError when refused."""
        try:
            self._stub.ReportProgress(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise JobwireError.from_rpc_error(e) from None

    # -- one job ----------------------------------------------------------
    def _process(self, job: Job, run: RunControl, received: float) -> None:
        token = run.token
        lease = Lease(job, token,
                      lease_length_s(job.lease_ms, self.lease_ms),
                      renew_lease_ms(job.lease_ms, self.lease_ms), self.timeout, received, run)
        acking = False  # the Ack was queued: its answer settles the job
        try:
            ended_ago = lease_ended_ago_ms(job.lease_expires_at_ms, lease.deadline)
            if ended_ago is not None:
                self._drop_expired(job, lease, ended_ago)
                return
            # Renewed until the job's outcome is decided: the Settler stops
            # it before reporting that outcome (also when an Ack is settled
            # on another thread), else the finally below.
            self._renewer.add(lease)
            fn = self._handlers.get(job.type)
            if fn is None:
                # Only a broker older than ClaimRequest.types delivers a type
                # the Claim did not name: failed for a retry, so that a
                # worker that handles it takes the job.
                text = 'no handler for job type "%s" in worker %s' % (job.type, self.worker_id)
                log.warning("jobwire: %s (job %s/%s failed for a retry)", text, job.queue, job.id)
                self._settler.fail(job, lease, Failure(text))
                return
            try:
                value = chain(self._middlewares, fn)(job)
            except (SystemExit, KeyboardInterrupt) as e:
                self._renewer.remove(lease)  # abandoned: its lease expires
                self._exit_requested(job, e)
                return
            except BaseException as e:  # noqa: B036 - every other handler failure is a Fail
                self._deadlines.remove(run)
                failure = failure_of(e)
                log.info("jobwire: job %s/%s attempt %d failed: %s",
                         job.queue, job.id, job.attempt, failure.error[:500])
                if run.reason is not None:  # told to stop: failed with the reason
                    failure = failure_after_stop(run.reason, failure)
                self._settler.fail(job, lease, failure)
                return
            self._deadlines.remove(run)
            try:
                result = encode_result(value)
            except (TypeError, ValueError) as e:
                self._settler.fail(job, lease, Failure(cut_error_text(
                    "%s: handler result is not JSON-encodable: %s" % (type(e).__name__, e))))
                return
            self._settler.ack(job, lease, result)
            acking = True
        finally:
            if not acking:  # else the Ack's settling stops the renewal
                self._renewer.remove(lease)
            self._deadlines.remove(run)
            with self._lock:
                self._runs.pop((job.id, token), None)
            self._handled(lease)
            if not acking:
                self._settled()

    def _exit_requested(self, job: Job, exc: BaseException) -> None:
        """A handler raised SystemExit / KeyboardInterrupt: no Fail for its
        job; the worker stops and run() raises ``exc``."""
        log.warning("jobwire: handler of job %s/%s raised %s: stopping the worker; the job is "
                    "not failed (its lease expires and it is delivered again)",
                    job.queue, job.id, type(exc).__name__)
        with self._lock:
            if self._exit is None:
                self._exit = exc
        self._request_stop()

    def _drop_expired(self, job: Job, lease: Lease, ended_ago_ms: float) -> None:
        """No handler, no Ack / Fail: the broker's reaper delivers the job again."""
        with self._lock:
            self._expired_dropped += 1
        log.warning("jobwire: delivery of job %s/%s (attempt %d) dropped: its lease ended "
                    "%.0f ms ago, before its handler could start", job.queue, job.id,
                    job.attempt, ended_ago_ms)
        self._report(Outcome("expired_dropped", job, lease_lost=lease.lost))

    def _settled(self) -> None:
        """The job's final Ack / Fail is answered (or given up): its slot frees."""
        with self._cond:
            self._running -= 1
            self._cond.notify_all()

    def _handled(self, lease: Lease) -> None:
        """The job's handler phase is over: it stops counting toward
        concurrency (once per job; see _handling), and whether its lease was
        lost meanwhile is kept for its outcome (Lease.lost_in_handler)."""
        with self._cond:
            if not lease.handled:
                lease.handled = True
                lease.lost_in_handler = lease.lost
                self._handling -= 1

    def _report(self, outcome: Outcome) -> None:
        if self.on_outcome is None or self._closed:
            return
        try:
            self.on_outcome(outcome)
        except Exception:
            log.exception("jobwire: on_outcome hook raised")
