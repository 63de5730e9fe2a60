"""The Worker's two lease-end rules (docs/clients.md, Worker), against the
real broker and Redis:

- an Ack answered UNAVAILABLE is sent again until the lease has ended (one
  attempt just before the end, one at the end); still unanswered then, the
  outcome is ``ack_unknown``, not ``ack_error``;
- a delivery whose lease ended before its handler could start is dropped
  (no handler, no Ack / Fail), counted, reported as ``expired_dropped``, and
  the broker delivers the job again.
"""
import asyncio
import threading
import time

import grpc

from jobwire import Client, JobState, JobwireError, Worker, aio
from conftest import running, wait_for
from test_worker import Outcomes, wait_state

# A channel that reconnects within 0.2 s of the broker listening again (the
# gRPC default backs off for seconds after a few failed connects).
FAST_RECONNECT = [("grpc.initial_reconnect_backoff_ms", 100),
                  ("grpc.min_reconnect_backoff_ms", 100),
                  ("grpc.max_reconnect_backoff_ms", 200)]


def sleep_until(epoch_s: float) -> None:
    time.sleep(max(0.0, epoch_s - time.time()))


def _late(message) -> float:
    """When to hand the worker a Claim (or Work) message that carries a first attempt
    of a "late" job: 0.3 s after its lease ended (0: at once)."""
    ends = [cj.lease_expires_at_ms for cj in message.jobs
            if cj.job.type == "late" and cj.job.attempts == 1]
    return max(ends) / 1000.0 + 0.3 if ends else 0.0


class _LateCall:
    """A Claim (or Work) call whose reader is paused (as by SIGSTOP or a long GC) before
    it hands over a message carrying a first attempt of a "late" job."""

    def __init__(self, call):
        self._call = call

    def __iter__(self):
        return self

    def __next__(self):
        message = next(self._call)
        sleep_until(_late(message))
        return message

    def __aiter__(self):
        return self._aiter()

    async def _aiter(self):
        async for message in self._call:
            await asyncio.sleep(max(0.0, _late(message) - time.time()))
            yield message

    def __getattr__(self, name):  # cancel() etc.
        return getattr(self._call, name)


class _LateStub:
    def __init__(self, stub):
        self._stub = stub

    def Claim(self, request, **kwargs):
        return _LateCall(self._stub.Claim(request, **kwargs))

    def Work(self, *args, **kwargs):
        return _LateCall(self._stub.Work(*args, **kwargs))

    def __getattr__(self, name):
        return getattr(self._stub, name)


def check_dropped_then_redelivered(client, queue, job_id, runs, kinds, stats):
    assert runs == [2], "handler runs (attempts): %r" % runs
    assert kinds == [("expired_dropped", 1, None), ("ack_ok", 2, None)], kinds
    assert stats["expired_deliveries_dropped"] == 1
    job = client.get_job(queue, job_id)
    assert job.state == JobState.COMPLETED and job.attempts == 2
    assert job.result_json() == "attempt 2"


def test_delivery_whose_lease_ended_is_dropped_and_delivered_again(broker, client, queue,
                                                                   caplog):
    outcomes = Outcomes()
    w = Worker(broker.addr, queue, lease_ms=2000, on_outcome=outcomes)
    w._stub = _LateStub(w._stub)
    runs = []

    @w.handler("late")
    def late(job):
        runs.append(job.attempt)
        return "attempt %d" % job.attempt

    caplog.set_level("WARNING", logger="jobwire.worker")
    with running(w):
        job_id = client.enqueue(queue, "late", b"", max_attempts=5).job_id
        wait_for(lambda: len(outcomes.kinds(job_id)) >= 2, timeout=20, what="two outcomes")
        wait_state(client, queue, job_id, JobState.COMPLETED)
        time.sleep(0.3)  # nothing more comes
        kinds = outcomes.kinds(job_id)
    check_dropped_then_redelivered(client, queue, job_id, runs, kinds, w.stats())
    [warning] = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert queue in warning and job_id in warning and "ms ago" in warning


