"""Client.subscribe (Subscribe) against the real broker and Redis, sync and
asyncio: the events of a job that completes and one that dies, the kinds
filter, refused requests, a subscription that outlives a broker restart or
a CANCELLED it did not cause (with 'events_missed' for the gap), and the
ways a subscription ends."""
import asyncio
import hashlib
import json
import signal
import threading
import time

import grpc
import pytest

from jobwire import (Client, JobState, JobwireError, QueueEvent, Reason, Subscription, Worker,
                     aio)
from jobwire._subscribe import SubscribeState, build_subscribe_request
from jobwire.v1 import broker_pb2 as pb
from conftest import SUBSCRIBE_METHOD, Broker, CancelledByBroker, running
from test_worker import wait_state

MISSED = QueueEvent(kind="events_missed")


def next_event(sub: Subscription, timeout: float = 10.0) -> QueueEvent:
    """The next event; fails (closing the subscription) after ``timeout``."""
    timer = threading.Timer(timeout, sub.close)
    timer.start()
    try:
        return next(sub)
    except StopIteration:
        raise AssertionError("no event within %gs" % timeout) from None
    finally:
        timer.cancel()


def events_until(sub, done, timeout: float = 20.0):
    """Events until ``done(event)`` holds for one; all of them."""
    deadline = time.monotonic() + timeout
    got = []
    while True:
        got.append(next_event(sub, max(0.1, deadline - time.monotonic())))
        if done(got[-1]):
            return got


def kinds_of(events, job_id):
    return [e.kind for e in events if e.job_id == job_id]


def finished_both(*ids):
    seen = set()

    def done(ev):
        if ev.kind in ("completed", "dead"):
            seen.add(ev.job_id)
        return seen >= set(ids)
    return done


def test_subscribe_sees_each_jobs_events_in_order(broker, client, queue):
    with client.subscribe([queue], include_details=True) as sub:
        ok_id = client.enqueue(queue, "ok", {"n": 6}).job_id
        bad_id = client.enqueue(queue, "bad", None, max_attempts=1).job_id
        w = Worker(broker.addr, queue, concurrency=2)
        w.register("ok", lambda job: {"twice": job.json()["n"] * 2})

        @w.handler("bad")
        def bad(job):
            raise RuntimeError("disk full")

        with running(w):
            events = events_until(sub, finished_both(ok_id, bad_id))
    assert kinds_of(events, ok_id) == ["enqueued", "active", "completed"], events
    assert kinds_of(events, bad_id) == ["enqueued", "active", "dead"], events
    for ev in events:
        assert isinstance(ev, QueueEvent)
        assert ev.queue == queue and ev.job_id in (ok_id, bad_id) and ev.at_ms > 0, ev
        assert ev.type == ("ok" if ev.job_id == ok_id else "bad"), ev
        assert ev.attempts == (0 if ev.kind == "enqueued" else 1), ev
        if ev.kind == "completed":
            assert ev.result_json() == {"twice": 12} and ev.error == "", ev
        elif ev.kind == "dead":
            assert ev.error == "RuntimeError: disk full" and ev.result == b"", ev
        else:
            assert (ev.result, ev.error) == (b"", ""), ev
    assert sub.closed


def test_subscribe_with_kinds_sees_only_those(broker, client, queue):
    sub = client.subscribe(queue, kinds=["completed"])
    w = Worker(broker.addr, queue)
    w.register("ok", lambda job: None)

    @w.handler("bad")
    def bad(job):
        raise RuntimeError("no")

    with sub, running(w):
        first = client.enqueue(queue, "ok").job_id
        bad_id = client.enqueue(queue, "bad", max_attempts=1).job_id
        got = [next_event(sub)]
        wait_state(client, queue, bad_id, JobState.DEAD)
        # Events of one queue come in order: had the dead job's events been
        # sent, they would come before this job's completion.
        last = client.enqueue(queue, "ok").job_id
        got.append(next_event(sub))
    assert [(e.kind, e.job_id) for e in got] == [("completed", first), ("completed", last)]


@pytest.mark.parametrize("queues,field", [([], "queues"), (["bad queue!"], "queues[0]")])
def test_subscribe_refuses_bad_queues(client, queues, field):
    with pytest.raises(JobwireError) as ei:
        client.subscribe(queues)
    e = ei.value
    assert (e.code, e.reason, e.field) == (grpc.StatusCode.INVALID_ARGUMENT,
                                           Reason.INVALID_FIELD, field)


@pytest.mark.parametrize("kinds,error", [
    (["finished"], ValueError), (["events_missed"], ValueError),
    (["completed", "Completed"], ValueError), ([3], TypeError)])
