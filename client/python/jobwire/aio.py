"""asyncio API (grpc.aio): ``jobwire.aio.Client`` and ``jobwire.aio.Worker``.

Same behaviour as the synchronous classes (docs/clients.md); handlers may be
``async def`` (awaited on the loop) or plain functions (run in a thread with
``asyncio.to_thread``). Run control is the same too (_run_control): in an
``async def`` handler ``job.wait_cancelled()`` and ``job.progress()`` are
awaited; in a plain-function handler they block.

This file holds the Client; the Worker lives in ``_aio_worker`` and is
re-exported here (use it as ``jobwire.aio.Worker``).
"""
from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, Iterable, List, Mapping, Optional

import grpc
import grpc.aio

from ._aio_worker import Worker
from ._channel import (DEFAULT_TIMEOUT, PemSource, Security,
                       open_aio_channel, resolve_addr)
from ._errors import JobwireError
from ._subscribe import AioSubscription, Kinds, Queues, SubscribeState, build_subscribe_request
from ._types import AckResult, EnqueueResult, Job
from ._wait import Waiter
from ._requests import (_NO_PAYLOAD, _ack_item, _batch_item, build_ack_results,
                     build_enqueue_request, build_enqueue_results, build_progress_request,
                     publish_tracer)
from .v1 import broker_pb2 as pb
from .v1 import broker_pb2_grpc as pb_grpc

__all__ = ["Client", "Worker", "AioSubscription"]

Worker.__module__ = __name__  # show jobwire.aio.Worker, as before it moved to _aio_worker


class Client:
    """asyncio producer: ``await client.enqueue(...)`` etc., same arguments
    (``token``, the ``tls*`` options, ``tracing`` and ``tracer_provider``
    included) and results as ``jobwire.Client``."""

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
        self._channel = open_aio_channel(self.addr, channel_options, self._security)
        self._stub = pb_grpc.BrokerServiceStub(self._channel)
        self._closed = False  # close() was called: as jobwire.Client's

    def __repr__(self) -> str:
        return "jobwire.aio.Client(addr=%r, tls=%s, token=%s)" % (
            self.addr, self._security.tls, "set" if self._metadata else "none")

    async def _call(self, method, request, timeout):
        self._security.check()
        try:
            return await method(request, timeout=self.timeout if timeout is None else timeout,
                                metadata=self._metadata)
        except grpc.aio.AioRpcError as e:
            raise JobwireError.from_rpc_error(e) from None

    async def close(self) -> None:
        self._closed = True
        await self._channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def enqueue(self, queue: str, type: str, payload: Any = _NO_PAYLOAD, *,
                      timeout: Optional[float] = None, **options) -> EnqueueResult:
        """As ``jobwire.Client.enqueue`` (the same options, ``headers``
        included)."""
        req = build_enqueue_request(queue, type, payload, **options)
        if self._tracer is None:
            resp = await self._call(self._stub.Enqueue, req, timeout)
        else:
            with self._tracer.publish(queue, [req], batch=False) as span:
                resp = await self._call(self._stub.Enqueue, req, timeout)
                span.set_attribute("messaging.message.id", resp.job_id)
        return EnqueueResult(job_id=resp.job_id, duplicate=resp.duplicate)

    async def enqueue_batch(self, queue: str, jobs: Iterable[Mapping[str, Any]], *,
                            timeout: Optional[float] = None) -> List[EnqueueResult]:
        req = pb.EnqueueBatchRequest(jobs=[_batch_item(queue, j) for j in jobs])
        if self._tracer is None:
            resp = await self._call(self._stub.EnqueueBatch, req, timeout)
        else:
            with self._tracer.publish(queue, req.jobs, batch=True):
                resp = await self._call(self._stub.EnqueueBatch, req, timeout)
        return build_enqueue_results(resp)

    async def ack_batch(self, acks: Iterable[Mapping[str, Any]], *,
                        timeout: Optional[float] = None) -> List[AckResult]:
        """As ``jobwire.Client.ack_batch``."""
        reqs = [_ack_item(a) for a in acks]
        resp = await self._call(self._stub.AckBatch, pb.AckBatchRequest(acks=reqs), timeout)
        return build_ack_results(reqs, resp)

    async def get_job(self, queue: str, job_id: str, *, timeout: Optional[float] = None) -> Job:
        resp = await self._call(self._stub.GetJob, pb.GetJobRequest(queue=queue, job_id=job_id),
                                timeout)
        return Job.from_proto(resp.job)

    async def wait(self, queue: str, job_id: str, timeout: Optional[float] = None, *,
                   on_update: Optional[Callable[[Job], Any]] = None) -> Job:
        """As ``jobwire.Client.wait`` (UNAVAILABLE, and CANCELLED the client
        did not cause, are waited out); ``on_update`` may also be a
        coroutine function (awaited). Cancelling the awaiting task cancels
        the call (asyncio.CancelledError is raised)."""
        self._security.check()
        w = Waiter(queue, job_id, timeout)
        while True:
            req, deadline = w.request()
            call = self._stub.WaitJob(req, timeout=deadline, metadata=self._metadata)
            in_update = False  # what on_update raises is its own, never the call's
            try:
                async for resp in call:
                    job = w.take(resp)
                    if job is None:
                        continue
                    if on_update is not None:
                        in_update = True
                        pending = on_update(job)
                        if inspect.isawaitable(pending):
                            await pending
                        in_update = False
                    if w.finished(job):
                        return job
                w.ended()
            except grpc.aio.AioRpcError as e:
                if in_update:
                    raise
                err = JobwireError.from_rpc_error(e)
            finally:
                call.cancel()
            # A call the client cancelled (the task, close()) raises
            # asyncio.CancelledError, not AioRpcError: a CANCELLED here is the
            # broker's, unless the Client was closed (as jobwire.Client.wait).
            await asyncio.sleep(w.retry_delay(err, cancelled_by_client=self._closed))

    def subscribe(self, queues: Queues, kinds: Kinds = None, include_details: bool = False, *,
                  timeout: Optional[float] = None) -> AioSubscription:
        """As ``jobwire.Client.subscribe``, but not a coroutine: the
        ``AioSubscription`` returned subscribes when first used (``async
        with``, ``await``, or the first ``async for`` step), which raises
        the broker's refusal. ValueError / TypeError for bad ``kinds`` are
        raised here."""
        self._security.check()
        req = build_subscribe_request(queues, kinds, include_details)
        state = SubscribeState(req, self.timeout if timeout is None else float(timeout))
        return AioSubscription(self._stub, self._metadata, state, lambda: self._closed)

    async def cancel(self, queue: str, job_id: str, *, timeout: Optional[float] = None) -> bool:
        """As ``jobwire.Client.cancel``: True when the job was ACTIVE (its
        run asked to stop), False when it was PENDING (DEAD now)."""
        resp = await self._call(self._stub.Cancel, pb.CancelRequest(queue=queue, job_id=job_id),
                                timeout)
        return resp.cancel_requested

    async def report_progress(self, queue: str, job_id: str, lease_token: str,
                              percent: Optional[int] = None, data: Any = b"", *,
                              timeout: Optional[float] = None) -> None:
        """As ``jobwire.Client.report_progress``."""
        req = build_progress_request(queue, job_id, lease_token, percent, data)
        await self._call(self._stub.ReportProgress, req, timeout)
