"""Worker side: one Claim stream, a thread pool of handlers, lease renewal,
Ack (coalesced into AckBatch calls) / Fail with retries, reconnects, graceful
stop (docs/clients.md)."""
from __future__ import annotations

import logging
import os
import queue as _queue
import random
import signal
import socket
import threading
import time
from typing import Any, Callable, Dict, Optional, Sequence, Union

import grpc

from ._ack_coalescer import AckCoalescer, batch_sender
from ._channel import DEFAULT_TIMEOUT, PemSource, Security, open_channel, resolve_addr
from ._errors import JobwireError, NonRetryableError
from ._lease_renewer import Lease, LeaseRenewer
from ._lease_rules import lease_ended_ago_ms, retry_wait
from ._types import Job, Outcome, encode_result
from .v1 import broker_pb2 as pb
from .v1 import broker_pb2_grpc as pb_grpc

log = logging.getLogger("jobwire.worker")

Handler = Callable[[Job], Any]
OutcomeHook = Callable[[Outcome], None]

_RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
_MAX_ERROR_BYTES = 64 * 1024
_BROKER_DEFAULT_LEASE_S = 30.0
_RECONNECT_MIN_S = 0.1
_RECONNECT_MAX_S = 5.0


def default_worker_id() -> str:
    return "python-%s-%d" % (socket.gethostname(), os.getpid())


def error_text(exc: BaseException) -> str:
    """``"<ErrorType>: <message>"``, cut to the broker's 64 KiB limit."""
    text = "%s: %s" % (type(exc).__name__, exc)
    data = text.encode("utf-8")
    if len(data) > _MAX_ERROR_BYTES:
        text = data[: _MAX_ERROR_BYTES].decode("utf-8", "ignore")
    return text


class _Pool:
    """A small thread pool that grows only when every thread is busy.

    Normally it holds ``concurrency`` threads (the Claim stream never
    delivers more jobs than free slots); the rare extra job (the broker
    freed a slot because a lease was lost while its handler still runs) gets
    its own thread instead of waiting, so the worker never holds a job it
    does not start. Threads are daemons so that handlers abandoned after the
    stop grace do not keep the process alive."""

    def __init__(self, name: str):
        self._name = name
        self._tasks: "_queue.SimpleQueue" = _queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._closed = False

    def submit(self, fn: Callable, *args) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("pool is shut down")
            if self._idle > 0:
                self._idle -= 1
            else:
                self._threads += 1
                t = threading.Thread(target=self._loop, daemon=True,
                                     name="%s-handler-%d" % (self._name, self._threads))
                t.start()
            self._tasks.put((fn, args))

    def _loop(self) -> None:
        while True:
            item = self._tasks.get()
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except BaseException:  # never lose a pool thread
                log.exception("jobwire: unexpected error in handler thread")
            with self._lock:
                if self._closed:
                    return
                self._idle += 1

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            n = self._threads
        for _ in range(n):
            self._tasks.put(None)


def _init_settings(worker, addr, queues, concurrency, lease_ms, worker_id, grace, on_outcome,
                   timeout) -> None:
    """Checks and stores the options shared by the sync and asyncio workers."""
    if isinstance(queues, str):
        queues = [queues]
    worker.queues = list(queues or [])
    if not worker.queues:
        raise ValueError("Worker needs at least one queue")
    if int(concurrency) < 1:
        raise ValueError("concurrency must be >= 1")
    worker.addr = resolve_addr(addr)
    worker.concurrency = int(concurrency)
    worker.lease_ms = int(lease_ms) if lease_ms else None
    worker.worker_id = worker_id or default_worker_id()
    worker.grace = float(grace)
    worker.on_outcome = on_outcome
    worker.timeout = float(timeout)


