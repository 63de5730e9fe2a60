"""OpenTelemetry trace propagation (jobwire.tracing) against the real broker
and Redis: the producer's PRODUCER span ``publish <queue>`` (Client with
``tracing=True``, sync and asyncio) travels in the job's headers as W3C
``traceparent`` and parents the CONSUMER span ``process <queue>`` the
tracing middleware runs the handler in, for both Workers (threaded, asyncio
with an ``async def`` handler, asyncio with a plain-function handler).

Each test has its own TracerProvider with an in-memory exporter (the SDK, a
test dependency); nothing global is set.
"""
import asyncio

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from jobwire import Client, JobState, JobwireError, aio
from jobwire.tracing import async_tracing_middleware, tracing_middleware
from conftest import wait_for
from test_worker import Outcomes, wait_state
from test_worker_lease import run_worker

KINDS = ["threaded", "asyncio", "asyncio-plain-handler"]
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
CALLER_HEADERS = {"traceparent": "00-%s-%s-01" % (CALLER_TRACE, CALLER_SPAN),
                  "tracestate": "vendor=x", "tenant": "acme"}


class Tracing:
    """A TracerProvider of the test's own, exporting into memory."""

    def __init__(self):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self, name=None):
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def span(self, name):
        [s] = self.spans(name)
        return s


@pytest.fixture
def tracing():
    t = Tracing()
    yield t
    t.provider.shutdown()


def traced_worker(kind, broker, queue, tracing, body, fail=False, **options):
    """Runs a Worker of ``kind`` with the tracing middleware while
    ``body()`` runs; its handler of type "t" records, per job id, the
    current span as it sees it, and raises
    ValueError("boom") when ``fail``. Returns (what body returned, seen)."""
    seen = {}

    def record(job):
        seen[job.id] = trace.get_current_span()
        if fail:
            raise ValueError("boom")
        return "ok"

    def register(w):
        if kind == "threaded":
            w.use(tracing_middleware(tracer_provider=tracing.provider))
        else:
            w.use(async_tracing_middleware(tracer_provider=tracing.provider))
        if kind == "asyncio":
            async def handle(job):
                return record(job)
        else:
            def handle(job):
                return record(job)
        w.register("t", handle)

    got = run_worker(kind.split("-")[0], broker.addr, register, body, queues=queue, **options)
    return got, seen


def hex_ids(span):
    """(trace id, span id, parent span id or None) of a span, as hex."""
    ctx = span.get_span_context()
    parent = span.parent.span_id if span.parent is not None else None
    return ("%032x" % ctx.trace_id, "%016x" % ctx.span_id,
            None if parent is None else "%016x" % parent)


def assert_process_span(span, queue, job_id, attempt=1):
    assert span.name == "process " + queue
    assert span.kind == SpanKind.CONSUMER
    assert dict(span.attributes) == {
        "messaging.system": "jobwire",
        "messaging.destination.name": queue,
        "messaging.operation.type": "process",
        "messaging.message.id": job_id,
        "jobwire.job.type": "t",
        "jobwire.job.attempt": attempt,
    }


@pytest.mark.parametrize("kind", KINDS)
def test_producer_span_parents_the_handler_span(broker, queue, tracing, kind):
    test_tracer = tracing.provider.get_tracer("test")
    headers = {"tenant": "acme"}
    with Client(broker.addr, timeout=5.0, tracing=True,
                tracer_provider=tracing.provider) as producer:
        with test_tracer.start_as_current_span("test") as test_span:
            job_id = producer.enqueue(queue, "t", {}, headers=headers).job_id
        stored = producer.get_job(queue, job_id)
        _, seen = traced_worker(kind, broker, queue, tracing,
                                lambda: producer.wait(queue, job_id, timeout=10))
    assert headers == {"tenant": "acme"}  # the caller's dict is not changed

    publish = tracing.span("publish " + queue)
    process = tracing.span("process " + queue)
    test_trace, test_id, _ = hex_ids(test_span)
    p_trace, p_id, p_parent = hex_ids(publish)
    h_trace, h_id, h_parent = hex_ids(process)
    assert (p_trace, p_parent) == (test_trace, test_id)
    assert (h_trace, h_parent) == (p_trace, p_id)
    assert seen[job_id].get_span_context() == process.get_span_context()  # current in the handler
    flags = publish.get_span_context().trace_flags
    assert stored.headers == {"tenant": "acme",
                              "traceparent": "00-%s-%s-%02x" % (p_trace, p_id, flags)}

    assert publish.kind == SpanKind.PRODUCER
    assert dict(publish.attributes) == {
        "messaging.system": "jobwire",
        "messaging.destination.name": queue,
        "messaging.operation.type": "send",
        "messaging.message.id": job_id,
    }
    assert publish.status.status_code == StatusCode.UNSET
    assert_process_span(process, queue, job_id)
    assert process.status.status_code == StatusCode.UNSET


