"""Worker behaviour against the real broker (docs/clients.md, Worker)."""
import subprocess
import threading
import time

import grpc
import pytest

from jobwire import Client, JobState, JobwireError, NonRetryableError, Reason, Worker
from conftest import running, wait_for


class Outcomes:
    def __init__(self):
        self.items = []
        self.lock = threading.Lock()

    def __call__(self, outcome):
        with self.lock:
            self.items.append(outcome)

    def kinds(self, job_id):
        with self.lock:
            return [(o.kind, o.job.attempt, o.fail_outcome) for o in self.items if o.job.id == job_id]


def wait_state(client, queue, job_id, state, timeout=10.0):
    return wait_for(lambda: (lambda j: j if j.state == state else None)(client.get_job(queue, job_id)),
                    timeout=timeout, what="job %s to be %s" % (job_id, state.name))


def test_worker_acks_with_json_result(broker, client, queue):
    outcomes = Outcomes()
    w = Worker(broker.addr, [queue], on_outcome=outcomes, worker_id="py-test-ack")
    seen = []

    @w.handler("echo")
    def echo(job):
        seen.append((job.attempt, job.max_attempts, job.queue, job.type, job.lease_expires_at_ms))
        return {"got": job.json(), "id": job.id}

    w.register("raw", lambda job: job.payload[::-1])
    w.register("nothing", lambda job: None)
    with running(w):
        r = client.enqueue(queue, "echo", {"to": "ada@example.com", "n": [1, 2]})
        raw = client.enqueue(queue, "raw", b"\x01\x02\xff")
        none = client.enqueue(queue, "nothing", b"x")
        job = wait_state(client, queue, r.job_id, JobState.COMPLETED)
        raw_job = wait_state(client, queue, raw.job_id, JobState.COMPLETED)
        none_job = wait_state(client, queue, none.job_id, JobState.COMPLETED)
        wait_for(lambda: len(outcomes.items) == 3, what="3 outcomes")
    assert job.result_json() == {"got": {"to": "ada@example.com", "n": [1, 2]}, "id": r.job_id}
    assert job.attempts == 1 and job.worker_id == "py-test-ack"
    assert raw_job.result == b"\xff\x02\x01"  # bytes unchanged
    assert none_job.result == b""
    assert seen[0][:4] == (1, 3, queue, "echo") and seen[0][4] > 0
    assert outcomes.kinds(r.job_id) == [("ack_ok", 1, None)]


def test_handler_raising_fails_then_retry_attempt_2(broker, client, queue):
    outcomes = Outcomes()
    w = Worker(broker.addr, queue, on_outcome=outcomes)
    attempts = []

    @w.handler("flaky")
    def flaky(job):
        attempts.append(job.attempt)
        if job.attempt == 1:
            raise ValueError("boom on first try")
        return "ok"

    with running(w):
        r = client.enqueue(queue, "flaky", {}, backoff_base_ms=100)
        job = wait_state(client, queue, r.job_id, JobState.COMPLETED)
        wait_for(lambda: len(outcomes.kinds(r.job_id)) == 2, what="2 outcomes")
    assert attempts == [1, 2]
    assert job.attempts == 2 and job.result_json() == "ok"
    assert job.error == "ValueError: boom on first try"  # last error kept
    assert outcomes.kinds(r.job_id) == [("fail_ok", 1, "RETRY_SCHEDULED"), ("ack_ok", 2, None)]


def test_non_retryable_error_goes_dead(broker, client, queue):
    outcomes = Outcomes()
    w = Worker(broker.addr, queue, on_outcome=outcomes)

    @w.handler("bad")
    def bad(job):
        raise NonRetryableError("malformed input")

    with running(w):
        r = client.enqueue(queue, "bad", b"", max_attempts=5)
        job = wait_state(client, queue, r.job_id, JobState.DEAD)
        wait_for(lambda: outcomes.kinds(r.job_id), what="outcome")
    assert job.attempts == 1 and job.error == "NonRetryableError: malformed input"
    assert outcomes.kinds(r.job_id) == [("fail_ok", 1, "DEAD")]


