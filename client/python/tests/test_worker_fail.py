"""What a handler's exception makes of the Fail (docs/clients.md, Worker),
against the real broker and Redis, for both Workers (threaded and asyncio):

- the error text is cut to at most 64 KiB of UTF-8, at a character boundary;
- ``RetryAfter(delay, message)`` has the job retried after the delay (in
  whole ms, rounded up, at most 7 days) instead of the backoff, unless the
  error is also a ``NonRetryableError``;
- ``RetryAfter(delay, message, keep_attempt=True)`` also sends
  ``keep_attempt``: the turned-away run uses no attempt (non-retryable still
  wins: neither the delay nor keep_attempt is sent).
"""
import datetime
import time

import pytest

from jobwire import JobError, JobState, NonRetryableError, RetryAfter
from jobwire._failure import Failure, failure_of
from conftest import wait_for
from test_worker import Outcomes, wait_state
from test_worker_lease import WORKERS, run_worker

SEVEN_DAYS_MS = 7 * 24 * 3600 * 1000


@pytest.mark.parametrize("kind", WORKERS)
def test_error_text_is_cut_to_64_kib_at_a_character_boundary(broker, client, queue, kind):
    outcomes = Outcomes()
    message = "\u20ac" * 34134  # 3 bytes each: 102402 bytes

    def register(w):
        def handle(job):
            raise ValueError(message)

        def surrogate(job):  # a str UTF-8 cannot carry (e.g. from os.fsdecode)
            raise ValueError("a\udcffb")
        w.register("big", handle)
        w.register("surrogate", surrogate)

    def body():
        ids = [client.enqueue(queue, t, b"", max_attempts=1).job_id for t in ("big", "surrogate")]
        wait_for(lambda: all(outcomes.kinds(i) for i in ids), timeout=15, what="the outcomes")
        return ids

    job_id, odd_id = run_worker(kind, broker.addr, register, body, queues=queue,
                                on_outcome=outcomes)
    assert wait_state(client, queue, odd_id, JobState.DEAD).error == "ValueError: a\ufffdb"
    job = wait_state(client, queue, job_id, JobState.DEAD)
    # "ValueError: " is 12 bytes; 21841 more characters make 65535 bytes, and
    # one more would pass 65536: the cut falls inside a character.
    want = "ValueError: " + "\u20ac" * 21841
    assert len(want.encode()) == 65535
    assert job.error == want
    assert outcomes.kinds(job_id) == [("fail_ok", 1, "DEAD")]
    assert [o.error for o in outcomes.items if o.job.id == job_id] == [want]


class RetryLaterButDead(RetryAfter, NonRetryableError):
    pass


@pytest.mark.parametrize("kind", WORKERS)
def test_retry_after_schedules_the_retry_after_the_delay(broker, client, queue, kind):
    # The suite's broker backs off 100 ms: a retry due 1235 ms later is the
    # handler's delay (1.2345 s, rounded up to a whole ms).
    outcomes = Outcomes()
    raised_at, started_at = {}, {}

    def register(w):
        def later(job):
            if job.attempt == 1:
                raised_at[job.id] = time.time()
                raise RetryAfter(1.2345, "busy")
            started_at[job.id] = time.time()
            return "attempt %d" % job.attempt

        def week(job):
            raise RetryAfter(datetime.timedelta(days=30), "much later")

        def dead(job):
            raise RetryLaterButDead(5, "give up")
        w.register("later", later)
        w.register("week", week)
        w.register("dead", dead)

    def body():
        ids = [client.enqueue(queue, t, b"", max_attempts=3).job_id
               for t in ("later", "week", "dead")]
        wait_for(lambda: all(outcomes.kinds(i) for i in ids), timeout=15, what="the outcomes")
        pending = client.get_job(queue, ids[0])
        wait_for(lambda: len(outcomes.kinds(ids[0])) == 2, timeout=15, what="attempt 2")
        return ids, pending

    (later, week, dead), pending = run_worker(kind, broker.addr, register, body, queues=queue,
                                              on_outcome=outcomes)
    first = [o for o in outcomes.items if o.job.id == later][0]
    assert first.fail_outcome == "RETRY_SCHEDULED"
    delay_ms = first.next_attempt_at_ms - raised_at[later] * 1000
    assert 1234 <= delay_ms <= 1235 + 500, delay_ms
    assert pending.state == JobState.PENDING and pending.attempts == 1
    assert pending.available_at_ms == first.next_attempt_at_ms
    assert pending.error == "RetryAfter: busy"
    done = wait_state(client, queue, later, JobState.COMPLETED)
    assert done.attempts == 2 and done.result_json() == "attempt 2"
    assert started_at[later] * 1000 >= first.next_attempt_at_ms - 5
    assert outcomes.kinds(later) == [("fail_ok", 1, "RETRY_SCHEDULED"), ("ack_ok", 2, None)]

    # 30 days: clamped to the broker's 7-day limit (not refused), attempts kept.
    w = client.get_job(queue, week)
    assert w.state == JobState.PENDING and w.attempts == 1 and w.error == "RetryAfter: much later"
    assert abs(w.available_at_ms - (time.time() * 1000 + SEVEN_DAYS_MS)) < 30_000
    client.cancel(queue, week)

    # Also non-retryable: DEAD at once, attempts left or not.
    d = client.get_job(queue, dead)
    assert d.state == JobState.DEAD and d.attempts == 1
    assert d.error == "RetryLaterButDead: give up"
    assert outcomes.kinds(dead) == [("fail_ok", 1, "DEAD")]


