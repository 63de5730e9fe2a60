"""The final Ack / Fail of a job whose lease is known lost (docs/clients.md,
Worker), against the real broker and Redis, for both Workers (threaded and
asyncio):

- once a renewal was refused (the handler was told its lease is lost), the
  Ack / Fail is sent once; answered UNAVAILABLE it is not sent again (the
  broker would refuse it) and the outcome is ``ack_unknown`` /
  ``fail_unknown`` with that error;
- the rule is per job: an ack that failed in the same AckBatch call, or a
  Fail, of a job whose lease holds is still retried.

The UNAVAILABLE answers come from a stand-in for the sending of the
Worker's ack batches (the coalescer's ``send``: on the Work stream, else an
AckBatch call; "call" below) and for its Fail call; every other call reaches
the broker. A job whose lease is lost
was deleted (Admin.DeleteJob), so a second attempt would be answered
NOT_FOUND (``ack_error`` / ``fail_error``), not unknown.
"""
import asyncio
import threading

import grpc
import pytest

from jobwire import JobState, JobwireError, NonRetryableError
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
