"""jobwire: Python client for the jobwire gRPC job-queue broker.

Producer::

    from jobwire import Client
    Client("localhost:50051").enqueue("emails", "send-email", {"to": "a@b.c"})

Worker::

    from jobwire import Worker
    w = Worker("localhost:50051", queues=["emails"], concurrency=4)

    @w.handler("send-email")
    def send(job):
        return {"sent": job.json()["to"]}

    w.run()

Run control: ``client.enqueue(..., timeout_ms=60_000)`` bounds a run;
``client.cancel(queue, job_id)`` stops a running one. The handler is told
(``job.cancelled``, ``job.cancel_reason``; ``job.check_cancelled()`` raises
``JobCancelled``) and reports progress with ``job.progress(percent, data)``::

    @w.handler("report")
    def report(job):
        for i, part in enumerate(parts):
            job.check_cancelled()
            render(part)
            job.progress(100 * (i + 1) // len(parts))

Waiting for a job's outcome::

    job = client.wait("emails", job_id, timeout=30)   # COMPLETED: job.result_json()
    # JobDeadError (e.job.error) when it ends DEAD, WaitTimeoutError after 30 s

Following what happens in queues::

    with client.subscribe(["emails"], kinds=["completed", "dead"]) as events:
        for ev in events:          # QueueEvent(kind, queue, job_id, ...)
            print(ev.kind, ev.job_id)

Middleware and tracing (``pip install 'jobwire[otel]'``; see jobwire.tracing)::

    w.use(lambda job, call_next: call_next(job))  # wraps every handler
    w.use(jobwire.tracing.tracing_middleware())   # span "process <queue>"
    Client(tracing=True)                          # span "publish <queue>" -> traceparent

Errors: every failed call raises ``JobwireError`` (``code``, ``message``,
and the broker's typed details: ``reason``, ``metadata``, ``field``,
``retry_delay``); ``Reason`` names the stable reasons::

    try:
        client.cancel("emails", job_id)
    except JobwireError as e:
        if e.reason == Reason.JOB_STATE:
            print("already finished:", e.metadata["state"])
"""
from ._errors import (JobCancelled, JobDeadError, JobwireError, NonRetryableError, Reason,
                      RetryAfter, WaitTimeoutError)
from ._subscribe import Subscription
from ._types import AckResult, EnqueueResult, Job, JobError, JobState, Outcome, QueueEvent
from ._version import __version__  # noqa: F401 (re-exported)
from .client import Client
from .worker import Worker

__all__ = [
    "Client",
    "Worker",
    "Job",
    "JobError",
    "JobState",
    "EnqueueResult",
    "AckResult",
    "Outcome",
    "QueueEvent",
    "Subscription",
    "JobwireError",
    "JobDeadError",
    "WaitTimeoutError",
    "Reason",
    "NonRetryableError",
    "RetryAfter",
    "JobCancelled",
]

for _cls in (Client, Worker, Job, JobError, JobState, EnqueueResult, AckResult, Outcome, QueueEvent,
             Subscription, JobwireError, JobDeadError, WaitTimeoutError, Reason,
             NonRetryableError, RetryAfter, JobCancelled):
    _cls.__module__ = "jobwire"  # show jobwire.JobwireError, not jobwire._errors...
del _cls