def test_job_of_a_type_without_handler_is_never_delivered(broker, client, queue):
    # The Claim names the worker's types (ClaimRequest.types): a job of
    # another type, ahead of the worker's own in the queue, stays pending
    # with no attempt used, and the worker's own job behind it runs.
    outcomes = Outcomes()
    w = Worker(broker.addr, queue, worker_id="py-unknown-1", on_outcome=outcomes)
    w.register("known", lambda job: "ran")
    other = client.enqueue(queue, "mystery", b"")
    own = client.enqueue(queue, "known", b"")
    with running(w):
        job = wait_state(client, queue, own.job_id, JobState.COMPLETED)
        wait_for(lambda: outcomes.kinds(own.job_id), what="outcome")
        mystery = client.get_job(queue, other.job_id)
    assert job.attempts == 1 and job.result_json() == "ran"
    assert outcomes.kinds(own.job_id) == [("ack_ok", 1, None)]
    assert mystery.state == JobState.PENDING and mystery.attempts == 0 and mystery.error == ""
    assert outcomes.kinds(other.job_id) == []


def test_run_refuses_no_handler_and_more_than_64_types(broker, client, queue):
    w = Worker(broker.addr, queue)
    with pytest.raises(ValueError, match=r"^Worker.run\(\): no handler registered"):
        w.run(install_signal_handlers=False)
    for i in range(65):
        w.register("t%02d" % i, lambda job: None)
    with pytest.raises(ValueError, match=r"65 job types have handlers; a Worker takes at most 64"):
        w.run(install_signal_handlers=False)
    w.stop()
    # 64 is the limit, not beyond it: the broker takes such a Claim.
    w64 = Worker(broker.addr, queue)
    for i in range(64):
        w64.register("t%02d" % i, lambda job: job.type)
    r = client.enqueue(queue, "t63", b"")
    with running(w64):
        job = wait_state(client, queue, r.job_id, JobState.COMPLETED)
    assert job.result_json() == "t63"


def test_concurrency_n_handlers_at_once(broker, client, queue):
    n = 3
    lock = threading.Lock()
    state = {"now": 0, "max": 0}
    w = Worker(broker.addr, queue, concurrency=n)

    @w.handler("slow")
    def slow(job):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.6)
        with lock:
            state["now"] -= 1

    with running(w):
        ids = [r.job_id for r in client.enqueue_batch(queue, [{"type": "slow"}] * (2 * n))]
        for job_id in ids:
            wait_state(client, queue, job_id, JobState.COMPLETED)
    assert state["max"] == n


def test_slow_on_outcome_is_not_taken_for_over_delivery(broker, client, queue, caplog):
    # The broker frees a slot when the Ack arrives, so with a slow on_outcome
    # the next job comes while the previous one's thread is still reporting:
    # that is not a lost lease, and the worker must not say so.
    outcomes = Outcomes()

    def slow_report(outcome):
        time.sleep(0.1)
        outcomes(outcome)

    w = Worker(broker.addr, [queue], concurrency=1, on_outcome=slow_report,
               worker_id="py-test-slow-report")
    w.register("quick", lambda job: None)
    caplog.set_level("WARNING", logger="jobwire.worker")
    with running(w):
        for i in range(8):
            client.enqueue(queue, "quick", {"i": i})
        wait_for(lambda: len(outcomes.items) == 8, timeout=20, what="8 outcomes")
    assert [o.kind for o in outcomes.items] == ["ack_ok"] * 8
    assert not [r for r in caplog.records if "beyond concurrency" in r.getMessage()]


def test_lease_renewal_keeps_long_handler(broker, client, queue):
    outcomes = Outcomes()
    w = Worker(broker.addr, queue, lease_ms=1000, on_outcome=outcomes)
    expiries = []

    @w.handler("long")
    def long_job(job):
        for _ in range(5):
            expiries.append(job.lease_expires_at_ms)
            time.sleep(0.5)
        return "done"

    with running(w):
        r = client.enqueue(queue, "long", b"", max_attempts=3)
        job = wait_state(client, queue, r.job_id, JobState.COMPLETED, timeout=10)
    assert job.attempts == 1 and job.error == "" and job.result_json() == "done"
    assert expiries[-1] > expiries[0]  # renewed while running
    assert outcomes.kinds(r.job_id) == [("ack_ok", 1, None)]


