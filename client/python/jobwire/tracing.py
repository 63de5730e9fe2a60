"""OpenTelemetry trace propagation through job headers (W3C ``traceparent`` /
``tracestate``), with the ``opentelemetry-api`` package (``pip install
'jobwire[otel]'``; the application brings the SDK and its exporters).

- Producer: ``Client(..., tracing=True, tracer_provider=None)`` (and
  ``jobwire.aio.Client``) wraps every ``enqueue`` / ``enqueue_batch`` call in
  a PRODUCER span ``publish <queue>``, a child of the caller's current
  context, and writes it into each job's headers (``PublishTracer`` below).
- Worker: ``worker.use(tracing_middleware())`` (``jobwire.Worker``) or
  ``worker.use(async_tracing_middleware())`` (``jobwire.aio.Worker``) runs
  each handler inside a CONSUMER span ``process <queue>`` whose parent is the
  context read from the job's headers (none: a new root span), current while
  the handler runs.

The W3C TraceContext propagator is used directly (not the global one), so
this works without any global set-up. ``tracer_provider=None`` means the
global provider (``opentelemetry.trace.get_tracer_provider()``, looked up
when a span starts, so a provider installed later is used). Attributes
follow the OpenTelemetry messaging semantic conventions.
"""
from __future__ import annotations

import contextlib
from typing import Any, Awaitable, Callable, Iterator, Optional, Sequence

try:
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("jobwire tracing needs the OpenTelemetry API: pip install 'jobwire[otel]' "
                      "(opentelemetry-api)") from e

from ._middleware import FLAVOUR_ATTR  # the Worker a middleware is for: use() checks it
from ._types import Job
from ._version import __version__

__all__ = ["tracing_middleware", "async_tracing_middleware"]

TRACEPARENT = "traceparent"
SYSTEM = "jobwire"

_PROPAGATOR = TraceContextTextMapPropagator()


def _tracer(tracer_provider: Optional["trace.TracerProvider"]) -> "trace.Tracer":
    return trace.get_tracer("jobwire", __version__, tracer_provider=tracer_provider)


class PublishTracer:
    """The producer side of a Client with ``tracing=True``.

    Thread safety: ``publish`` may be called from any thread and task at once.
    """

    def __init__(self, tracer_provider: Optional["trace.TracerProvider"] = None):
        self._tracer = _tracer(tracer_provider)

    @contextlib.contextmanager
    def publish(self, queue: str, requests: Sequence[Any], batch: bool) -> Iterator[Any]:
        """A PRODUCER span ``publish <queue>`` (child of the current context,
        current inside the block) for one Enqueue (``batch`` False) or
        EnqueueBatch call carrying ``requests`` (EnqueueRequest messages,
        the client's own copies: their ``headers`` get ``traceparent`` and
        ``tracestate`` unless they hold a ``traceparent`` already). Yields
        the span; an exception leaving the block is recorded on it (status
        ERROR); the span ends with the block."""
        attributes = {
            "messaging.system": SYSTEM,
            "messaging.destination.name": queue,
            "messaging.operation.type": "send",
        }
        if batch:
            attributes["messaging.batch.message_count"] = len(requests)
        span = self._tracer.start_span("publish " + queue, kind=trace.SpanKind.PRODUCER,
                                       attributes=attributes)
        with trace.use_span(span, end_on_exit=True):
            carrier: dict = {}
            _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
            for req in requests:
                if TRACEPARENT not in req.headers:  # else the caller propagates on purpose
                    req.headers.update(carrier)
            yield span


def _process_span(tracer: "trace.Tracer", job: Job):
    """The CONSUMER span of one run of ``job`` (not started as current)."""
    parent = _PROPAGATOR.extract(job.headers or {})  # no traceparent: empty, a root span
    return tracer.start_span(
        "process " + job.queue, context=parent, kind=trace.SpanKind.CONSUMER,
        attributes={
            "messaging.system": SYSTEM,
            "messaging.destination.name": job.queue,
            "messaging.operation.type": "process",
            "messaging.message.id": job.id,
            "jobwire.job.type": job.type,
            "jobwire.job.attempt": job.attempt,
        })


def tracing_middleware(tracer_provider: Optional["trace.TracerProvider"] = None
                       ) -> Callable[[Job, Callable[[Job], Any]], Any]:
    """A middleware for ``jobwire.Worker.use``: runs the next layer (in the
    end the handler) inside a CONSUMER span ``process <queue>``, the child
    of the context in ``job.headers`` (``traceparent`` / ``tracestate``; a
    root span without them) and the current span while the handler runs
    (``opentelemetry.trace.get_current_span()``). Attributes:
    ``messaging.system`` "jobwire", ``messaging.destination.name`` (the
    queue), ``messaging.operation.type`` "process", ``messaging.message.id``
    (the job id), ``jobwire.job.type``, ``jobwire.job.attempt``. An
    exception from the handler is recorded (status ERROR) and re-raised; the
    span ends when the handler returns or raises."""
    tracer = _tracer(tracer_provider)

    def trace_job(job: Job, call_next: Callable[[Job], Any]) -> Any:
        with trace.use_span(_process_span(tracer, job), end_on_exit=True):
            return call_next(job)

    setattr(trace_job, FLAVOUR_ATTR, "threaded")
    return trace_job


def async_tracing_middleware(tracer_provider: Optional["trace.TracerProvider"] = None
                             ) -> Callable[[Job, Callable[[Job], Awaitable[Any]]],
                                           Awaitable[Any]]:
    """``tracing_middleware`` for ``jobwire.aio.Worker.use``: the same span,
    current in the handler's task (and in the thread of a plain-function
    handler, which gets a copy of the context)."""
    tracer = _tracer(tracer_provider)

    async def trace_job(job: Job, call_next: Callable[[Job], Awaitable[Any]]) -> Any:
        with trace.use_span(_process_span(tracer, job), end_on_exit=True):
            return await call_next(job)

    setattr(trace_job, FLAVOUR_ATTR, "asyncio")
    return trace_job