def test_subscribe_refuses_bad_kinds_before_calling(client, kinds, error):
    with pytest.raises(error) as ei:
        client.subscribe(["q"], kinds=kinds)
    if error is ValueError:
        assert repr(kinds[-1]) in str(ei.value)


def test_subscribe_beyond_max_subscriptions(redis_url, tmp_path, queue):
    b = Broker(redis_url, tmp_path, "--max_subscriptions=1")
    b.start()
    try:
        with Client(b.addr, timeout=5) as c, c.subscribe(queue):
            with pytest.raises(JobwireError) as ei:
                c.subscribe(queue + "-2")
    finally:
        b.stop()
    e = ei.value
    assert (e.code, e.reason, e.retry_delay) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                 Reason.TOO_MANY_SUBSCRIPTIONS, 1.0)


@pytest.mark.parametrize("how", ["kill", "drain"])
def test_subscription_outlives_a_broker_restart(own_broker, queue, how):
    """The stream ends (UNAVAILABLE); next() subscribes again once the broker
    is back, delivers 'events_missed', then the events that follow."""
    with Client(own_broker.addr, timeout=3) as c, c.subscribe(queue) as sub:
        before = c.enqueue(queue, "t").job_id
        ev = next_event(sub)
        assert (ev.kind, ev.job_id) == ("enqueued", before)
        if how == "kill":
            own_broker.kill()
        else:
            own_broker.stop()
        time.sleep(0.5)
        own_broker.start()
        assert next_event(sub, 15) == MISSED
        after = c.enqueue(queue, "t").job_id
        ev = next_event(sub)
        assert (ev.kind, ev.queue, ev.job_id) == ("enqueued", queue, after)


def test_an_error_that_is_not_a_gap_ends_the_subscription(redis_url, tmp_path, queue):
    """Subscribing again after a restart, the broker refuses the token: the
    refusal is raised from next(), and the iteration has ended."""
    token = "subscriber-token"
    tokens = tmp_path / "tokens.json"

    def allow(pattern):
        tokens.write_text(json.dumps({"tokens": [{
            "name": "s", "sha256": hashlib.sha256(token.encode()).hexdigest(),
            "enqueue": [pattern]}]}))

    allow("*")
    b = Broker(redis_url, tmp_path, "--auth_tokens_file=%s" % tokens)
    b.start()
    try:
        with Client(b.addr, timeout=3, token=token) as c:
            sub = c.subscribe(queue)
            allow("other.*")
            b.kill()
            b.start()
            with pytest.raises(JobwireError) as ei:
                next_event(sub, 15)
            e = ei.value
            assert (e.code, e.reason) == (grpc.StatusCode.PERMISSION_DENIED,
                                          Reason.TOKEN_NOT_PERMITTED)
            assert sub.closed
            with pytest.raises(StopIteration):
                next(sub)
    finally:
        b.stop()