class Worker:
    """Consumes jobs from ``queues`` (earlier first) with ``concurrency``
    handlers running at once.

    ``lease_ms`` defaults to the broker's default (30 s); ``worker_id`` to
    ``python-<host>-<pid>``; ``grace`` (seconds) bounds how long ``stop()``
    waits for running handlers. ``on_outcome(outcome)`` receives every final
    outcome (see ``jobwire.Outcome``).

    ``token``, ``tls``, ``tls_root_ca``, ``tls_client_cert``,
    ``tls_client_key``: as for ``jobwire.Client`` (every call, the Claim
    stream included, carries the token). A TLS file that cannot be read (or
    an unusable token) makes ``run()`` raise ``JobwireError(INVALID_ARGUMENT)``.
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
        timeout: float = DEFAULT_TIMEOUT,
        token: Optional[str] = None,
        tls: bool = False,
        tls_root_ca: PemSource = None,
        tls_client_cert: PemSource = None,
        tls_client_key: PemSource = None,
        channel_options=None,
    ):
        _init_settings(self, addr, queues, concurrency, lease_ms, worker_id, grace, on_outcome,
                       timeout)
        self._security = Security(token, tls, tls_root_ca, tls_client_cert, tls_client_key)
        self._metadata = self._security.metadata

        self._handlers: Dict[str, Handler] = {}
        self._channel = open_channel(self.addr, channel_options, self._security)
        self._stub = pb_grpc.BrokerStub(self._channel)
        self._pool = _Pool("jobwire")
        # Every Ack goes through it (AckBatch calls); Fail stays a unary call.
        self._acks = AckCoalescer(batch_sender(self._stub, self._metadata))
        # Renews the lease of every running handler, from one thread.
        self._renewer = LeaseRenewer(self._stub, self._metadata)

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._running = 0  # jobs held: delivered, final Ack/Fail not done
        # Jobs whose handler has not returned: the broker frees a job's slot
        # when its final Ack / Fail arrives, so a job counts toward
        # concurrency only until that call is sent (on_outcome may still run).
        self._handling = 0
        self._call = None  # the open Claim stream
        self._stop_requested = threading.Event()
        self._stop_at: Optional[float] = None
        self._skip_grace = False
        self._done = threading.Event()
        self._closed = False
        self._run_thread: Optional[threading.Thread] = None
        self._fatal: Optional[JobwireError] = None
        self._expired_dropped = 0  # guarded by _lock

    def __repr__(self) -> str:
        return "jobwire.Worker(addr=%r, queues=%r, worker_id=%r, tls=%s, token=%s)" % (
            self.addr, self.queues, self.worker_id, self._security.tls,
            "set" if self._metadata else "none")

    # -- registration -----------------------------------------------------
    def register(self, job_type: str, fn: Handler) -> Handler:
        """Run ``fn(job)`` for jobs of ``job_type``."""
        if not callable(fn):
            raise TypeError("handler must be callable")
        self._handlers[job_type] = fn
        return fn

    def handler(self, job_type: str) -> Callable[[Handler], Handler]:
        """Decorator form of ``register``: ``@worker.handler("send-email")``."""
        def deco(fn: Handler) -> Handler:
            return self.register(job_type, fn)
        return deco

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
        JobwireError if the broker refuses the Claim (INVALID_ARGUMENT) or the
        TLS / token options are unusable (INVALID_ARGUMENT)."""
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
        self._pool.shutdown()
        self._renewer.close()
        self._channel.close()

    # -- Claim stream -----------------------------------------------------
    def _claim_loop(self) -> None:
        if self._security.error is not None:
            self._fatal = self._security.error
            log.error("jobwire: cannot connect: %s", self._fatal)
            self._request_stop()
            return
        backoff = _RECONNECT_MIN_S
        failures = 0
        while not self._stop_requested.is_set():
            with self._cond:
                while self._running >= self.concurrency and not self._stop_requested.is_set():
                    self._cond.wait(0.5)
                if self._stop_requested.is_set():
                    return
                free = self.concurrency - self._running
            req = pb.ClaimRequest(queues=self.queues, max_in_flight=free,
                                  lease_ms=self.lease_ms or 0, worker_id=self.worker_id)
            delivered = False
            try:
                call = self._stub.Claim(req, metadata=self._metadata)
                with self._lock:
                    self._call = call
                if self._stop_requested.is_set():
                    call.cancel()
                # Each message carries one or more jobs (all claimed for this
                # stream since the previous message), in claim order.
                for message in call:
                    if not delivered:
                        delivered = True
                        if failures:
                            log.info("jobwire: claim stream delivering again")
                        failures = 0
                        backoff = _RECONNECT_MIN_S
                    # Every job of a message read is leased to this worker:
                    # all are started, even if stop() came meanwhile.
                    for claimed in message.jobs:
                        self._dispatch(claimed)
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
                failures += 1
                level = logging.WARNING if failures == 1 else logging.DEBUG
                log.log(level, "jobwire: claim stream error %s: %s; reconnecting",
                        code.name if code else "?", e.details())
            except ValueError:  # channel closed
                return
            finally:
                with self._lock:
                    self._call = None
            if self._stop_requested.is_set():
                return
            delay = random.uniform(0, backoff)  # full jitter
            backoff = min(backoff * 2, _RECONNECT_MAX_S)
            self._stop_requested.wait(delay)

    def _dispatch(self, claimed) -> None:
        with self._cond:
            self._running += 1
            self._handling += 1
            over = self._handling > self.concurrency
        if over:
            log.warning("jobwire: job %s delivered beyond concurrency %d (a lease was lost "
                        "while its handler runs); starting it anyway",
                        claimed.job.id, self.concurrency)
        job = Job.from_proto(claimed.job, lease_expires_at_ms=claimed.lease_expires_at_ms)
        self._pool.submit(self._process, job, claimed.lease_token, time.monotonic())

    # -- one job ----------------------------------------------------------
    def _lease_seconds(self, job: Job) -> float:
        if self.lease_ms:
            return self.lease_ms / 1000.0
        # Broker default lease: estimate it from the expiry the broker sent
        # (clocks may differ a little); fall back to the documented 30 s.
        est = job.lease_expires_at_ms / 1000.0 - time.time()
        return est if 1.0 <= est <= 43200.0 else _BROKER_DEFAULT_LEASE_S

    def _process(self, job: Job, token: str, received: float) -> None:
        lease = Lease(job, token, self._lease_seconds(job), self.lease_ms or 0, self.timeout,
                      received)
        acking = False  # the Ack was queued: its answer settles the job
        try:
            ended_ago = lease_ended_ago_ms(job.lease_expires_at_ms, lease.deadline)
            if ended_ago is not None:
                self._drop_expired(job, lease, ended_ago)
                return
            fn = self._handlers.get(job.type)
            if fn is None:
                text = 'no handler for job type "%s" in worker %s' % (job.type, self.worker_id)
                log.warning("jobwire: %s (job %s/%s failed for a retry)", text, job.queue, job.id)
                self._fail(job, lease, text, non_retryable=False)
                return
            self._renewer.add(lease)
            try:
                value = fn(job)
            except BaseException as e:  # noqa: B036 - every handler failure is a Fail
                self._renewer.remove(lease)
                log.info("jobwire: job %s/%s attempt %d failed: %s",
                         job.queue, job.id, job.attempt, error_text(e)[:500])
                self._fail(job, lease, error_text(e), non_retryable=isinstance(e, NonRetryableError))
                return
            self._renewer.remove(lease)
            try:
                result = encode_result(value)
            except (TypeError, ValueError) as e:
                self._fail(job, lease, "%s: handler result is not JSON-encodable: %s"
                           % (type(e).__name__, e), non_retryable=False)
                return
            self._ack(job, lease, result)
            acking = True
        finally:
            self._renewer.remove(lease)
            self._handled(lease)
            if not acking:
                self._settled()

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
        concurrency (once per job; see _handling)."""
        with self._cond:
            if not lease.handled:
                lease.handled = True
                self._handling -= 1

    def _ack(self, job: Job, lease: Lease, result: bytes) -> None:
        """Queues the Ack without waiting for its answer (this thread may be
        the one that sends it, and the Acks of other jobs with it)."""
        req = pb.AckRequest(queue=job.queue, job_id=job.id, lease_token=lease.token, result=result)
        self._handled(lease)
        self._acks.submit(req, self.timeout, lambda err: self._acked(job, lease, req, err))

    def _acked(self, job: Job, lease: Lease, req, err: Optional[JobwireError]) -> None:
        # On the thread sending the AckBatch call: must not block.
        if (err is not None and err.code in _RETRYABLE and not self._closed
                and time.monotonic() < lease.deadline):
            # Retried with backoff on a handler thread (the sender sleeps for no one).
            try:
                self._pool.submit(self._retry_ack, job, lease, req)
                return
            except RuntimeError:  # the pool shut down meanwhile
                pass
        try:
            self._report_ack(job, lease, err)
        finally:
            self._settled()

    def _retry_ack(self, job: Job, lease: Lease, req) -> None:
        try:
            wait = retry_wait(random.uniform(0.05, 0.1), lease.deadline - time.monotonic())
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
            self._report(Outcome("ack_ok", job, lease_lost=lease.lost))
        elif err.code in _RETRYABLE:
            log.warning("jobwire: Ack of job %s/%s unanswered when its lease ended (%s); "
                        "it may or may not be stored", job.queue, job.id, err)
            self._report(Outcome("ack_unknown", job, code=err.code, error=err.message,
                                 lease_lost=lease.lost))
        else:
            log.warning("jobwire: Ack of job %s/%s refused: %s", job.queue, job.id, err)
            self._report(Outcome("ack_error", job, code=err.code, error=err.message,
                                 lease_lost=lease.lost))

    def _fail(self, job: Job, lease: Lease, text: str, non_retryable: bool) -> None:
        req = pb.FailRequest(queue=job.queue, job_id=job.id, lease_token=lease.token,
                             error=text, non_retryable=non_retryable)
        ok, resp, err = self._send_final(self._unary_fail, req, lease)
        if ok:
            outcome = pb.FailResponse.Outcome.Name(resp.outcome)
            self._report(Outcome("fail_ok", job, fail_outcome=outcome,
                                 next_attempt_at_ms=resp.next_attempt_at_ms, error=text,
                                 lease_lost=lease.lost))
        elif err is not None and err.code in _RETRYABLE:
            log.warning("jobwire: Fail of job %s/%s unanswered when its lease ended (%s); "
                        "it may or may not be stored", job.queue, job.id, err)
            self._report(Outcome("fail_unknown", job, code=err.code, error=err.message,
                                 lease_lost=lease.lost))
        elif err is not None:
            log.warning("jobwire: Fail of job %s/%s refused: %s", job.queue, job.id, err)
            self._report(Outcome("fail_error", job, code=err.code, error=err.message,
                                 lease_lost=lease.lost))

    def _unary_fail(self, request, timeout: float):
        return self._stub.Fail(request, timeout=timeout, metadata=self._metadata)

    def _send_final(self, method, request, lease: Lease, delay: float = 0.1):
        """Ack / Fail (``method(request, timeout)``), retried on UNAVAILABLE /
        DEADLINE_EXCEEDED until the lease (as last known) has ended, the last
        attempt at its end (_lease_rules.retry_wait). Returns (ok, response,
        JobwireError), the error UNAVAILABLE / DEADLINE_EXCEEDED when the
        outcome is unknown; (False, None, None) when the worker was shut down
        meanwhile."""
        self._handled(lease)
        first = True
        while True:
            timeout = self.timeout
            if not first:
                timeout = min(self.timeout, max(lease.deadline - time.monotonic(), 0.5))
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
            if err.code in _RETRYABLE:
                wait = retry_wait(random.uniform(delay / 2, delay),
                                  lease.deadline - time.monotonic())
                if wait is not None:
                    time.sleep(wait)
                    delay = min(delay * 2, 2.0)
                    continue
            return False, None, err

    def _report(self, outcome: Outcome) -> None:
        if self.on_outcome is None or self._closed:
            return
        try:
            self.on_outcome(outcome)
        except Exception:
            log.exception("jobwire: on_outcome hook raised")