@pytest.mark.parametrize("kind", ["threaded", "asyncio"])
def test_batch_span_parents_every_handler_span(broker, queue, tracing, kind):
    own = {"traceparent": CALLER_HEADERS["traceparent"]}
    with Client(broker.addr, timeout=5.0, tracing=True,
                tracer_provider=tracing.provider) as producer:
        results = producer.enqueue_batch(queue, [
            {"type": "t", "payload": {"n": 0}},
            {"type": "t", "payload": {"n": 1}, "headers": {"tenant": "acme"}},
            {"type": "t", "payload": {"n": 2}, "options": {"headers": own}},
        ])
        ids = [r.job_id for r in results]
        _, seen = traced_worker(kind, broker, queue, tracing,
                                lambda: [producer.wait(queue, j, timeout=10) for j in ids],
                                concurrency=3)
    assert own == {"traceparent": CALLER_HEADERS["traceparent"]}

    batch = tracing.span("publish " + queue)
    b_trace, b_id, b_parent = hex_ids(batch)
    assert b_parent is None  # no current span in the test: a root span
    assert batch.kind == SpanKind.PRODUCER
    assert dict(batch.attributes) == {
        "messaging.system": "jobwire",
        "messaging.destination.name": queue,
        "messaging.operation.type": "send",
        "messaging.batch.message_count": 3,
    }
    by_job = {s.attributes["messaging.message.id"]: s for s in tracing.spans("process " + queue)}
    assert sorted(by_job) == sorted(ids)
    for job_id in ids[:2]:
        assert hex_ids(by_job[job_id])[0::2] == (b_trace, b_id)
        assert seen[job_id].get_span_context() == by_job[job_id].get_span_context()
    assert hex_ids(by_job[ids[2]])[0::2] == (CALLER_TRACE, CALLER_SPAN)  # kept


@pytest.mark.parametrize("kind", KINDS)
def test_job_without_traceparent_gets_a_root_span(broker, client, queue, tracing, kind):
    job_id = client.enqueue(queue, "t", {}).job_id  # tracing off: no headers added
    assert client.get_job(queue, job_id).headers == {}
    test_tracer = tracing.provider.get_tracer("test")

    def body():
        # A span current in the test's thread is no parent of the handler's.
        with test_tracer.start_as_current_span("unrelated"):
            return client.wait(queue, job_id, timeout=10)

    _, seen = traced_worker(kind, broker, queue, tracing, body)
    process = tracing.span("process " + queue)
    assert process.parent is None
    assert hex_ids(process)[0] != hex_ids(tracing.span("unrelated"))[0]
    assert seen[job_id].get_span_context() == process.get_span_context()
    assert_process_span(process, queue, job_id)
    assert tracing.spans("publish " + queue) == []


@pytest.mark.parametrize("kind", ["threaded", "asyncio"])
def test_caller_traceparent_is_kept(broker, queue, tracing, kind):
    headers = dict(CALLER_HEADERS)
    with Client(broker.addr, timeout=5.0, tracing=True,
                tracer_provider=tracing.provider) as producer:
        job_id = producer.enqueue(queue, "t", {}, headers=headers).job_id
        assert producer.get_job(queue, job_id).headers == CALLER_HEADERS
        traced_worker(kind, broker, queue, tracing,
                      lambda: producer.wait(queue, job_id, timeout=10))
    assert headers == CALLER_HEADERS
    assert len(tracing.spans("publish " + queue)) == 1  # the call is still traced
    process = tracing.span("process " + queue)
    assert hex_ids(process)[0::2] == (CALLER_TRACE, CALLER_SPAN)
    assert process.parent.trace_state.get("vendor") == "x"  # the caller's tracestate came along


