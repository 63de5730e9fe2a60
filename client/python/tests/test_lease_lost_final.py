"""The final Ack / Fail of a job whose lease is known lost (docs/clients.md,
Worker), against the real broker and Redis, for both Workers (threaded and
asyncio):

- once a renewal was refused (the handler was told its lease is lost), the
  Ack / Fail is sent once; answered UNAVAILABLE it is not sent again (the
  broker would refuse it) and the outcome is ``ack_unknown`` /
  ``fail_unknown`` with that error;
- the rule is per job: an ack that failed in the same AckBatch call, or a
  Fail, of a job whose lease holds is still retried;
- an Ack / Fail sent while the lease held, stored by the broker but its
  answer lost (UNAVAILABLE), after which the lease is learnt lost (the
  Worker's own renewal, which goes on until the outcome is decided, is
  refused: that attempt completed / failed the job), is sent once more, at
  once: the broker answers that repeat with the first outcome, so the
  outcome is ``ack_ok`` / ``fail_ok``, not unknown, and its ``lease_lost``
  is False (the loss was learnt after the handler returned; the job's
  ``lease_lost_event`` is still set);
- the lease is renewed while an Ack is retried: Acks answered UNAVAILABLE
  for longer than the lease do not lose the job (no second delivery).

The UNAVAILABLE answers come from a stand-in for the sending of the
Worker's ack batches (the coalescer's ``send``: on the Work stream, else an
AckBatch call; "call" below) and for its Fail call; every other call reaches
the broker. A job whose lease is lost
was deleted (Admin.DeleteJob), so a second attempt would be answered
NOT_FOUND (``ack_error`` / ``fail_error``), not unknown.
"""
import asyncio
import threading
import time

import grpc
import pytest

from jobwire import JobState, JobwireError, NonRetryableError, RetryAfter
from jobwire.v1 import broker_pb2
from conftest import wait_for
from test_worker import Outcomes, wait_state
from test_worker_lease import WORKERS, delete_job, run_worker

UNAVAILABLE = JobwireError(grpc.StatusCode.UNAVAILABLE, "stand-in: broker unreachable")


def coalescer(kind, w):
    return w._settler._acks if kind == "threaded" else w._acks


class ScriptedAckBatch:
    """Stands in for the sending of a Worker's ack batches and records the job ids of each
    call: the first call waits for ``plug`` (so the acks finishing meanwhile
    are queued together for the next one), the second fails UNAVAILABLE as a
    whole, the others reach the broker."""

    def __init__(self):
        self.calls = []
        self.plug = threading.Event()
        self._lock = threading.Lock()

    def _record(self, requests):
        with self._lock:
            self.calls.append([r.job_id for r in requests])
            return len(self.calls) - 1

    def install(self, acks):
        real = acks._send
        if asyncio.iscoroutinefunction(real):
            async def send(requests, timeout):
                n = self._record(requests)
                if n == 0:
                    await asyncio.to_thread(self.plug.wait, 10)
                elif n == 1:
                    raise UNAVAILABLE._copy()
                return await real(requests, timeout)
        else:
            def send(requests, timeout):
                n = self._record(requests)
                if n == 0:
                    self.plug.wait(10)
                elif n == 1:
                    raise UNAVAILABLE._copy()
                return real(requests, timeout)
        acks._send = send


def wait_lease_lost(job):
    # A plain function: the asyncio Worker runs it in a thread.
    wait_for(lambda: job.lease_lost, timeout=10, what="the lease to be lost")