def test_one_renewer_keeps_several_long_handlers(broker, client, queue):
    outcomes = Outcomes()
    w = Worker(broker.addr, queue, concurrency=4, lease_ms=1000, on_outcome=outcomes)
    expiries = {}

    @w.handler("long")
    def long_job(job):
        first = job.lease_expires_at_ms
        time.sleep(2.5)  # 2.5 leases: only renewals keep it
        expiries[job.id] = (first, job.lease_expires_at_ms)
        return "done"

    with running(w):
        ids = [client.enqueue(queue, "long", b"", max_attempts=1).job_id for _ in range(4)]
        for job_id in ids:
            job = wait_state(client, queue, job_id, JobState.COMPLETED, timeout=10)
            assert job.attempts == 1 and job.result_json() == "done"
    for job_id in ids:
        assert expiries[job_id][1] > expiries[job_id][0] + 1500  # renewed, more than once
        assert outcomes.kinds(job_id) == [("ack_ok", 1, None)]


def test_lost_lease_stops_renewal_and_is_reported(broker, client, queue, redis_url, caplog):
    outcomes = Outcomes()
    w = Worker(broker.addr, queue, lease_ms=1000, on_outcome=outcomes)
    started = threading.Event()
    release = threading.Event()

    @w.handler("long")
    def long_job(job):
        if job.attempt == 1:
            started.set()
            release.wait(10)
        return "attempt %d" % job.attempt

    caplog.set_level("WARNING", logger="jobwire.worker")
    with running(w):
        job_id = client.enqueue(queue, "long", b"", max_attempts=3).job_id
        assert started.wait(10)
        # The lease changes hands, as if it had expired and been claimed again:
        # the next renewal is refused.
        # The job's record is field job_id of jw:{queue}:jobs, packed with
        # cmsgpack; lease_token is its field 7 (docs/redis-layout.md).
        subprocess.run(["redis-cli", "-u", redis_url, "EVAL",
                        "local r = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1])) "
                        "r[7] = ARGV[2] redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(r))",
                        "1", "jw:{%s}:jobs" % queue, job_id, "taken-over"],
                       check=True, capture_output=True)
        wait_for(lambda: [r for r in caplog.records if "lost" in r.getMessage()], timeout=5,
                 what="the lost-lease warning")
        release.set()
        wait_for(lambda: [o for o in outcomes.items if o.job.attempt == 1], timeout=10,
                 what="attempt 1's outcome")
    [first] = [o for o in outcomes.items if o.job.attempt == 1]
    assert first.kind == "ack_error" and first.lease_lost
    assert first.code == grpc.StatusCode.FAILED_PRECONDITION
    assert first.reason == Reason.LEASE_STALE  # through the ack coalescer's copies
    assert len([r for r in caplog.records if "lost" in r.getMessage()]) == 1  # renewal stopped


def test_broker_killed_and_restarted(own_broker, queue):
    outcomes = Outcomes()
    w = Worker(own_broker.addr, queue, concurrency=2, lease_ms=10_000, on_outcome=outcomes)
    started = threading.Event()
    returned = []  # time.time() when the slow handler returned

    @w.handler("t")
    def handle(job):
        if job.json().get("slow"):
            started.set()
            time.sleep(0.8)  # returns while the broker is down
            returned.append(time.time())
        return job.json()

    client = Client(own_broker.addr, timeout=3)
    with running(w):
        first = client.enqueue(queue, "t", {"i": 1})
        wait_state(client, queue, first.job_id, JobState.COMPLETED)
        slow = client.enqueue(queue, "t", {"slow": True})
        assert started.wait(5)
        own_broker.kill()
        killed_at = time.time()
        # The handler returns while the broker is down: its Ack gets
        # UNAVAILABLE and is retried until the broker is back.
        wait_for(lambda: returned, timeout=5, what="slow handler returned")
        time.sleep(1.0)
        restart_at = time.time()
        own_broker.start()
        later = wait_for(lambda: _try_enqueue(client, queue, {"i": 2}), what="enqueue after restart")
        done = wait_state(client, queue, later.job_id, JobState.COMPLETED, timeout=15)
        slow_job = wait_state(client, queue, slow.job_id, JobState.COMPLETED, timeout=10)
    client.close()
    assert done.result_json() == {"i": 2}
    # The job running across the restart was acked (Ack retried through
    # UNAVAILABLE), on its first attempt.
    assert killed_at <= returned[0] < restart_at, (
        "slow handler returned at %.3f, broker killed at %.3f, restarted at %.3f: "
        "the Ack retry was not exercised" % (returned[0], killed_at, restart_at))
    assert slow_job.attempts == 1 and slow_job.result_json() == {"slow": True}
    assert outcomes.kinds(slow.job_id) == [("ack_ok", 1, None)]


def _try_enqueue(client, queue, payload):
    try:
        return client.enqueue(queue, "t", payload)
    except JobwireError as e:
        assert e.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        return None


