"""Run control (broker.proto: Cancel, EnqueueRequest.timeout_ms,
ReportProgress, ClaimResponse.stops) as the Worker's handler and the Client
see it, against the real broker and Redis, for both Workers:

- ``job.progress()`` is seen by ``get_job`` and Subscribe while the handler
  runs; out-of-range reports are INVALID_ARGUMENT and change nothing;
- ``cancel()`` of a running job reaches its handler at once over the Claim
  stream (``job.cancelled``, reason ``"cancelled"``), also through a refused
  renewal when the stream's stop is missed; the job ends DEAD "cancelled";
- a run past its ``timeout_ms`` is told to stop (reason ``"timeout"``) and
  ends DEAD "timeout" even when its handler returns a result.
"""
import asyncio
import threading
import time

import grpc
import pytest

from jobwire import JobCancelled, JobState, JobwireError, Reason, Worker
from jobwire._deadline_timer import DeadlineTimer
from jobwire._run_control import RunControl
from jobwire._types import Job
from jobwire.v1 import broker_pb2 as pb
from jobwire.v1 import broker_pb2_grpc as pb_grpc
from conftest import wait_for
from test_worker import Outcomes, wait_state
from test_worker_lease import WORKERS, run_worker


def subscription_events(sub, into, until):
    """Reads ``sub`` into ``into`` in a thread until ``until(event)``."""
    def read():
        for ev in sub:
            into.append(ev)
            if until(ev):
                return
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


# -- progress ------------------------------------------------------------------
@pytest.mark.parametrize("kind", WORKERS + ["asyncio-plain-handler"])
def test_progress_is_seen_while_the_handler_runs(broker, client, queue, kind):
    reported = threading.Event()
    release = threading.Event()
    outcomes = Outcomes()

    def register(w):
        if kind == "asyncio":
            async def handle(job):
                await job.progress(40, b"step 2 of 5")
                reported.set()
                await asyncio.to_thread(release.wait, 10)
                await job.progress(data=b"only data")  # replaces both: no percent
                return "done"
        else:  # a thread: jobwire.Worker, or a plain function in jobwire.aio.Worker
            def handle(job):
                job.progress(40, b"step 2 of 5")
                reported.set()
                release.wait(10)
                job.progress(data=b"only data")
                return "done"
        w.register("long", handle)

    events = []
    sub = client.subscribe(queue, kinds=["progress"], include_details=True)

    def body():
        job_id = client.enqueue(queue, "long", b"").job_id
        reader = subscription_events(sub, events, lambda ev: ev.progress_percent is None)
        assert reported.wait(10)
        during = client.get_job(queue, job_id)
        release.set()
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        reader.join(10)
        return job_id, during

    job_id, during = run_worker(kind.split("-")[0], broker.addr, register, body, queues=queue,
                                on_outcome=outcomes)
    sub.close()
    assert during.state == JobState.ACTIVE
    assert (during.progress_percent, during.progress_data) == (40, b"step 2 of 5")
    done = client.get_job(queue, job_id)
    assert done.state == JobState.COMPLETED
    assert (done.progress_percent, done.progress_data) == (None, b"only data")
    assert [(e.kind, e.job_id, e.progress_percent, e.progress_data) for e in events] == [
        ("progress", job_id, 40, b"step 2 of 5"), ("progress", job_id, None, b"only data")]
    assert outcomes.kinds(job_id) == [("ack_ok", 1, None)]


def claim_one(addr, queue, lease_ms=30000):
    """Claims one job over the raw stubs: (channel, ClaimedJob)."""
    channel = grpc.insecure_channel(addr)
    call = pb_grpc.BrokerServiceStub(channel).Claim(
        pb.ClaimRequest(queues=[queue], max_in_flight=1, lease_ms=lease_ms), timeout=10)
    claimed = next(m for m in call if m.jobs).jobs[0]
    return channel, call, claimed


@pytest.mark.parametrize("percent,data,field", [
    (101, b"", "percent"),
    (-1, b"", "percent"),
    (None, b"x" * 4097, "data"),
    (None, b"", None),  # neither given
])
def test_report_progress_out_of_range_is_invalid_argument(broker, client, queue, percent,
                                                          data, field):
    job_id = client.enqueue(queue, "t", b"").job_id
    channel, call, claimed = claim_one(broker.addr, queue)
    try:
        assert claimed.job.id == job_id
        client.report_progress(queue, job_id, claimed.lease_token, 10, b"x" * 4096)  # the limit
        with pytest.raises(JobwireError) as ei:
            client.report_progress(queue, job_id, claimed.lease_token, percent, data)
        e = ei.value
        assert e.code == grpc.StatusCode.INVALID_ARGUMENT, e
        if field is not None:
            assert (e.reason, e.field) == (Reason.INVALID_FIELD, field), e
        job = client.get_job(queue, job_id)
        assert (job.state, job.progress_percent, job.progress_data) == (
            JobState.ACTIVE, 10, b"x" * 4096)
    finally:
        call.cancel()
        channel.close()