@pytest.mark.parametrize("kind", WORKERS)
def test_ack_unavailable_after_the_lease_was_lost_is_not_sent_again(broker, client, queue, kind):
    outcomes = Outcomes()
    acks = ScriptedAckBatch()
    started = {t: threading.Event() for t in ("plug", "lost", "kept")}
    go = {t: threading.Event() for t in ("plug", "kept")}
    made = []  # the Worker

    def register(w):
        def handle(job):
            started[job.type].set()
            if job.type == "lost":
                wait_lease_lost(job)
            else:
                go[job.type].wait(10)
            return job.type
        for t in started:
            w.register(t, handle)

    def body():
        ids = {t: client.enqueue(queue, t, b"", max_attempts=3).job_id for t in started}
        for t, e in started.items():
            assert e.wait(10), t
        go["plug"].set()  # its AckBatch call waits for the plug
        wait_for(lambda: acks.calls, what="the first AckBatch call")
        delete_job(broker.addr, queue, ids["lost"])  # the next renewal: NOT_FOUND
        go["kept"].set()
        queued = coalescer(kind, made[0])._queued
        wait_for(lambda: len(queued) == 2, what="both acks queued behind the first call")
        acks.plug.set()
        wait_for(lambda: outcomes.kinds(ids["lost"]) and outcomes.kinds(ids["kept"]),
                 timeout=15, what="the outcomes")
        return ids

    def patch(w):
        made.append(w)
        acks.install(coalescer(kind, w))

    ids = run_worker(kind, broker.addr, register, body, patch, queues=queue, concurrency=3,
                      lease_ms=3000, on_outcome=outcomes)
    assert acks.calls[0] == [ids["plug"]]
    assert sorted(acks.calls[1]) == sorted([ids["lost"], ids["kept"]])  # one call, two jobs
    assert acks.calls[2:] == [[ids["kept"]]]  # only the job whose lease holds, once
    [lost] = [o for o in outcomes.items if o.job.id == ids["lost"]]
    assert (lost.kind, lost.code, lost.lease_lost) == (
        "ack_unknown", grpc.StatusCode.UNAVAILABLE, True)
    [kept] = [o for o in outcomes.items if o.job.id == ids["kept"]]
    assert (kept.kind, kept.lease_lost) == ("ack_ok", False)
    job = wait_state(client, queue, ids["kept"], JobState.COMPLETED)
    assert job.attempts == 1 and job.result_json() == "kept"


class FirstFailUnavailable:
    """Stands in for a Worker's Fail call: each job's first Fail is answered
    UNAVAILABLE, later ones reach the broker. Records the job id of every
    call."""

    def __init__(self):
        self.calls = []

    def install(self, kind, w):
        target = w._settler if kind == "threaded" else w
        real = target._unary_fail

        def first_time(request):
            first = request.job_id not in self.calls
            self.calls.append(request.job_id)
            return first

        if kind == "threaded":
            def fail(request, timeout):
                if first_time(request):
                    raise UNAVAILABLE._copy()
                return real(request, timeout)
        else:
            async def fail(request, timeout):
                if first_time(request):
                    raise UNAVAILABLE._copy()
                return await real(request, timeout)
        target._unary_fail = fail


@pytest.mark.parametrize("kind", WORKERS)
def test_fail_unavailable_after_the_lease_was_lost_is_not_sent_again(broker, client, queue,
                                                                     kind):
    outcomes = Outcomes()
    fails = FirstFailUnavailable()
    started = {t: threading.Event() for t in ("lost", "kept")}

    def register(w):
        def handle(job):
            started[job.type].set()
            if job.type == "lost":
                wait_lease_lost(job)
                raise RuntimeError(job.type)
            raise NonRetryableError(job.type)  # no second attempt
        for t in started:
            w.register(t, handle)

    def body():
        ids = {t: client.enqueue(queue, t, b"", max_attempts=3).job_id for t in started}
        assert started["lost"].wait(10)
        delete_job(broker.addr, queue, ids["lost"])  # the next renewal: NOT_FOUND
        wait_for(lambda: outcomes.kinds(ids["lost"]) and outcomes.kinds(ids["kept"]),
                 timeout=15, what="the outcomes")
        return ids

    ids = run_worker(kind, broker.addr, register, body, lambda w: fails.install(kind, w),
                      queues=queue, concurrency=2, lease_ms=1500, on_outcome=outcomes)
    assert fails.calls.count(ids["lost"]) == 1  # sent once
    assert fails.calls.count(ids["kept"]) == 2  # the lease holds: sent again
    [lost] = [o for o in outcomes.items if o.job.id == ids["lost"]]
    assert (lost.kind, lost.code, lost.lease_lost) == (
        "fail_unknown", grpc.StatusCode.UNAVAILABLE, True)
    [kept] = [o for o in outcomes.items if o.job.id == ids["kept"]]
    assert (kept.kind, kept.fail_outcome, kept.lease_lost) == ("fail_ok", "DEAD", False)


