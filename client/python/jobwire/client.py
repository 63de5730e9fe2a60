"""Producer side: Client.enqueue / enqueue_batch / get_job / wait / cancel /
subscribe, and ack_batch for callers that claim jobs themselves."""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, List, Mapping, Optional, Sequence

import grpc

from ._channel import DEFAULT_TIMEOUT, PemSource, Security, open_channel, resolve_addr
from ._errors import JobwireError
from ._requests import (_NO_PAYLOAD, _ack_item, _batch_item, build_ack_results,
                        build_enqueue_request, build_enqueue_results, build_progress_request,
                        publish_tracer)
from ._subscribe import Kinds, Queues, SubscribeState, Subscription, build_subscribe_request
from ._types import AckResult, EnqueueResult, Job
from ._wait import Waiter
from .v1 import broker_pb2 as pb
from .v1 import broker_pb2_grpc as pb_grpc

class Client:
    """A producer / poller connected to one broker (one gRPC channel).

    ``addr`` defaults to ``$JOBWIRE_ADDR``, else ``localhost:50051``; every
    call has a deadline of ``timeout`` seconds (overridable per call). Every
    failed call raises ``JobwireError`` with the broker's code and message,
    and the typed details it attached (``reason``, a ``jobwire.Reason``
    value; ``metadata``; ``field``; ``retry_delay``).

    Security (all keyword-only, off by default):

    - ``token``: bearer token sent as ``authorization: Bearer <token>`` on
      every call; ``None`` / empty means ``$JOBWIRE_TOKEN``, else none.
    - ``tls``: use TLS with the system roots. TLS is also on when any
      ``tls_*`` option is set; each is PEM text (``"-----BEGIN ..."``, str or
      bytes) or the path of a PEM file. ``tls_root_ca``: the CA(s) to trust;
      ``tls_client_cert`` + ``tls_client_key``: a certificate for mutual TLS.

    A file that cannot be read (or a token a gRPC header cannot carry) makes
    every call raise ``JobwireError(INVALID_ARGUMENT, ...)``. No error, log
    line or repr contains the token.

    Tracing (needs ``opentelemetry-api``: ``pip install 'jobwire[otel]'``;
    ImportError here without it): with ``tracing=True`` each ``enqueue`` /
    ``enqueue_batch`` call is a PRODUCER span ``publish <queue>`` (from
    ``tracer_provider``, default the global one), a child of the caller's
    current span, written into each job's headers as W3C ``traceparent`` /
    ``tracestate`` unless the job's headers hold a ``traceparent`` already
    (see ``jobwire.tracing``). Off by default.
    """

    def __init__(self, addr: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
                 *, token: Optional[str] = None, tls: bool = False,
                 tls_root_ca: PemSource = None, tls_client_cert: PemSource = None,
                 tls_client_key: PemSource = None, channel_options=None,
                 tracing: bool = False, tracer_provider: Any = None):
        self._tracer = publish_tracer(tracing, tracer_provider)
        self.addr = resolve_addr(addr)
        self.timeout = float(timeout)
        self._security = Security(token, tls, tls_root_ca, tls_client_cert, tls_client_key)
        self._metadata = self._security.metadata
        self._channel = open_channel(self.addr, channel_options, self._security)
        self._stub = pb_grpc.BrokerServiceStub(self._channel)
        # close() was called: the channel's calls end CANCELLED by the
        # client, which a wait or a subscription does not call again after.
        self._closed = False

    def __repr__(self) -> str:
        return "jobwire.Client(addr=%r, tls=%s, token=%s)" % (
            self.addr, self._security.tls, "set" if self._metadata else "none")

    # -- plumbing ---------------------------------------------------------
    def _call(self, method, request, timeout: Optional[float]):
        self._security.check()
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout,
                          metadata=self._metadata)
        except grpc.RpcError as e:
            raise JobwireError.from_rpc_error(e) from None

    def close(self) -> None:
        self._closed = True  # before the calls it cancels end
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- producer ---------------------------------------------------------
    def enqueue(
        self,
        queue: str,
        type: str,
        payload: Any = _NO_PAYLOAD,
        *,
        priority: Optional[int] = None,
        delay_ms: Any = None,
        run_at: Any = None,
        max_attempts: Optional[int] = None,
        idempotency_key: Optional[str] = None,
        backoff_base_ms: Any = None,
        backoff_max_ms: Any = None,
        completed_retention_ms: Any = None,
        timeout_ms: Any = None,
        headers: Optional[Mapping[str, str]] = None,
        concurrency_key: Optional[str] = None,
        depends_on: Optional[Sequence[str]] = None,
        run_after_failed_dependency: Optional[bool] = None,
        depends_on_batch_index: Optional[Sequence[int]] = None,
        timeout: Optional[float] = None,
    ) -> EnqueueResult:
        """Store one job. ``payload``: bytes pass through unchanged, anything
        else is JSON-encoded. ``timeout_ms`` (ms or a timedelta): the longest
        a run of the job may take; its handler is told to stop at the
        deadline and the attempt fails with error "timeout". ``headers``: a
        mapping of str to str (e.g. W3C ``traceparent``) stored with the job
        and handed to its handler as ``job.headers``; the broker refuses
        bad keys or too many / too large headers with INVALID_ARGUMENT
        (field ``headers``; with ``tracing`` on, ``traceparent`` /
        ``tracestate`` are added to the request, never to ``headers``
        itself). ``depends_on``: ids of jobs of this queue that must complete
        first (docs/semantics.md, "Dependencies"); until then the job is
        PENDING with ``dependencies_left`` > 0, then its handler gets each
        parent's result in ``job.dependency_results``; a parent that ends
        dead makes it dead ("dependency failed: <id>") unless
        ``run_after_failed_dependency``. An id that names no job of the
        queue raises JobwireError NOT_FOUND, reason DEPENDENCY_NOT_FOUND
        (nothing stored). ``depends_on_batch_index`` belongs to
        ``enqueue_batch``: here the broker refuses it (INVALID_ARGUMENT,
        nothing stored). ``timeout`` is this call's deadline in seconds.
        Returns ``EnqueueResult(job_id, duplicate)``."""
        req = build_enqueue_request(
            queue, type, payload,
            priority=priority, delay_ms=delay_ms, run_at=run_at,
            max_attempts=max_attempts, idempotency_key=idempotency_key,
            backoff_base_ms=backoff_base_ms, backoff_max_ms=backoff_max_ms,
            completed_retention_ms=completed_retention_ms, timeout_ms=timeout_ms,
            headers=headers, concurrency_key=concurrency_key, depends_on=depends_on,
            run_after_failed_dependency=run_after_failed_dependency,
            depends_on_batch_index=depends_on_batch_index,
        )
        if self._tracer is None:
            resp = self._call(self._stub.Enqueue, req, timeout)
        else:
            with self._tracer.publish(queue, [req], batch=False) as span:
                resp = self._call(self._stub.Enqueue, req, timeout)
                span.set_attribute("messaging.message.id", resp.job_id)
        return EnqueueResult(job_id=resp.job_id, duplicate=resp.duplicate)

    def enqueue_batch(self, queue: str, jobs: Iterable[Mapping[str, Any]],
                      *, timeout: Optional[float] = None) -> List[EnqueueResult]:
        """Store up to 1000 jobs, each ``{"type", "payload", "options": {...}}``
        (options, ``headers`` among them, may also be inline keys). One
        result per job, in order; a job the broker refused has ``.error`` set
        (returned, not raised), a JobwireError whose ``reason`` is the
        result's (e.g. INVALID_FIELD; refused headers: a message naming
        ``jobs[<i>].headers``; a ``depends_on`` id naming no job: NOT_FOUND,
        DEPENDENCY_NOT_FOUND).
        ``depends_on_batch_index`` (a list of int): parents among the
        batch's earlier jobs, by index in ``jobs`` (same queue, distinct,
        with ``depends_on`` at most 20 parents); the batch stores the graph
        in one go and the child's ``Job.depends_on`` lists the ids they got.
        A child whose batch parent was refused is refused too:
        INVALID_ARGUMENT (``jobs[i].depends_on_batch_index[k]: names
        jobs[j], which was refused``) when the parent was invalid, NOT_FOUND
        with DEPENDENCY_NOT_FOUND (``... which was not stored``) when it was
        not stored.
        A call-level error (empty or oversized batch) raises JobwireError.
        With ``tracing`` on, the call is one span for all its jobs."""
        req = pb.EnqueueBatchRequest(jobs=[_batch_item(queue, j) for j in jobs])
        if self._tracer is None:
            resp = self._call(self._stub.EnqueueBatch, req, timeout)
        else:
            with self._tracer.publish(queue, req.jobs, batch=True):
                resp = self._call(self._stub.EnqueueBatch, req, timeout)
        return build_enqueue_results(resp)

    # -- submit and poll --------------------------------------------------
    def get_job(self, queue: str, job_id: str, *, timeout: Optional[float] = None) -> Job:
        """The job in whatever state it is (NOT_FOUND raises)."""
        resp = self._call(self._stub.GetJob, pb.GetJobRequest(queue=queue, job_id=job_id), timeout)
        return Job.from_proto(resp.job)

    def get_job_by_idempotency_key(self, queue: str, key: str, *,
                                   timeout: Optional[float] = None) -> Job:
        """The job enqueued with ``idempotency_key=key``, while the key's
        dedup window lasts (NOT_FOUND raises when none)."""
        resp = self._call(self._stub.GetJob,
                          pb.GetJobRequest(queue=queue, idempotency_key=key), timeout)
        return Job.from_proto(resp.job)

    def wait(self, queue: str, job_id: str, timeout: Optional[float] = None, *,
             on_update: Optional[Callable[[Job], Any]] = None) -> Job:
        """Block until the job finishes (WaitJob) and return it COMPLETED
        (``result`` / ``result_json()``: the worker's result; empty for a job
        deleted on ack, completed retention 0). A job already finished
        answers at once.

        ``timeout``: seconds (> 0), or None for no limit. ``on_update(job)``
        is called with the job as it is when the wait starts, then at each
        change of its state, attempts or progress (``progress_percent``,
        ``progress_data``), the final state included; what it
        raises ends the wait (the call is cancelled) and propagates.

        Raises ``JobDeadError`` (``.job``) when the job ends DEAD,
        ``WaitTimeoutError`` (``.job``: the latest state seen, or None) when
        ``timeout`` passes first, else ``JobwireError``: NOT_FOUND (no such
        job, or deleted meanwhile), INVALID_ARGUMENT, UNAUTHENTICATED,
        PERMISSION_DENIED, RESOURCE_EXHAUSTED (reason TOO_MANY_WAITS),
        CANCELLED when the Client is closed meanwhile.
        UNAVAILABLE (broker restarting or draining, Redis down) is not
        raised, nor is a CANCELLED the client did not cause (what a broker
        shutting down may answer instead, grpc/grpc#41785): the wait calls
        again after the reconnect backoff (100 ms doubling to 5 s, full
        jitter) with the time that remains, so with no timeout it waits out
        an outage however long it lasts."""
        self._security.check()
        w = Waiter(queue, job_id, timeout)
        while True:
            req, deadline = w.request()
            call = self._stub.WaitJob(req, timeout=deadline, metadata=self._metadata)
            in_update = False  # what on_update raises is its own, never the call's
            try:
                for resp in call:
                    job = w.take(resp)
                    if job is None:
                        continue
                    if on_update is not None:
                        in_update = True
                        on_update(job)
                        in_update = False
                    if w.finished(job):
                        return job
                w.ended()
            except grpc.RpcError as e:
                if in_update:
                    raise
                err = JobwireError.from_rpc_error(e)
            finally:
                call.cancel()
            # The call is cancelled here only once it has ended: the one
            # CANCELLED the client causes before is the channel's, close().
            time.sleep(w.retry_delay(err, cancelled_by_client=self._closed))

    def subscribe(self, queues: Queues, kinds: Kinds = None, include_details: bool = False, *,
                  timeout: Optional[float] = None) -> Subscription:
        """Follow the events of ``queues`` (a name or 1..100 names, no
        repeats): returns a ``Subscription``, an iterator of ``QueueEvent``
        (and a context manager; ``close()`` ends it), once the broker has
        confirmed the subscription, so every event that happens after this
        returns is delivered. Events of one queue partition come in the
        order they happened.

        ``kinds``: the event kinds to deliver (``'enqueued'``, ``'active'``,
        ``'completed'``, ``'retry'``, ``'dead'``, ``'cancelled'``,
        ``'lease_expired'``, ``'released'``, ``'redriven'``, ``'deleted'``);
        None or empty: all. ``include_details``: fill ``result`` of
        ``'completed'`` and ``error`` of ``'retry'`` / ``'dead'``.
        ``timeout``: seconds the broker has to confirm (default: the
        client's timeout).

        Raises ValueError for an unknown kind (TypeError for what is not a
        string), before calling; else ``JobwireError``: INVALID_ARGUMENT
        (queues), UNAUTHENTICATED, PERMISSION_DENIED (each queue needs read
        access), RESOURCE_EXHAUSTED (reason TOO_MANY_SUBSCRIPTIONS),
        UNAVAILABLE (broker unreachable or draining), DEADLINE_EXCEEDED (no
        confirmation within ``timeout``).

        Once subscribed, a stream that ends with UNAVAILABLE (a broker
        restarting or draining), CANCELLED not caused by the client (what a
        broker shutting down may answer instead, grpc/grpc#41785; closing
        the Client cancels the call: that CANCELLED is raised), or
        RESOURCE_EXHAUSTED with reason
        SUBSCRIBER_TOO_SLOW or TOO_MANY_SUBSCRIPTIONS, is subscribed again
        inside ``next()`` with the reconnect backoff (100 ms doubling to
        5 s, full jitter; the broker's ``retry_delay`` when larger), for as
        long as it takes; then one event of kind ``'events_missed'`` comes
        first, since the gap's events are lost (so does a broker message
        telling of lost events). Any other error is raised from ``next()``
        and ends the subscription."""
        self._security.check()
        req = build_subscribe_request(queues, kinds, include_details)
        state = SubscribeState(req, self.timeout if timeout is None else float(timeout))
        return Subscription(self._stub, self._metadata, state, lambda: self._closed)

    def cancel(self, queue: str, job_id: str, *, timeout: Optional[float] = None) -> bool:
        """Cancel a job. PENDING: it becomes DEAD with error "cancelled" at
        once; returns False. ACTIVE: its run is asked to stop (the Worker
        running it is told at once on its Claim stream) and the job becomes
        DEAD "cancelled" when the run fails or its lease runs out (an Ack
        that comes first still completes it); returns True, also when it was
        asked already. Raises JobwireError: NOT_FOUND, FAILED_PRECONDITION
        (reason JOB_STATE: the job is completed or dead)."""
        resp = self._call(self._stub.Cancel, pb.CancelRequest(queue=queue, job_id=job_id),
                          timeout)
        return resp.cancel_requested

    def report_progress(self, queue: str, job_id: str, lease_token: str,
                        percent: Optional[int] = None, data: Any = b"", *,
                        timeout: Optional[float] = None) -> None:
        """Record the progress of a run claimed through the raw stubs (a
        Worker's handler calls ``job.progress()``): ``percent`` 0..100 (None:
        none) and ``data`` (at most 4096 bytes; bytes unchanged, anything
        else JSON) replace the job's progress as a whole; at least one is
        required. Raises JobwireError: INVALID_ARGUMENT (naming ``percent``
        or ``data``), NOT_FOUND, FAILED_PRECONDITION (stale token or not
        active; reason JOB_CANCEL_REQUESTED or RUN_TIMED_OUT: the run should
        stop). TypeError for a ``percent`` that is not an int."""
        req = build_progress_request(queue, job_id, lease_token, percent, data)
        self._call(self._stub.ReportProgress, req, timeout)

    # -- acks of jobs claimed elsewhere -----------------------------------
    def ack_batch(self, acks: Iterable[Mapping[str, Any]],
                  *, timeout: Optional[float] = None) -> List[AckResult]:
        """Ack up to 1000 claimed jobs, of one or several queues, in one call,
        each ``{"queue", "job_id", "lease_token", "result"}`` (``result``:
        bytes unchanged, None or absent → empty, anything else JSON). Each ack
        is settled on its own, as Ack would: one ``AckResult`` per ack, in
        order; a refused ack has ``.error`` set (returned, not raised).
        A call-level error raises JobwireError: INVALID_ARGUMENT (empty or
        oversized batch), UNAUTHENTICATED, PERMISSION_DENIED (nothing
        changed), UNAVAILABLE / DEADLINE_EXCEEDED (some acks may be stored:
        repeat them all with the same tokens). Workers batch their own acks;
        this is for callers that claim through the raw stubs."""
        reqs = [_ack_item(a) for a in acks]
        resp = self._call(self._stub.AckBatch, pb.AckBatchRequest(acks=reqs), timeout)
        return build_ack_results(reqs, resp)