@pytest.mark.parametrize("kind", KINDS)
def test_failing_handler_span_is_error_with_the_exception(broker, client, queue, tracing, kind):
    outcomes = Outcomes()
    job_id = client.enqueue(queue, "t", {}, max_attempts=1).job_id
    traced_worker(kind, broker, queue, tracing,
                  lambda: wait_state(client, queue, job_id, JobState.DEAD), fail=True,
                  on_outcome=outcomes)
    wait_for(lambda: outcomes.kinds(job_id), what="the outcome")
    assert outcomes.kinds(job_id) == [("fail_ok", 1, "DEAD")]
    assert client.get_job(queue, job_id).error == "ValueError: boom"
    process = tracing.span("process " + queue)
    assert process.status.status_code == StatusCode.ERROR
    assert process.status.description == "ValueError: boom"
    [event] = process.events
    assert event.name == "exception"
    assert (event.attributes["exception.type"], event.attributes["exception.message"]) == \
        ("ValueError", "boom")


def test_refused_enqueue_span_is_error(broker, queue, tracing):
    with Client(broker.addr, timeout=5.0, tracing=True,
                tracer_provider=tracing.provider) as producer:
        with pytest.raises(JobwireError):
            producer.enqueue(queue, "t", {}, priority=5000)
    publish = tracing.span("publish " + queue)
    assert publish.status.status_code == StatusCode.ERROR
    assert "messaging.message.id" not in publish.attributes
    [event] = publish.events
    assert (event.name, event.attributes["exception.type"]) == ("exception", "jobwire.JobwireError")


def test_aio_client_traces_enqueue_and_batch(broker, queue, tracing):
    test_tracer = tracing.provider.get_tracer("test")

    async def main():
        async with aio.Client(broker.addr, timeout=5.0, tracing=True,
                              tracer_provider=tracing.provider) as c:
            with test_tracer.start_as_current_span("test"):
                one = (await c.enqueue(queue, "t", {})).job_id
                batch = [r.job_id for r in await c.enqueue_batch(queue, [{"type": "t"}] * 2)]
            return ([await c.get_job(queue, j) for j in [one] + batch],
                    [await c.wait(queue, j, timeout=10) for j in [one] + batch])

    _, seen = traced_worker("asyncio", broker, queue, tracing,
                            lambda: asyncio.run(main()), concurrency=3)
    single, many = tracing.spans("publish " + queue)
    test_trace, test_id, _ = hex_ids(tracing.span("test"))
    for span in (single, many):
        assert hex_ids(span)[0::2] == (test_trace, test_id)
    assert dict(single.attributes)["messaging.message.id"] in seen
    assert dict(many.attributes)["messaging.batch.message_count"] == 2
    parents = sorted(hex_ids(s)[2] for s in tracing.spans("process " + queue))
    assert parents == sorted([hex_ids(single)[1]] + [hex_ids(many)[1]] * 2)


def test_tracing_off_changes_nothing(broker, client, queue):
    assert client._tracer is None
    job_id = client.enqueue(queue, "t", {}).job_id
    [r] = client.enqueue_batch(queue, [{"type": "t"}])
    assert client.get_job(queue, job_id).headers == client.get_job(queue, r.job_id).headers == {}


def test_opentelemetry_is_imported_only_for_tracing():
    """Without tracing nothing imports opentelemetry; without the package
    (jobwire[otel] not installed) tracing=True is an ImportError naming it."""
    import subprocess
    import sys
    code = """
import sys
import jobwire, jobwire.aio
jobwire.Client("127.0.0.1:1").close()
jobwire.Worker("127.0.0.1:1", "q").stop()
assert not any(m.split(".")[0] == "opentelemetry" for m in sys.modules), "imported"
sys.modules["opentelemetry"] = None  # as if not installed
try:
    jobwire.Client("127.0.0.1:1", tracing=True)
except ImportError as e:
    print(e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=30, cwd="/")
    assert out.returncode == 0, out.stderr
    assert "pip install 'jobwire[otel]'" in out.stdout