def test_subscribe_not_confirmed_in_time(own_broker, queue):
    """A broker that does not answer (frozen): subscribe raises
    DEADLINE_EXCEEDED after its timeout, never hangs."""
    with Client(own_broker.addr, timeout=3) as c:
        own_broker.proc.send_signal(signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            with pytest.raises(JobwireError) as ei:
                c.subscribe(queue, timeout=0.5)
            took = time.monotonic() - t0
        finally:
            own_broker.proc.send_signal(signal.SIGCONT)
    e = ei.value
    assert (e.code, e.reason) == (grpc.StatusCode.DEADLINE_EXCEEDED, "")
    assert "not confirmed" in e.message and 0.45 <= took < 2.0, (e, took)


def test_close_ends_the_iteration_promptly(own_broker, client, queue):
    sub = client.subscribe(queue)
    ended = []

    def consume():
        ended.append(list(sub))  # blocks in next() until closed

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    sub.close()
    t.join(5)
    assert ended == [[]] and time.monotonic() - t0 < 1.0
    sub.close()  # again: no-op
    with pytest.raises(StopIteration):
        next(sub)

    # Events read but not taken are dropped by close().
    with client.subscribe(queue) as sub:
        client.enqueue(queue, "t")
        client.enqueue(queue, "t")
        assert next_event(sub).kind == "enqueued"
    assert list(sub) == []

    # close() also ends a next() that waits to subscribe again.
    with Client(own_broker.addr, timeout=3) as c:
        sub = c.subscribe(queue)
        own_broker.kill()
        t = threading.Thread(target=consume, daemon=True)
        ended.clear()
        t.start()
        time.sleep(1.0)
        assert t.is_alive() and not ended
        t0 = time.monotonic()
        sub.close()
        t.join(5)
        assert ended == [[]] and time.monotonic() - t0 < 1.0


def test_subscribe_state_tells_of_missed_events_once():
    state = SubscribeState(build_subscribe_request("q"), 1.0)
    ev = pb.QueueEvent(kind=pb.EVENT_KIND_ENQUEUED, queue="q", job_id="7", at_ms=1)
    kinds = lambda resp: [e.kind for e in state.take(resp)]  # noqa: E731
    assert kinds(pb.SubscribeResponse(subscribed=True)) == []
    assert kinds(pb.SubscribeResponse(events=[ev, ev])) == ["enqueued", "enqueued"]
    assert kinds(pb.SubscribeResponse(events_missed=True, events=[ev])) == [
        "events_missed", "enqueued"]
    state.retry_delay(JobwireError(grpc.StatusCode.UNAVAILABLE, "gone"), cancelled_by_client=False)
    assert kinds(pb.SubscribeResponse(subscribed=True, events_missed=True)) == ["events_missed"]
    assert kinds(pb.SubscribeResponse(events=[ev])) == ["enqueued"]
    assert kinds(pb.SubscribeResponse(events=[pb.QueueEvent(kind=99)])) == ["unknown"]


@pytest.mark.parametrize("code,reason,retry", [
    (grpc.StatusCode.UNAVAILABLE, "", True),
    (grpc.StatusCode.UNAVAILABLE, Reason.BROKER_SHUTTING_DOWN, True),
    # Not caused by the client (cancelled_by_client=False): a broker shutting
    # down (gRPC core, grpc/grpc#41785).
    (grpc.StatusCode.CANCELLED, "", True),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.SUBSCRIBER_TOO_SLOW, True),
    (grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.TOO_MANY_SUBSCRIPTIONS, True),
    (grpc.StatusCode.DEADLINE_EXCEEDED, "", True),  # the client's: not confirmed in time
    (grpc.StatusCode.RESOURCE_EXHAUSTED, Reason.REDIS_OUT_OF_MEMORY, False),
    (grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_FIELD, False),
    (grpc.StatusCode.PERMISSION_DENIED, Reason.TOKEN_NOT_PERMITTED, False),
    (grpc.StatusCode.INTERNAL, "", False),
])
def test_subscribe_state_retries_only_the_errors_of_a_gap(code, reason, retry):
    state = SubscribeState(build_subscribe_request("q"), 1.0)
    err = JobwireError(code, "m", reason=reason)
    for attempt in range(8):
        if not retry:
            with pytest.raises(JobwireError) as ei:
                state.retry_delay(err, cancelled_by_client=False)
            assert ei.value is err
            return
        assert 0 <= state.retry_delay(err, cancelled_by_client=False) <= 5.0
    slow = JobwireError(grpc.StatusCode.RESOURCE_EXHAUSTED, "m",
                        reason=Reason.TOO_MANY_SUBSCRIPTIONS, retry_delay=7.0)
    # the broker's RetryInfo when larger
    assert state.retry_delay(slow, cancelled_by_client=False) == 7.0


def test_subscribe_state_raises_the_cancelled_the_client_caused():
    """CANCELLED of a call the client cancelled (the Client closed) ends the
    subscription; the other errors of a gap are subscribed again after as
    when it did not."""
    state = SubscribeState(build_subscribe_request("q"), 1.0)
    mine = JobwireError(grpc.StatusCode.CANCELLED, "Channel closed!")
    with pytest.raises(JobwireError) as ei:
        state.retry_delay(mine, cancelled_by_client=True)
    assert ei.value is mine
    gone = JobwireError(grpc.StatusCode.UNAVAILABLE, "gone")
    assert 0 <= state.retry_delay(gone, cancelled_by_client=True) <= 5.0