# -- an earlier attempt was stored, its answer lost -------------------------
#
# The Workers renew a lease until the job's outcome is decided, also while
# its final Ack / Fail is in flight. With a 1 s lease (a renewal every
# ~333 ms), the first Ack / Fail reaches the broker and is stored; its
# answer is held until the Worker's own next renewal is refused
# (FAILED_PRECONDITION: the job no longer runs under that lease) and the
# Worker sets job.lease_lost_event, then the call is answered UNAVAILABLE.
# Every later call reaches the broker.


class StoredAnswerLost:
    """Stands in for the Ack (``method`` "ack": the coalescer's batch send)
    or the Fail call of a Worker of ``kind``: its first call reaches the
    broker, then waits for the job's ``lease_lost_event`` (set by the
    Worker's refused renewal), then is answered UNAVAILABLE; later calls
    reach the broker. Records per call the job ids it carried, the broker's
    answer and whether the lease was learnt lost before the answer."""

    def __init__(self, kind, method):
        self.kind, self.method = kind, method
        self.calls = []  # [(job ids, the broker's answer)]
        self.learnt_lost = []  # per held first call: the event was set in time
        self.jobs = {}  # job id -> Job (the handler's)

    def install(self, w):
        if self.method == "ack":
            target, name = coalescer(self.kind, w), "_send"
        else:
            target, name = (w._settler if self.kind == "threaded" else w), "_unary_fail"
        real = getattr(target, name)
        as_list = (lambda requests: requests) if self.method == "ack" else (lambda r: [r])

        if self.kind == "threaded":
            def call(request, timeout):
                answer = real(request, timeout)
                self.calls.append(([r.job_id for r in as_list(request)], answer))
                if len(self.calls) == 1:
                    job = self.jobs[as_list(request)[0].job_id]
                    self.learnt_lost.append(job.lease_lost_event.wait(10))
                    raise UNAVAILABLE._copy()
                return answer
        else:
            async def call(request, timeout):
                answer = await real(request, timeout)
                self.calls.append(([r.job_id for r in as_list(request)], answer))
                if len(self.calls) == 1:
                    job = self.jobs[as_list(request)[0].job_id]
                    try:
                        await asyncio.wait_for(job.lease_lost_event.wait(), 10)
                        self.learnt_lost.append(True)
                    except asyncio.TimeoutError:
                        self.learnt_lost.append(False)
                    raise UNAVAILABLE._copy()
                return answer
        setattr(target, name, call)


def lease_lost_logged(caplog, job_id):
    """The codes of the Worker's refused renewals of ``job_id`` (its log)."""
    return [code for code in ("FAILED_PRECONDITION", "NOT_FOUND") for r in caplog.records
            if "lease of job" in r.getMessage() and job_id in r.getMessage()
            and code in r.getMessage()]


@pytest.mark.parametrize("kind", WORKERS)
def test_ack_stored_answer_lost_then_lease_lost_is_sent_once_more(broker, client, queue, kind,
                                                                  caplog):
    caplog.set_level("WARNING", logger="jobwire.worker")
    outcomes = Outcomes()
    acks = StoredAnswerLost(kind, "ack")

    def register(w):
        def handle(job):
            acks.jobs[job.id] = job
            return "done"
        w.register("t", handle)

    def body():
        job_id = client.enqueue(queue, "t", b"", max_attempts=3).job_id
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id

    job_id = run_worker(kind, broker.addr, register, body, acks.install, queues=queue,
                        concurrency=1, lease_ms=1000, on_outcome=outcomes)
    assert acks.learnt_lost == [True]  # the Worker's own renewal was refused
    assert lease_lost_logged(caplog, job_id) == ["FAILED_PRECONDITION"]  # the job completed
    # Both calls carried the job; the first was stored, the repeat answered OK.
    assert acks.calls == [([job_id], [None]), ([job_id], [None])]
    assert acks.jobs[job_id].lease_lost  # learnt lost (job.lease_lost_event set) ...
    [outcome] = [o for o in outcomes.items if o.job.id == job_id]
    # ... after the handler returned: not the outcome's lease_lost.
    assert (outcome.kind, outcome.code, outcome.lease_lost) == ("ack_ok", None, False)
    job = wait_state(client, queue, job_id, JobState.COMPLETED)
    assert job.attempts == 1 and job.result_json() == "done"