def test_report_progress_of_a_cancelled_run_is_refused(broker, client, queue):
    job_id = client.enqueue(queue, "t", b"").job_id
    channel, call, claimed = claim_one(broker.addr, queue)
    try:
        assert client.cancel(queue, job_id) is True
        with pytest.raises(JobwireError) as ei:
            client.report_progress(queue, job_id, claimed.lease_token, 50)
        assert (ei.value.code, ei.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                    Reason.JOB_CANCEL_REQUESTED)
        job = client.get_job(queue, job_id)
        assert job.state == JobState.ACTIVE and job.cancel_requested_at_ms > 0
        assert job.progress_percent is None
    finally:
        call.cancel()
        channel.close()


# -- cancel --------------------------------------------------------------------
def cancel_handler(kind, started, seen):
    """A handler that waits for the stop signal, then reports progress
    (refused: JobCancelled) and lets that propagate."""
    def record(job, signalled):
        seen["at"] = time.monotonic()
        seen["signalled"] = signalled
        seen["state"] = (job.cancelled, job.cancel_reason, job.deadline, job.lease_lost)

    if kind == "threaded":
        def handle(job):
            seen["before"] = (job.cancelled, job.cancel_reason)
            started.set()
            record(job, job.wait_cancelled(20))
            try:
                job.progress(50)
            except JobCancelled as e:
                seen["progress"] = e.reason
                raise
            return "not cancelled"
    else:
        async def handle(job):
            seen["before"] = (job.cancelled, job.cancel_reason)
            started.set()
            record(job, await job.wait_cancelled(20))
            try:
                await job.progress(50)
            except JobCancelled as e:
                seen["progress"] = e.reason
                raise
            return "not cancelled"
    return handle


@pytest.mark.parametrize("kind", WORKERS)
def test_cancel_stops_the_running_handler_over_the_claim_stream(broker, client, queue, kind):
    outcomes = Outcomes()
    started = threading.Event()
    seen = {}
    events = []
    sub = client.subscribe(queue, kinds=["cancel_requested", "cancelled", "dead"])

    def body():
        job_id = client.enqueue(queue, "long", b"", max_attempts=3).job_id
        reader = subscription_events(sub, events, lambda ev: ev.kind in ("cancelled", "dead"))
        assert started.wait(10)
        time.sleep(0.2)
        asked_at = time.monotonic()
        assert client.cancel(queue, job_id) is True
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        reader.join(10)
        return job_id, asked_at

    # A 30 s lease renews every 10 s: only the Claim stream's stop can tell
    # the handler within 3 s.
    job_id, asked_at = run_worker(
        kind, broker.addr, lambda w: w.register("long", cancel_handler(kind, started, seen)),
        body, queues=queue, lease_ms=30000, on_outcome=outcomes)
    sub.close()
    assert seen["before"] == (False, None)
    assert seen["signalled"] is True
    assert seen["at"] - asked_at < 3.0, seen["at"] - asked_at
    assert seen["state"] == (True, "cancelled", None, False)
    assert seen["progress"] == "cancelled"
    job = client.get_job(queue, job_id)
    assert (job.state, job.error, job.attempts) == (JobState.DEAD, "cancelled", 1)
    assert outcomes.kinds(job_id) == [("fail_ok", 1, "DEAD")]
    assert outcomes.items[0].error == "cancelled"
    assert [e.kind for e in events] == ["cancel_requested", "cancelled"], events


@pytest.mark.parametrize("kind", WORKERS)
def test_cancel_reaches_the_handler_through_a_refused_renewal(broker, client, queue, kind):
    """With the stream's stop ignored (as when the stream has ended), the
    next ExtendLease (JOB_CANCEL_REQUESTED) tells the handler; the lease is
    not lost: the Fail makes the job DEAD "cancelled"."""
    outcomes = Outcomes()
    started = threading.Event()
    seen = {}

    def patch(w):
        w._stop_run = lambda stop: None

    def body():
        job_id = client.enqueue(queue, "long", b"", max_attempts=3).job_id
        assert started.wait(10)
        asked_at = time.monotonic()
        assert client.cancel(queue, job_id) is True
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id, asked_at

    job_id, asked_at = run_worker(
        kind, broker.addr, lambda w: w.register("long", cancel_handler(kind, started, seen)),
        body, patch=patch, queues=queue, lease_ms=1500, on_outcome=outcomes)
    assert seen["signalled"] is True
    # Renewals every 0.5 s (a margin for a loaded machine).
    assert seen["at"] - asked_at < 2.5, seen["at"] - asked_at
    assert seen["state"] == (True, "cancelled", None, False)
    job = client.get_job(queue, job_id)
    assert (job.state, job.error) == (JobState.DEAD, "cancelled")
    assert outcomes.kinds(job_id) == [("fail_ok", 1, "DEAD")]