def test_aio_subscribe(broker, queue):
    async def main():
        async with aio.Client(broker.addr, timeout=5) as c:
            w = aio.Worker(broker.addr, queue, concurrency=2)

            @w.handler("ok")
            async def ok(job):
                return {"got": job.json()}

            @w.handler("bad")
            def bad(job):
                raise RuntimeError("no")

            async with c.subscribe(queue, include_details=True) as sub:
                ok_id = (await c.enqueue(queue, "ok", 5)).job_id
                bad_id = (await c.enqueue(queue, "bad", None, max_attempts=1)).job_id
                run = asyncio.create_task(w.run(install_signal_handlers=False))
                events, done = [], finished_both(ok_id, bad_id)
                try:
                    async for ev in sub:
                        events.append(ev)
                        if done(ev):
                            break
                finally:
                    await w.stop()
                    await asyncio.wait_for(run, 10)
            assert sub.closed
            assert kinds_of(events, ok_id) == ["enqueued", "active", "completed"], events
            assert kinds_of(events, bad_id) == ["enqueued", "active", "dead"], events
            completed = [e for e in events if e.kind == "completed"][0]
            dead = [e for e in events if e.kind == "dead"][0]
            assert completed.result_json() == {"got": 5} and dead.error == "RuntimeError: no"

            # kinds, and `await client.subscribe(...)`.
            sub = await c.subscribe([queue], kinds=["enqueued"])
            job_id = (await c.enqueue(queue, "nobody")).job_id
            await c.cancel(queue, job_id)
            later = (await c.enqueue(queue, "nobody")).job_id
            got = [await asyncio.wait_for(sub.__anext__(), 10) for _ in range(2)]
            assert [(e.kind, e.job_id) for e in got] == [("enqueued", job_id), ("enqueued", later)]
            await sub.aclose()
            with pytest.raises(StopAsyncIteration):
                await sub.__anext__()

            # Refusals: the kinds at once, the broker's when first used.
            with pytest.raises(ValueError):
                c.subscribe(queue, kinds=["events_missed"])
            with pytest.raises(JobwireError) as ei:
                async for _ in c.subscribe([]):
                    pass
            assert ei.value.code == grpc.StatusCode.INVALID_ARGUMENT
            with pytest.raises(JobwireError) as ei:
                await c.subscribe(["bad queue!"])
            assert ei.value.field == "queues[0]"

            # close() ends an `async for` waiting for events; so does
            # cancelling its task.
            sub = c.subscribe(queue)

            async def consume():
                return [ev async for ev in sub]

            task = asyncio.create_task(consume())
            await asyncio.sleep(0.3)
            t0 = time.monotonic()
            sub.close()
            assert await asyncio.wait_for(task, 5) == [] and time.monotonic() - t0 < 1.0
            sub = await c.subscribe(queue)
            task = asyncio.create_task(consume())
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert sub.closed
    asyncio.run(main())


def test_aio_subscription_outlives_a_broker_restart(own_broker, queue):
    async def main():
        async with aio.Client(own_broker.addr, timeout=3) as c:
            async with c.subscribe(queue) as sub:
                own_broker.kill()
                await asyncio.sleep(0.5)
                own_broker.start()
                assert await asyncio.wait_for(sub.__anext__(), 15) == MISSED
                job_id = (await c.enqueue(queue, "t")).job_id
                ev = await asyncio.wait_for(sub.__anext__(), 10)
                assert (ev.kind, ev.job_id) == ("enqueued", job_id)
    asyncio.run(main())


def test_subscription_goes_on_after_a_cancelled_it_did_not_cause(broker, queue):
    """A Subscribe stream that ran ended CANCELLED by the broker's side
    (gRPC core during a shutdown, grpc/grpc#41785; here a client interceptor
    ends the first call once its confirmation came) is bridged as
    UNAVAILABLE is: subscribed again, 'events_missed', then later events."""
    cut = CancelledByBroker(SUBSCRIBE_METHOD)
    with cut.client(broker.addr, timeout=5) as c, c.subscribe(queue) as sub:
        assert cut.calls == 1
        assert next_event(sub, 15) == MISSED
        assert cut.cut.is_set() and cut.calls >= 2, cut.calls
        job_id = c.enqueue(queue, "t").job_id
        ev = next_event(sub)
        assert (ev.kind, ev.queue, ev.job_id) == ("enqueued", queue, job_id)
        assert not sub.closed


def test_closing_the_client_ends_a_subscription_with_cancelled(broker, queue):
    """The CANCELLED the client causes itself (its channel closed: every
    call cancelled) is raised from next() and ends the subscription, as
    ever: not subscribed again."""
    c = Client(broker.addr, timeout=5)
    sub = c.subscribe(queue)
    box = {}

    def consume():
        try:
            box["events"] = list(sub)
        except BaseException as e:  # checked below
            box["error"] = e

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    time.sleep(0.3)
    c.close()
    t.join(5)
    assert not t.is_alive()
    e = box.get("error")
    assert type(e) is JobwireError and e.code == grpc.StatusCode.CANCELLED, box
    assert sub.closed


def test_aio_subscription_goes_on_after_a_cancelled_it_did_not_cause(broker, queue):
    """As test_subscription_goes_on_after_a_cancelled_it_did_not_cause, with
    jobwire.aio.Client (a grpc.aio interceptor)."""
    cut = CancelledByBroker(SUBSCRIBE_METHOD)

    async def main():
        async with cut.aio_client(broker.addr, timeout=5) as c:
            async with c.subscribe(queue) as sub:
                assert cut.calls == 1
                assert await asyncio.wait_for(sub.__anext__(), 15) == MISSED
                assert cut.cut.is_set() and cut.calls >= 2, cut.calls
                job_id = (await c.enqueue(queue, "t")).job_id
                ev = await asyncio.wait_for(sub.__anext__(), 10)
                assert (ev.kind, ev.queue, ev.job_id) == ("enqueued", queue, job_id)
                assert not sub.closed
    asyncio.run(main())
