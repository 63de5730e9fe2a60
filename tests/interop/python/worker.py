"""Interop worker (tests/interop/README.md) built on jobwire.Worker, its
handlers wrapped in the tracing middleware (jobwire.tracing) with an
OpenTelemetry SDK TracerProvider of its own (no exporter: the spans are read
in the handler)."""
import logging
import os
import sys
import threading
import time

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from jobwire import NonRetryableError, RetryAfter, Worker
from jobwire.tracing import tracing_middleware

ADDR = os.environ["JOBWIRE_ADDR"]
CONCURRENCY = int(os.environ.get("INTEROP_CONCURRENCY", "4"))
LEASE_MS = int(os.environ.get("INTEROP_LEASE_MS", "0")) or None
LOG_PATH = os.environ["INTEROP_LOG"]
LANG = os.environ.get("INTEROP_LANG", "python")


def queues_and_weights():
    """The queues to consume (INTEROP_QUEUES, comma-separated, else the one
    INTEROP_QUEUE) and their weights (INTEROP_WEIGHTS, comma-separated ints
    in the order of the queues; unset or empty: None, strict order)."""
    names = os.environ.get("INTEROP_QUEUES", "")
    queues = names.split(",") if names else [os.environ["INTEROP_QUEUE"]]
    text = os.environ.get("INTEROP_WEIGHTS", "")
    if not text:
        return queues, None
    weights = [int(w) for w in text.split(",")]
    if len(weights) != len(queues):
        raise SystemExit("INTEROP_WEIGHTS has %d weights for %d queues"
                         % (len(weights), len(queues)))
    return queues, dict(zip(queues, weights))


QUEUES, WEIGHTS = queues_and_weights()

_fd = os.open(LOG_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
_lock = threading.Lock()


def log_line(*fields) -> None:
    """One whole line, one write(2), unbuffered (O_APPEND): a crash right
    after never loses or tears it."""
    data = (" ".join(str(f) for f in fields) + "\n").encode("utf-8")
    with _lock:
        os.write(_fd, data)


def log_span(job) -> None:
    """For a job whose headers carry a traceparent: the ``span`` line, with
    the trace id and the parent span id of the handler's current span (the
    CONSUMER span the tracing middleware started), as the SDK records them."""
    if "traceparent" not in job.headers:
        return
    span = trace.get_current_span()
    parent = getattr(span, "parent", None)  # an SDK span's parent SpanContext
    log_line("span", job.id, job.attempt, LANG,
             format(span.get_span_context().trace_id, "032x"),
             format(parent.span_id if parent is not None else 0, "016x"))


def handle(job):
    p = job.json()
    log_line("start", job.id, job.attempt, LANG)
    log_span(job)
    if p.get("crash") and job.attempt == 1:
        log_line("crash", job.id, job.attempt, LANG)
        os._exit(3)
    if p.get("hold_in") == LANG and job.attempt == 1:
        # run_interop.py freezes this process (SIGSTOP) during the sleep.
        log_line("hold", job.id, job.attempt, LANG)
        time.sleep(p.get("hold_ms", 0) / 1000.0)
    if p.get("work_ms"):
        time.sleep(p["work_ms"] / 1000.0)
    if p.get("always_fail"):
        raise RuntimeError("always fails")
    if p.get("fail_first") and job.attempt == 1:
        raise RuntimeError("planned first-attempt failure")
    return {"n": p.get("n"), "lang": LANG}


# Scenario turned_away: how many times this process ran each job (by queue
# and job id). Runs turned away with keep_attempt do not advance job.attempt,
# so the handler counts them itself, in memory.
_runs = {}
_runs_lock = threading.Lock()


def count_run(job) -> int:
    key = (job.queue, job.id)
    with _runs_lock:
        _runs[key] = _runs.get(key, 0) + 1
        return _runs[key]


def handle_behaviour(job):
    """The "behaviour" handler (README.md, "The behaviour handler"): one
    scenario per job, for tests/behaviours/run_behaviours.py."""
    log_line("start", job.id, job.attempt, LANG, job.queue)
    p = job.json()
    scenario = p.get("scenario")
    if scenario == "lease_ms":
        time.sleep(p.get("sleep_ms", 0) / 1000.0)
        return {"lang": LANG, "lease_ms": job.lease_ms}
    if scenario == "long_error":
        raise ValueError(p["unit"] * p["count"])
    if scenario == "retry_after":
        if job.attempt == 1:
            raise RetryAfter(p["delay_ms"] / 1000.0, "retry later")
        return {"lang": LANG}
    if scenario == "turned_away":
        run = count_run(job)
        log_line("run", job.id, job.attempt, LANG, run, time.time_ns() // 1000000)
        if run <= p["times"]:
            raise RetryAfter(p["delay_ms"] / 1000.0, "turned away", keep_attempt=True)
        return {"lang": LANG, "runs": run}
    if scenario == "non_retryable":
        raise NonRetryableError("bad input")
    if scenario == "wait_lease_lost":
        lost = job.lease_lost_event.wait(p.get("wait_ms", 0) / 1000.0)
        log_line("lease_lost" if lost else "lease_kept", job.id, job.attempt, LANG)
        return {"lang": LANG, "lease_lost": bool(lost)}
    if scenario == "sleep":
        time.sleep(p.get("sleep_ms", 0) / 1000.0)
        return {"lang": LANG}
    if scenario == "keyed":
        log_line("key_start", job.id, job.attempt, LANG, job.concurrency_key)
        time.sleep(p.get("sleep_ms", 0) / 1000.0)
        log_line("key_end", job.id, job.attempt, LANG, job.concurrency_key)
        return {"lang": LANG, "key": job.concurrency_key}
    if scenario == "deps":
        results = job.dependency_results
        log_line("deps", job.id, job.attempt, LANG, len(results))
        for parent, result in results.items():
            log_line("dep", job.id, job.attempt, LANG, parent, result.hex())
        return {"lang": LANG, "job": job.id}
    raise RuntimeError("unknown scenario %s" % scenario)


def on_outcome(o) -> None:
    """Every kind the client reports, with its detail when it has one: the
    Fail's outcome, or the code of the last answer (ack_error, fail_error,
    ack_unknown, fail_unknown); expired_dropped and ack_ok have none."""
    if o.kind == "fail_ok":
        detail = [o.fail_outcome]
    elif o.code is not None:
        detail = [o.code.name]
    else:
        detail = []
    log_line(o.kind, o.job.id, o.job.attempt, LANG, *detail)


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s python-worker %(levelname)s %(message)s")
    w = Worker(ADDR, QUEUES, concurrency=CONCURRENCY, lease_ms=LEASE_MS, weights=WEIGHTS,
               worker_id="%s-interop-%d" % (LANG, os.getpid()), on_outcome=on_outcome)
    w.use(tracing_middleware(tracer_provider=TracerProvider()))
    w.register("interop", handle)
    w.register("behaviour", handle_behaviour)
    w.run(install_signal_handlers=True)  # returns after SIGTERM / SIGINT
    return 0


if __name__ == "__main__":
    sys.exit(main())
