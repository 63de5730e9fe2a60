"""The interop programs in tests/interop/python drive this client; check
their contract (env, log lines, crash exit 3, SIGTERM exit 0) here too."""
import json
import os
import signal
import subprocess
import time

from jobwire import JobState
from conftest import REPO, wait_for

PROGS = REPO / "tests" / "interop" / "python"


def test_interop_producer_and_worker(broker, client, queue, tmp_path):
    jobs = [{"n": n, "type": "interop", "payload": {"n": n, "fail_first": n == 1, "crash": False,
                                                    "always_fail": n == 2},
             "max_attempts": 2, "idempotency_key": "key-%d" % n, "backoff_base_ms": 100,
             "backoff_max_ms": 200} for n in range(5)]
    jobs.append(dict(jobs[0]))  # same idempotency key: a duplicate
    jobs_file = tmp_path / "jobs.jsonl"
    jobs_file.write_text("".join(json.dumps(j) + "\n" for j in jobs))
    env = dict(os.environ, JOBWIRE_ADDR=broker.addr, INTEROP_QUEUE=queue,
               INTEROP_JOBS=str(jobs_file), INTEROP_OUT=str(tmp_path / "out.txt"),
               INTEROP_CONCURRENCY="2", INTEROP_LEASE_MS="5000",
               INTEROP_LOG=str(tmp_path / "worker.log"), INTEROP_LANG="python")
    subprocess.run([str(PROGS / "producer")], env=env, check=True, timeout=30)
    out = [line.split() for line in (tmp_path / "out.txt").read_text().splitlines()]
    assert [o[0] for o in out] == ["0", "1", "2", "3", "4", "0"]
    assert [o[2] for o in out] == ["0"] * 5 + ["1"] and out[5][1] == out[0][1]
    ids = {int(o[0]): o[1] for o in out[:5]}

    worker = subprocess.Popen([str(PROGS / "worker")], env=env, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: client.get_job(queue, ids[2]).state == JobState.DEAD, timeout=15,
                 what="always-fail job dead")
        for n in (0, 1, 3, 4):
            wait_for(lambda: client.get_job(queue, ids[n]).state == JobState.COMPLETED,
                     timeout=15, what="job n=%d completed" % n)
        assert client.get_job(queue, ids[3]).result_json() == {"n": 3, "lang": "python"}
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=10) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    lines = (tmp_path / "worker.log").read_text().splitlines()
    assert "start %s 1 python" % ids[0] in lines
    assert "ack_ok %s 1 python" % ids[0] in lines
    assert "fail_ok %s 1 python RETRY_SCHEDULED" % ids[1] in lines
    assert "ack_ok %s 2 python" % ids[1] in lines
    assert "fail_ok %s 2 python DEAD" % ids[2] in lines


def test_interop_worker_crash_exits_3(broker, client, queue, tmp_path):
    log = tmp_path / "crash.log"
    env = dict(os.environ, JOBWIRE_ADDR=broker.addr, INTEROP_QUEUE=queue,
               INTEROP_CONCURRENCY="2", INTEROP_LEASE_MS="1000", INTEROP_LOG=str(log),
               INTEROP_LANG="python")
    job_id = client.enqueue(queue, "interop", {"n": 9, "crash": True}).job_id
    worker = subprocess.Popen([str(PROGS / "worker")], env=env, stderr=subprocess.DEVNULL)
    try:
        assert worker.wait(timeout=15) == 3
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert log.read_text().splitlines() == ["start %s 1 python" % job_id,
                                            "crash %s 1 python" % job_id]
    assert client.get_job(queue, job_id).state == JobState.ACTIVE  # never acked


def test_interop_worker_logs_the_span_of_a_traced_job(broker, client, queue, tmp_path):
    """A job whose headers carry a traceparent gets one ``span`` line right
    after its ``start`` line: the trace id and parent span id of the
    handler's span, i.e. those of the traceparent; a job without one gets
    no ``span`` line."""
    from opentelemetry.sdk.trace import TracerProvider
    from jobwire import Client

    log = tmp_path / "span.log"
    env = dict(os.environ, JOBWIRE_ADDR=broker.addr, INTEROP_QUEUE=queue,
               INTEROP_CONCURRENCY="1", INTEROP_LOG=str(log), INTEROP_LANG="python")
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    given = client.enqueue(queue, "interop", {"n": 1},
                           headers={"traceparent": "00-%s-%s-01" % (trace_id, span_id)}).job_id
    plain = client.enqueue(queue, "interop", {"n": 2}).job_id
    with Client(broker.addr, timeout=5.0, tracing=True,
                tracer_provider=TracerProvider()) as traced:
        produced = traced.enqueue(queue, "interop", {"n": 3}).job_id
        header = traced.get_job(queue, produced).headers["traceparent"].split("-")
    worker = subprocess.Popen([str(PROGS / "worker")], env=env, stderr=subprocess.DEVNULL)
    try:
        for job_id in (given, plain, produced):
            wait_for(lambda: client.get_job(queue, job_id).state == JobState.COMPLETED,
                     timeout=15, what="job %s completed" % job_id)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=10) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    lines = log.read_text().splitlines()
    for job_id, ids in ((given, (trace_id, span_id)), (produced, (header[1], header[2]))):
        start = lines.index("start %s 1 python" % job_id)
        assert lines[start + 1] == "span %s 1 python %s %s" % ((job_id,) + ids)
    assert [line for line in lines if line.split()[1] == plain and
            line.split()[0] in ("start", "span")] == ["start %s 1 python" % plain]
    assert sum(line.startswith("span ") for line in lines) == 2