# -- timeout -------------------------------------------------------------------
def no_renewals(w):
    """Renews no lease: only the Worker's local deadline can tell a run it
    timed out (not a RUN_TIMED_OUT renewal refusal)."""
    if isinstance(w, Worker):
        w._renewer.add = lambda lease: None
    else:
        async def renew(job, run, state):
            return None
        w._renew = renew


@pytest.mark.parametrize("kind", WORKERS)
@pytest.mark.parametrize("renewals", [True, False])
def test_timeout_signals_the_handler_and_the_job_dies_with_timeout(broker, client, queue, kind,
                                                                   renewals):
    outcomes = Outcomes()
    seen = {}

    def start(job):
        seen["start"] = (time.monotonic(), job.timeout_ms, job.deadline, job.cancelled)

    def finish(job):
        seen["end"] = (job.cancelled, job.cancel_reason)

    def register(w):
        if kind == "threaded":
            def handle(job):
                start(job)
                time.sleep(2.5)  # ignores the signal
                finish(job)
                return "late result"

            w.register("slow", handle)
            w.register("quick", lambda job: "quick")
        else:
            async def handle(job):
                start(job)
                await asyncio.sleep(2.5)
                finish(job)
                return "late result"

            async def quick(job):
                return "quick"
            w.register("slow", handle)
            w.register("quick", quick)

    def body():
        job_id = client.enqueue(queue, "slow", b"", timeout_ms=1000, max_attempts=1).job_id
        dead = wait_state(client, queue, job_id, JobState.DEAD, timeout=10)
        wait_for(lambda: outcomes.kinds(job_id), timeout=10, what="the outcome")
        # The worker goes on: the refused late Ack is dropped.
        quick_id = client.enqueue(queue, "quick", b"").job_id
        quick = wait_state(client, queue, quick_id, JobState.COMPLETED, timeout=10)
        return job_id, dead, quick

    job_id, dead, quick = run_worker(kind, broker.addr, register, body,
                                     patch=None if renewals else no_renewals, queues=queue,
                                     on_outcome=outcomes)
    started_at, timeout_ms, deadline, cancelled_at_start = seen["start"]
    assert (timeout_ms, cancelled_at_start) == (1000, False)
    assert deadline is not None and 0.5 < deadline - started_at <= 1.0, deadline - started_at
    # (With renewals, the one after the deadline may also find the lease
    # lost, LEASE_STALE: the broker's reaper failed the attempt first.)
    assert seen["end"] == (True, "timeout")
    assert (dead.error, dead.attempts, dead.timeout_ms) == ("timeout", 1, 1000)
    assert client.get_job(queue, job_id).state == JobState.DEAD  # the late Ack changed nothing
    [(outcome_kind, attempt, _)] = outcomes.kinds(job_id)
    assert (outcome_kind, attempt) == ("ack_error", 1)
    assert quick.result_json() == "quick"


def test_timeout_ms_is_stored_and_checked(client, queue):
    job_id = client.enqueue(queue, "t", b"", timeout_ms=1500).job_id
    job = client.get_job(queue, job_id)
    assert (job.timeout_ms, job.run_deadline_ms, job.cancel_requested_at_ms) == (1500, 0, 0)
    [ok, bad] = client.enqueue_batch(queue, [{"type": "t", "timeout_ms": 2500},
                                            {"type": "t", "options": {"timeout_ms": -1}}])
    assert client.get_job(queue, ok.job_id).timeout_ms == 2500
    assert bad.error.code == grpc.StatusCode.INVALID_ARGUMENT and "timeout_ms" in bad.error.message


# -- the threaded Worker's deadline timer, without a broker ---------------------
def test_deadline_timer_signals_at_the_deadline_and_not_after_remove():
    timer = DeadlineTimer()
    now = time.monotonic()
    runs = [RunControl(Job.from_proto(pb.Job(id=str(i))), "tok", now + d, None)
            for i, d in enumerate((0.3, 0.2, 0.25))]
    no_deadline = RunControl(Job.from_proto(pb.Job(id="n")), "tok", None, None)
    for run in runs + [no_deadline]:
        timer.add(run)
    timer.remove(runs[2])
    try:
        assert runs[0].event.wait(2) and runs[1].event.wait(2)
        fired = time.monotonic()
        assert fired - now >= 0.3
        assert runs[0].job.cancel_reason == runs[1].job.cancel_reason == "timeout"
        with pytest.raises(JobCancelled) as ei:
            runs[0].job.check_cancelled()
        assert ei.value.reason == "timeout"
        assert not runs[2].event.wait(0.2) and runs[2].reason is None
        assert no_deadline.reason is None and not no_deadline.job.cancelled
    finally:
        timer.close()