def test_stop_lets_running_handler_finish_and_takes_no_new_jobs(broker, client, queue):
    started = threading.Event()
    w = Worker(broker.addr, queue, concurrency=1, grace=10)

    @w.handler("t")
    def handle(job):
        started.set()
        time.sleep(1.0)
        return "finished"

    with running(w) as t:
        first = client.enqueue(queue, "t", b"")
        assert started.wait(5)
        second = client.enqueue(queue, "t", b"")
        t0 = time.monotonic()
        w.stop()
        took = time.monotonic() - t0
        t.join(2)
        assert not t.is_alive()
        job1 = client.get_job(queue, first.job_id)
        time.sleep(0.3)
        job2 = client.get_job(queue, second.job_id)
    assert 0.3 < took < 5
    assert job1.state == JobState.COMPLETED and job1.result_json() == "finished"
    assert job2.state == JobState.PENDING and job2.attempts == 0


def test_stop_abandons_handlers_after_grace(broker, client, queue):
    started, release = threading.Event(), threading.Event()
    w = Worker(broker.addr, queue, grace=0.5, lease_ms=2000)

    @w.handler("t")
    def handle(job):
        started.set()
        release.wait(10)

    try:
        with running(w):
            r = client.enqueue(queue, "t", b"")
            assert started.wait(5)
            t0 = time.monotonic()
            w.stop()
            took = time.monotonic() - t0
    finally:
        release.set()
    assert took < 2.0
    assert client.get_job(queue, r.job_id).state == JobState.ACTIVE  # never acked


def test_claim_invalid_argument_is_fatal(broker, queue):
    w = Worker(broker.addr, queue, lease_ms=10)
    w.register("t", lambda job: None)
    t0 = time.monotonic()
    with pytest.raises(JobwireError) as ei:
        w.run(install_signal_handlers=False)
    assert time.monotonic() - t0 < 5
    assert ei.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert ei.value.message.startswith("lease_ms")


def test_worker_as_context_manager_drains_on_exit(broker, client, queue):
    started = threading.Event()

    def slow(job):
        started.set()
        time.sleep(0.5)
        return {"done": True}

    with Worker(broker.addr, queue, grace=10) as w:
        w.register("slow", slow)
        t = threading.Thread(target=w.run, kwargs={"install_signal_handlers": False},
                             daemon=True)
        t.start()
        r = client.enqueue(queue, "slow", b"")
        assert started.wait(10)
    # The block's end stopped the worker and waited for the running handler
    # and its Ack: run() has returned and the job is completed.
    assert not t.is_alive()
    job = client.get_job(queue, r.job_id)
    assert job.state == JobState.COMPLETED and job.result_json() == {"done": True}

    with Worker(broker.addr, queue) as never_run:
        pass
    assert never_run._closed  # its channel is closed without run()


@pytest.mark.parametrize("make_exc", [lambda: SystemExit(3), KeyboardInterrupt],
                         ids=["SystemExit", "KeyboardInterrupt"])
def test_handler_exit_stops_worker_without_failing_job(broker, client, queue, make_exc):
    outcomes = Outcomes()
    w = Worker(broker.addr, queue, lease_ms=3000, on_outcome=outcomes)
    calls = []

    @w.handler("exit")
    def handle(job):
        calls.append(job.attempt)
        raise make_exc()

    r = client.enqueue(queue, "exit", b"", max_attempts=3)
    raised = []

    def target():
        try:
            w.run(install_signal_handlers=False)
        except BaseException as e:  # the test checks which
            raised.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(15)
    assert not t.is_alive(), "run() did not return after the handler raised"
    assert len(raised) == 1 and type(raised[0]) is type(make_exc())
    if isinstance(raised[0], SystemExit):
        assert raised[0].code == 3
    # Not failed: still leased to the stopped worker, no error, no outcome.
    job = client.get_job(queue, r.job_id)
    assert calls == [1]
    assert job.state == JobState.ACTIVE and job.error == "" and job.attempts == 1
    assert outcomes.kinds(r.job_id) == []
    # Its lease expires and the job is delivered again.
    w2 = Worker(broker.addr, queue)
    w2.register("exit", lambda job: job.attempt)
    with running(w2):
        job = wait_state(client, queue, r.job_id, JobState.COMPLETED, timeout=15)
    # (the broker notes the expiry in the job's error; no handler error there)
    assert job.result_json() == 2 and type(raised[0]).__name__ not in job.error