@pytest.mark.parametrize("kind", WORKERS)
def test_fail_stored_answer_lost_then_lease_lost_is_sent_once_more(broker, client, queue, kind,
                                                                   caplog):
    caplog.set_level("WARNING", logger="jobwire.worker")
    outcomes = Outcomes()
    fails = StoredAnswerLost(kind, "fail")

    def register(w):
        def handle(job):
            fails.jobs[job.id] = job
            raise RetryAfter(600, "later")  # no second attempt while the test runs
        w.register("t", handle)

    def body():
        job_id = client.enqueue(queue, "t", b"", max_attempts=3).job_id
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id

    job_id = run_worker(kind, broker.addr, register, body, fails.install, queues=queue,
                        concurrency=1, lease_ms=1000, on_outcome=outcomes)
    assert fails.learnt_lost == [True]  # the Worker's own renewal was refused
    assert lease_lost_logged(caplog, job_id) == ["FAILED_PRECONDITION"]  # PENDING again
    assert [ids for ids, _ in fails.calls] == [[job_id], [job_id]]
    first, repeat = (answer for _, answer in fails.calls)
    assert first.outcome == broker_pb2.FailResponse.OUTCOME_RETRY_SCHEDULED
    assert repeat == first  # the broker answers a repeat with the first outcome
    assert fails.jobs[job_id].lease_lost  # learnt lost (job.lease_lost_event set) ...
    [outcome] = [o for o in outcomes.items if o.job.id == job_id]
    # ... after the handler returned: not the outcome's lease_lost.
    assert (outcome.kind, outcome.fail_outcome, outcome.next_attempt_at_ms, outcome.lease_lost) \
        == ("fail_ok", "RETRY_SCHEDULED", first.next_attempt_at_ms, False)
    job = wait_state(client, queue, job_id, JobState.PENDING)
    assert job.attempts == 1
    assert [(e.attempt, e.error) for e in job.errors] == [(1, "RetryAfter: later")]


# -- the lease is renewed while an Ack is retried ----------------------------

class AcksUnavailableFor:
    """Stands in for the sending of a Worker's ack batches: for ``seconds``
    from its first call every call is answered UNAVAILABLE without reaching
    the broker; later calls reach it. Records the time of each call."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.calls = []  # (monotonic time, reached the broker)

    def _through(self):
        now = time.monotonic()
        through = bool(self.calls) and now - self.calls[0][0] >= self.seconds
        self.calls.append((now, through))
        return through

    def install(self, acks):
        real = acks._send
        if asyncio.iscoroutinefunction(real):
            async def send(requests, timeout):
                if not self._through():
                    raise UNAVAILABLE._copy()
                return await real(requests, timeout)
        else:
            def send(requests, timeout):
                if not self._through():
                    raise UNAVAILABLE._copy()
                return real(requests, timeout)
        acks._send = send


@pytest.mark.parametrize("kind", WORKERS)
def test_the_lease_is_renewed_while_an_ack_is_retried(broker, client, queue, kind):
    outcomes = Outcomes()
    acks = AcksUnavailableFor(2.5)  # 2.5 leases of 1 s
    attempts = []

    def register(w):
        def handle(job):
            attempts.append(job.attempt)
            return "done"
        w.register("t", handle)

    def body():
        job_id = client.enqueue(queue, "t", b"", max_attempts=3).job_id
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id

    job_id = run_worker(kind, broker.addr, register, body,
                        lambda w: acks.install(coalescer(kind, w)), queues=queue,
                        concurrency=1, lease_ms=1000, on_outcome=outcomes)
    [outcome] = [o for o in outcomes.items if o.job.id == job_id]
    assert (outcome.kind, outcome.job.attempt, outcome.code) == ("ack_ok", 1, None)
    # Retried past the lease the job was delivered with, then let through.
    assert len(acks.calls) >= 3 and acks.calls[-1][1]
    assert acks.calls[-1][0] - acks.calls[0][0] >= 2.5
    assert attempts == [1]  # no second delivery: the lease held
    job = wait_state(client, queue, job_id, JobState.COMPLETED)
    assert job.attempts == 1 and job.result_json() == "done"
