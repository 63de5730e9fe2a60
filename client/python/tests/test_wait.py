"""Client.wait (WaitJob) against the real broker and Redis, sync and asyncio:
a job that completes, one that dies, one already finished, one that times
out, an unknown job, a wait that outlives a broker restart or a CANCELLED
it did not cause, one ended by closing its Client, and one ended by a gRPC
error its on_update raised."""
import asyncio
import pickle
import threading
import time

import grpc
import pytest

from jobwire import (Client, Job, JobDeadError, JobState, JobwireError, NonRetryableError, Reason,
                     WaitTimeoutError, Worker, aio)
from conftest import WAIT_JOB_METHOD, CancelledByBroker, running, wait_for
from test_worker import wait_state


def _in_thread(fn):
    """Run fn() in a thread; returns (thread, box): box["value"] or box["error"]."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # checked by the test
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def test_wait_returns_the_completed_job_with_its_result(broker, client, queue):
    job_id = client.enqueue(queue, "square", {"n": 7}).job_id
    updates = []
    t, box = _in_thread(lambda: client.wait(queue, job_id, timeout=20, on_update=updates.append))
    wait_for(lambda: updates, what="the first update")
    assert updates[0].state == JobState.PENDING and updates[0].id == job_id

    w = Worker(broker.addr, queue)

    @w.handler("square")
    def square(job):
        time.sleep(0.3)  # ACTIVE long enough to be seen
        return {"square": job.json()["n"] ** 2}

    with running(w):
        t.join(20)
    assert "error" not in box, box
    job = box["value"]
    assert job.id == job_id and job.state == JobState.COMPLETED
    assert job.result_json() == {"square": 49} and job.attempts == 1
    states = [u.state for u in updates]
    assert states == [JobState.PENDING, JobState.ACTIVE, JobState.COMPLETED], states
    assert updates[-1] == job


def test_wait_raises_job_dead_error_with_the_error_text(broker, client, queue):
    w = Worker(broker.addr, queue)

    @w.handler("bad")
    def bad(job):
        raise NonRetryableError("input %s is malformed" % job.json()["file"])

    job_id = client.enqueue(queue, "bad", {"file": "a.csv"}, max_attempts=5).job_id
    with running(w):
        with pytest.raises(JobDeadError) as ei:
            client.wait(queue, job_id, timeout=20)
    e = ei.value
    assert isinstance(e, JobwireError) and e.code == grpc.StatusCode.FAILED_PRECONDITION
    assert e.job.id == job_id and e.job.state == JobState.DEAD and e.job.attempts == 1
    assert e.job.error == "NonRetryableError: input a.csv is malformed"
    assert str(e) == ("FAILED_PRECONDITION: job %s in queue %s is dead: "
                      "NonRetryableError: input a.csv is malformed" % (job_id, queue))


def test_wait_for_a_job_already_finished_answers_at_once(broker, client, queue):
    w = Worker(broker.addr, queue)
    w.register("t", lambda job: b"done")
    done_id = client.enqueue(queue, "t", b"").job_id
    with running(w):
        wait_state(client, queue, done_id, JobState.COMPLETED)
    cancelled_id = client.enqueue(queue, "later", b"", delay_ms=60_000).job_id
    client.cancel(queue, cancelled_id)

    updates = []
    t0 = time.monotonic()
    job = client.wait(queue, done_id, timeout=10, on_update=updates.append)
    took = time.monotonic() - t0
    assert job.state == JobState.COMPLETED and job.result == b"done"
    assert updates == [job]
    assert took < 1.0, took
    with pytest.raises(JobDeadError) as ei:
        client.wait(queue, cancelled_id)  # no timeout: the answer is at once
    assert ei.value.job.error == "cancelled"


def test_wait_times_out_with_the_last_state(client, queue):
    job_id = client.enqueue(queue, "nobody-handles-this", {"x": 1}).job_id
    t0 = time.monotonic()
    with pytest.raises(WaitTimeoutError) as ei:
        client.wait(queue, job_id, timeout=0.3)
    took = time.monotonic() - t0
    e = ei.value
    assert 0.29 <= took < 1.3, took
    assert isinstance(e, JobwireError) and e.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert e.reason == Reason.WAIT_TIMEOUT  # ended by the broker, at timeout_ms
    assert e.job is not None and e.job.id == job_id and e.job.state == JobState.PENDING


def test_wait_for_an_unknown_job_is_not_found(client, queue):
    with pytest.raises(JobwireError) as ei:
        client.wait(queue, "424242424", timeout=5)
    e = ei.value
    assert type(e) is JobwireError
    assert e.code == grpc.StatusCode.NOT_FOUND and e.reason == Reason.JOB_NOT_FOUND


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), True, "1"])
def test_wait_refuses_a_bad_timeout_before_calling(client, queue, timeout):
    with pytest.raises((TypeError, ValueError)):
        client.wait(queue, "1", timeout=timeout)


def test_wait_errors_pickle_with_their_job():
    job = Job(id="7", queue="q", type="t", payload=b"", attempt=2, max_attempts=2,
              state=JobState.DEAD, error="ValueError: x")
    dead = pickle.loads(pickle.dumps(JobDeadError(job)))
    assert type(dead) is JobDeadError and dead.job == job
    assert str(dead) == "FAILED_PRECONDITION: job 7 in queue q is dead: ValueError: x"
    late = pickle.loads(pickle.dumps(WaitTimeoutError("too late", job, reason="WAIT_TIMEOUT")))
    assert type(late) is WaitTimeoutError and late.job == job
    assert (late.code, late.message, late.reason) == (
        grpc.StatusCode.DEADLINE_EXCEEDED, "too late", "WAIT_TIMEOUT")


@pytest.mark.parametrize("how", ["kill", "drain"])
def test_wait_outlives_a_broker_restart(own_broker, queue, how):
    """UNAVAILABLE (the connection lost, or BROKER_SHUTTING_DOWN while the
    broker drains) is not raised: the wait calls again once it is back."""
    client = Client(own_broker.addr, timeout=3)
    job_id = client.enqueue(queue, "t", {"n": 1}).job_id
    updates = []
    t, box = _in_thread(lambda: client.wait(queue, job_id, timeout=40, on_update=updates.append))
    wait_for(lambda: updates, what="the first update")
    if how == "kill":
        own_broker.kill()
    else:
        own_broker.stop()
    time.sleep(1.0)
    assert t.is_alive() and "error" not in box, box
    own_broker.start()
    time.sleep(1.0)  # the wait resumes, sees PENDING again: not reported twice
    w = Worker(own_broker.addr, queue)
    w.register("t", lambda job: job.json())
    with running(w):
        t.join(30)
    client.close()
    assert "error" not in box, box
    assert box["value"].state == JobState.COMPLETED and box["value"].result_json() == {"n": 1}
    states = [u.state for u in updates]
    assert states[0] == JobState.PENDING and states[-1] == JobState.COMPLETED
    assert states.count(JobState.PENDING) == 1, states


def test_aio_wait(broker, queue):
    async def main():
        async with aio.Client(broker.addr, timeout=5) as c:
            w = aio.Worker(broker.addr, queue)

            @w.handler("ok")
            async def ok(job):
                return {"got": job.json()}

            @w.handler("dead")
            def dead(job):
                raise NonRetryableError("no")

            seen = []

            async def on_update(job):  # a coroutine function is awaited
                seen.append(job.state)

            ok_id = (await c.enqueue(queue, "ok", 5)).job_id
            dead_id = (await c.enqueue(queue, "dead", None)).job_id
            run = asyncio.create_task(w.run(install_signal_handlers=False))
            try:
                job = await c.wait(queue, ok_id, timeout=20, on_update=on_update)
                with pytest.raises(JobDeadError) as ei:
                    await c.wait(queue, dead_id, timeout=20)
            finally:
                await w.stop()
                await asyncio.wait_for(run, 10)
            assert job.state == JobState.COMPLETED and job.result_json() == {"got": 5}
            assert seen[-1] == JobState.COMPLETED
            assert ei.value.job.error == "NonRetryableError: no"

            idle_id = (await c.enqueue(queue, "nobody", b"")).job_id
            with pytest.raises(WaitTimeoutError) as ti:
                await c.wait(queue, idle_id, timeout=0.3)
            assert ti.value.reason == Reason.WAIT_TIMEOUT
            assert ti.value.job.state == JobState.PENDING
            with pytest.raises(JobwireError) as ni:
                await c.wait(queue, "424242424", timeout=5)
            assert ni.value.code == grpc.StatusCode.NOT_FOUND

            # Cancelling the awaiting task ends the wait (and its call).
            task = asyncio.create_task(c.wait(queue, idle_id))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    asyncio.run(main())


def test_wait_calls_again_after_a_cancelled_it_did_not_cause(broker, queue):
    """A WaitJob call ended CANCELLED by the broker's side (gRPC core during
    a shutdown, grpc/grpc#41785; here a client interceptor ends the first
    call so once its first message came) is waited out as UNAVAILABLE is:
    the wait calls again and returns the job once COMPLETED."""
    cut = CancelledByBroker(WAIT_JOB_METHOD)
    client = cut.client(broker.addr, timeout=5)
    try:
        job_id = client.enqueue(queue, "t", {"n": 3}).job_id
        updates = []
        t, box = _in_thread(lambda: client.wait(queue, job_id, timeout=30,
                                                on_update=updates.append))
        wait_for(lambda: cut.cut.is_set() or "error" in box, what="the first call cut")
        wait_for(lambda: cut.calls >= 2 or "error" in box, what="a second WaitJob call")
        assert "error" not in box, box
        w = Worker(broker.addr, queue)
        w.register("t", lambda job: {"n": job.json()["n"] + 1})
        with running(w):
            t.join(20)
    finally:
        client.close()
    assert not t.is_alive() and "error" not in box, box
    job = box["value"]
    assert job.id == job_id and job.state == JobState.COMPLETED
    assert job.result_json() == {"n": 4}
    assert cut.calls >= 2, cut.calls
    states = [u.state for u in updates]
    # The second call's first message (PENDING again) is not reported twice.
    assert states[0] == JobState.PENDING and states[-1] == JobState.COMPLETED, states
    assert states.count(JobState.PENDING) == 1, states


def test_closing_the_client_ends_a_wait_with_cancelled(broker, queue):
    """The CANCELLED the client causes itself (its channel closed: every
    call cancelled) ends the wait, as ever: no call again."""
    client = Client(broker.addr, timeout=5)
    job_id = client.enqueue(queue, "nobody-handles-this").job_id
    updates = []
    t, box = _in_thread(lambda: client.wait(queue, job_id, on_update=updates.append))
    wait_for(lambda: updates, what="the first update")
    client.close()
    t.join(5)
    assert not t.is_alive()
    e = box.get("error")
    assert type(e) is JobwireError and e.code == grpc.StatusCode.CANCELLED, box


def test_aio_wait_calls_again_after_a_cancelled_it_did_not_cause(broker, queue):
    """As test_wait_calls_again_after_a_cancelled_it_did_not_cause, with
    jobwire.aio.Client (a grpc.aio interceptor)."""
    cut = CancelledByBroker(WAIT_JOB_METHOD)

    async def main():
        async with cut.aio_client(broker.addr, timeout=5) as c:
            job_id = (await c.enqueue(queue, "t", {"n": 5})).job_id
            seen = []
            wait = asyncio.create_task(c.wait(queue, job_id, timeout=30,
                                              on_update=lambda job: seen.append(job.state)))
            deadline = time.monotonic() + 10
            while cut.calls < 2 and not wait.done() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert cut.cut.is_set()
            if wait.done():
                wait.result()  # the error that ended it
            assert cut.calls >= 2, cut.calls
            w = aio.Worker(c.addr, queue)

            @w.handler("t")
            async def t(job):
                return {"n": job.json()["n"] + 1}

            run = asyncio.create_task(w.run(install_signal_handlers=False))
            try:
                job = await asyncio.wait_for(wait, 20)
            finally:
                await w.stop()
                await asyncio.wait_for(run, 10)
            assert job.id == job_id and job.state == JobState.COMPLETED
            assert job.result_json() == {"n": 6}
            assert seen[0] == JobState.PENDING and seen[-1] == JobState.COMPLETED, seen
            assert seen.count(JobState.PENDING) == 1, seen
    asyncio.run(main())


@pytest.mark.parametrize("code,by_client,again", [
    (grpc.StatusCode.UNAVAILABLE, False, True),
    (grpc.StatusCode.UNAVAILABLE, True, True),
    # A broker shutting down (gRPC core, grpc/grpc#41785) ...
    (grpc.StatusCode.CANCELLED, False, True),
    # ... but not a call the client cancelled (its Client closed).
    (grpc.StatusCode.CANCELLED, True, False),
    (grpc.StatusCode.DEADLINE_EXCEEDED, False, False),
    (grpc.StatusCode.NOT_FOUND, False, False),
    (grpc.StatusCode.INTERNAL, False, False),
])
def test_waiter_calls_again_only_when_the_broker_went_away(code, by_client, again):
    from jobwire._reconnect import broker_went_away
    from jobwire._wait import Waiter

    assert broker_went_away(code, by_client) is again
    w = Waiter("q", "1", None)
    err = JobwireError(code, "m")
    if again:
        for _ in range(4):
            assert 0 <= w.retry_delay(err, cancelled_by_client=by_client) <= 5.0
    else:
        with pytest.raises(JobwireError) as ei:
            w.retry_delay(err, cancelled_by_client=by_client)
        assert ei.value is err


class _CallbackRpcError(grpc.aio.AioRpcError):
    """What a gRPC call made inside on_update raises: an AioRpcError (a
    grpc.RpcError too) with code UNAVAILABLE, the code after which the wait
    itself would call again."""

    def __init__(self):
        grpc.aio.AioRpcError.__init__(self, grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(),
                                      grpc.aio.Metadata(), "the callback's own call failed")


def test_a_grpc_error_on_update_raises_ends_the_wait_as_it_is(client, queue):
    """on_update's exceptions propagate: a grpc.RpcError it raises (here
    UNAVAILABLE) is its own, not the WaitJob call's, so the wait does not
    take it for the broker going away and call again (it would wait out
    the timeout: nobody works the queue)."""
    job_id = client.enqueue(queue, "nobody", b"").job_id
    raised = _CallbackRpcError()

    def on_update(job):
        raise raised

    t0 = time.monotonic()
    with pytest.raises(grpc.RpcError) as ei:
        client.wait(queue, job_id, timeout=3, on_update=on_update)
    assert ei.value is raised and time.monotonic() - t0 < 2.0


def test_aio_a_grpc_error_on_update_raises_ends_the_wait_as_it_is(broker, queue):
    """As for the threaded Client, with an AioRpcError raised by an
    awaited on_update."""
    async def main():
        async with aio.Client(broker.addr) as c:
            job_id = (await c.enqueue(queue, "nobody", b"")).job_id
            raised = _CallbackRpcError()

            async def on_update(job):
                raise raised

            t0 = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as ei:
                await c.wait(queue, job_id, timeout=3, on_update=on_update)
            assert ei.value is raised and time.monotonic() - t0 < 2.0
    asyncio.run(main())