def test_aio_delivery_whose_lease_ended_is_dropped_and_delivered_again(broker, client, queue):
    outcomes = Outcomes()
    runs = []

    async def main():
        w = aio.Worker(broker.addr, queue, lease_ms=2000, on_outcome=outcomes)

        @w.handler("late")
        async def late(job):
            runs.append(job.attempt)
            return "attempt %d" % job.attempt

        task = asyncio.create_task(w.run(install_signal_handlers=False))
        while not hasattr(w, "_stub"):  # made in run()
            await asyncio.sleep(0)
        w._stub = _LateStub(w._stub)
        job_id = (await asyncio.to_thread(client.enqueue, queue, "late", b"",
                                          max_attempts=5)).job_id
        deadline = time.monotonic() + 20
        while len(outcomes.kinds(job_id)) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # nothing more comes
        await w.stop()
        await task
        return job_id, w.stats()

    job_id, stats = asyncio.run(main())
    check_dropped_then_redelivered(client, queue, job_id, runs, outcomes.kinds(job_id), stats)


def _reaches(client, queue, job_id) -> bool:
    try:
        client.get_job(queue, job_id)
        return True
    except JobwireError as e:
        if e.code != grpc.StatusCode.UNAVAILABLE:
            raise
        return False


def _ack_across_outage(own_broker, queue, back_before_end_s):
    """Runs one job whose handler returns just after the broker was killed;
    restarts the broker ``back_before_end_s`` before the lease ends (negative:
    after). Returns (job id, outcomes, lease end in epoch s, client)."""
    outcomes = Outcomes()
    reported_at = []
    w = Worker(own_broker.addr, queue, lease_ms=4000, timeout=2.0,
               channel_options=FAST_RECONNECT,
               on_outcome=lambda o: (reported_at.append(time.time()), outcomes(o)))
    started, killed = threading.Event(), threading.Event()
    lease_end = []

    @w.handler("t")
    def handle(job):
        if job.attempt == 1:
            started.set()
            killed.wait(10)
            # No renewal got through since the claim: the lease ends here
            # (Redis clock; the worker's own estimate is a few ms later).
            lease_end.append(job.lease_expires_at_ms / 1000.0)
        return "attempt %d" % job.attempt

    client = Client(own_broker.addr, timeout=3)
    with running(w):
        job_id = client.enqueue(queue, "t", b"", max_attempts=5).job_id
        assert started.wait(10)
        own_broker.kill()
        killed.set()
        wait_for(lambda: lease_end, what="the handler to return")
        sleep_until(lease_end[0] - back_before_end_s)
        if back_before_end_s < 0:
            # Down until past the lease end: the last Ack attempt came then.
            assert outcomes.kinds(job_id)
        own_broker.start()
        wait_for(lambda: outcomes.kinds(job_id), timeout=10, what="the outcome")
        # The client's channel (round_robin) reconnected in the background
        # while the broker was down: its calls fail until its backoff ends.
        wait_for(lambda: _reaches(client, queue, job_id), timeout=10,
                 what="the client to reach the restarted broker")
        if back_before_end_s < 0:
            wait_for(lambda: len(outcomes.kinds(job_id)) >= 2, timeout=20,
                     what="the outcome of attempt 2")
        wait_state(client, queue, job_id, JobState.COMPLETED, timeout=20)
    return job_id, outcomes, lease_end[0], reported_at, client


def test_ack_is_sent_again_until_the_lease_ends(own_broker, queue):
    # The broker listens again 0.8 s before the lease ends: later than the
    # old rule ("stop when the next backoff would pass the lease end") gave
    # up, in time for the attempts kept up to the lease end.
    job_id, outcomes, _, _, client = _ack_across_outage(own_broker, queue, 0.8)
    job = client.get_job(queue, job_id)
    client.close()
    assert outcomes.kinds(job_id) == [("ack_ok", 1, None)]
    assert job.attempts == 1 and job.result_json() == "attempt 1"


def test_ack_unanswered_when_the_lease_ends_is_unknown(own_broker, queue):
    job_id, outcomes, lease_end, reported_at, client = _ack_across_outage(
        own_broker, queue, -1.0)
    job = client.get_job(queue, job_id)
    client.close()
    assert outcomes.kinds(job_id) == [("ack_unknown", 1, None), ("ack_ok", 2, None)]
    first = [o for o in outcomes.items if o.job.attempt == 1][0]
    assert first.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    # Given up only once the lease had ended (not a backoff earlier).
    assert reported_at[0] >= lease_end - 0.05, (reported_at[0], lease_end)
    assert job.attempts == 2 and job.result_json() == "attempt 2"