@pytest.mark.parametrize("delay,ms", [
    (1.2345, 1235), (0.1, 100), (2, 2000), (0, 1), (-3, 1), (0.0000001, 1),
    (datetime.timedelta(microseconds=1500), 2), (datetime.timedelta(days=30), SEVEN_DAYS_MS),
    (float("inf"), SEVEN_DAYS_MS),
])
def test_retry_after_delay_in_whole_ms(delay, ms):
    e = RetryAfter(delay, "m")
    assert (e.retry_after_ms, e.delay, str(e)) == (ms, delay, "m")


def test_retry_after_rejects_other_delays():
    for bad in ("5", None, True):
        with pytest.raises(TypeError):
            RetryAfter(bad, "m")
    with pytest.raises(ValueError):
        RetryAfter(float("nan"), "m")


@pytest.mark.parametrize("kind", WORKERS)
def test_keep_attempt_runs_turned_away_use_no_attempt(broker, client, queue, kind):
    # max_attempts 2, turned away three times: without keep_attempt the job
    # would be DEAD after the second run; with it, every run is attempt 1.
    outcomes = Outcomes()
    runs = []

    def register(w):
        def limited(job):
            runs.append(job.attempt)
            if len(runs) <= 3:
                raise RetryAfter(0.05, "rate limited downstream", keep_attempt=True)
            return "done"
        w.register("limited", limited)

    def body():
        job_id = client.enqueue(queue, "limited", b"", max_attempts=2).job_id
        return wait_state(client, queue, job_id, JobState.COMPLETED, timeout=15)

    done = run_worker(kind, broker.addr, register, body, queues=queue, on_outcome=outcomes)
    assert done.attempts == 1 and done.max_attempts == 2 and done.result_json() == "done"
    assert runs == [1, 1, 1, 1]
    assert outcomes.kinds(done.id) == [("fail_ok", 1, "RETRY_SCHEDULED")] * 3 + [("ack_ok", 1, None)]
    assert [o.error for o in outcomes.items if o.kind == "fail_ok"] == \
        ["RetryAfter: rate limited downstream"] * 3


class TurnedAwayButDead(RetryAfter, NonRetryableError):
    pass


def test_keep_attempt_in_the_fail_and_non_retryable_wins():
    assert failure_of(RetryAfter(1.5, "m", keep_attempt=True)) == \
        Failure("RetryAfter: m", False, 1500, True)
    assert failure_of(RetryAfter(1.5, "m")) == Failure("RetryAfter: m", False, 1500, False)
    assert failure_of(TurnedAwayButDead(1.5, "m", keep_attempt=True)) == \
        Failure("TurnedAwayButDead: m", True, 0, False)
    e = RetryAfter(2, "m", keep_attempt=True)
    assert e.keep_attempt and not RetryAfter(2, "m").keep_attempt
    import pickle
    assert pickle.loads(pickle.dumps(e)).keep_attempt


@pytest.mark.parametrize("kind", WORKERS)
def test_get_job_lists_the_error_of_each_failed_run(broker, client, queue, kind):
    outcomes = Outcomes()

    def register(w):
        def handle(job):
            raise ValueError("run %d failed" % job.attempt)
        w.register("flaky", handle)

    def body():
        job_id = client.enqueue(queue, "flaky", b"", max_attempts=2, backoff_base_ms=1,
                                backoff_max_ms=1).job_id
        wait_for(lambda: len(outcomes.kinds(job_id)) == 2, timeout=15, what="two outcomes")
        return job_id

    job_id = run_worker(kind, broker.addr, register, body, queues=queue, on_outcome=outcomes)
    job = wait_state(client, queue, job_id, JobState.DEAD)
    assert [(e.attempt, e.error) for e in job.errors] == [
        (1, "ValueError: run 1 failed"), (2, "ValueError: run 2 failed")]
    assert all(isinstance(e, JobError) for e in job.errors)
    assert job.created_at_ms <= job.errors[0].at_ms <= job.errors[1].at_ms <= job.finished_at_ms
    assert job.error == "ValueError: run 2 failed"
