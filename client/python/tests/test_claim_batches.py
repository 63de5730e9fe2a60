"""Claim stream messages carrying several jobs (ClaimResponse.jobs): the raw
stream batches jobs already pending and never exceeds max_in_flight, and the
Workers (sync and asyncio) run every job of every message exactly once."""
import asyncio
import collections
import threading
import time

import grpc

from jobwire import JobState, Worker, aio
from jobwire.v1 import broker_pb2, broker_pb2_grpc
from conftest import running, wait_for

N_JOBS = 50


def enqueue_pending(client, queue, n=N_JOBS):
    """n jobs, enqueued in one EnqueueBatch call before any worker runs."""
    results = client.enqueue_batch(queue, [{"type": "batched", "payload": {"n": i}}
                                           for i in range(n)])
    assert all(r.error is None and not r.duplicate for r in results), results
    ids = [r.job_id for r in results]
    assert len(set(ids)) == n
    return ids


class _TapCall:
    """A Claim (or Work) call that records the number of jobs of each
    message read."""

    def __init__(self, call, sizes):
        self._call = call
        self._sizes = sizes

    def __iter__(self):
        return self

    def __next__(self):
        message = next(self._call)
        self._sizes.append(len(message.jobs))
        return message

    def __aiter__(self):
        return self._aiter()

    async def _aiter(self):
        async for message in self._call:
            self._sizes.append(len(message.jobs))
            yield message

    def __getattr__(self, name):  # cancel() etc.
        return getattr(self._call, name)


class _TapStub:
    """Wraps a worker's stub: every call unchanged, Claim and Work messages
    counted."""

    def __init__(self, stub):
        self._stub = stub
        self.sizes = []

    def Claim(self, request, **kwargs):
        return _TapCall(self._stub.Claim(request, **kwargs), self.sizes)

    def Work(self, *args, **kwargs):
        return _TapCall(self._stub.Work(*args, **kwargs), self.sizes)

    def __getattr__(self, name):
        return getattr(self._stub, name)


def check_all_completed_once(client, queue, ids, runs, outcomes, sizes):
    # The premise: the broker did send several jobs in one message.
    assert sum(sizes) == N_JOBS and max(sizes) > 1, sizes
    assert sorted(runs) == sorted(ids), "every job run exactly once"
    assert [c for c in collections.Counter(runs).values() if c != 1] == []
    assert sorted(o.job.id for o in outcomes) == sorted(ids)
    assert {o.kind for o in outcomes} == {"ack_ok"}
    for job_id in ids:
        job = client.get_job(queue, job_id)
        assert job.state == JobState.COMPLETED and job.attempts == 1, (job_id, job.state)
        assert job.result_json() == {"n": job.json()["n"]}


def test_worker_runs_every_job_of_a_batched_message_once(broker, client, queue):
    ids = enqueue_pending(client, queue)
    lock = threading.Lock()
    runs, outcomes = [], []
    # All 50 handlers must be running at the same time to pass the barrier:
    # the 50 jobs were delivered and started together, not one after another.
    barrier = threading.Barrier(N_JOBS, timeout=20)

    def on_outcome(o):
        with lock:
            outcomes.append(o)

    w = Worker(broker.addr, [queue], concurrency=N_JOBS, lease_ms=30_000,
               worker_id="pytest-batched", on_outcome=on_outcome)
    tap = _TapStub(w._stub)
    w._stub = tap

    @w.handler("batched")
    def handle(job):
        with lock:
            runs.append(job.id)
        barrier.wait()
        return {"n": job.json()["n"]}

    with running(w):
        wait_for(lambda: len(outcomes) >= N_JOBS, timeout=30, what="50 outcomes")
        time.sleep(0.3)  # no job runs twice, no extra outcome
    check_all_completed_once(client, queue, ids, runs, outcomes, tap.sizes)


def test_aio_worker_runs_every_job_of_a_batched_message_once(broker, client, queue):
    ids = enqueue_pending(client, queue)
    runs, outcomes = [], []

    async def main():
        all_started = asyncio.Event()
        w = aio.Worker(broker.addr, [queue], concurrency=N_JOBS, lease_ms=30_000,
                       worker_id="pytest-aio-batched", on_outcome=outcomes.append)
        tap = None

        @w.handler("batched")
        async def handle(job):
            runs.append(job.id)
            if len(runs) == N_JOBS:
                all_started.set()
            # As the sync test's barrier: all 50 run at the same time.
            await asyncio.wait_for(all_started.wait(), 20)
            return {"n": job.json()["n"]}

        # The stub is made in run(): wrap it as soon as it exists.
        task = asyncio.create_task(w.run(install_signal_handlers=False))
        while not hasattr(w, "_stub"):
            await asyncio.sleep(0)
        tap = _TapStub(w._stub)
        w._stub = tap
        deadline = time.monotonic() + 30
        while len(outcomes) < N_JOBS and time.monotonic() < deadline and not task.done():
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # no job runs twice, no extra outcome
        await w.stop()
        await task
        return tap.sizes

    sizes = asyncio.run(main())
    assert len(outcomes) == N_JOBS, "timed out: %d outcomes" % len(outcomes)
    check_all_completed_once(client, queue, ids, runs, outcomes, sizes)


def test_raw_claim_stream_batches_pending_jobs_up_to_max_in_flight(broker, client, queue):
    ids = enqueue_pending(client, queue)
    messages = []  # [[ClaimedJob]] as read
    cond = threading.Condition()
    ended = []

    with grpc.insecure_channel(broker.addr) as ch:
        stub = broker_pb2_grpc.BrokerServiceStub(ch)
        call = stub.Claim(broker_pb2.ClaimRequest(queues=[queue], max_in_flight=20,
                                                  lease_ms=60_000, worker_id="pytest-raw-batch"))

        def read():
            try:
                for message in call:
                    with cond:
                        messages.append(list(message.jobs))
                        cond.notify_all()
            except grpc.RpcError as e:
                ended.append(e.code())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()

        def received():
            return [c for m in messages for c in m]

        try:
            with cond:
                assert cond.wait_for(lambda: len(received()) >= 20, timeout=10), \
                    "only %d jobs arrived" % len(received())
            time.sleep(0.5)  # anything beyond max_in_flight would arrive now
            with cond:
                first = list(messages[0])
                got = received()
            assert len(first) > 1, "the first message carries a single job"
            assert all(len(m) >= 1 for m in messages), "an empty message"
            assert len(got) == 20, "%d jobs before any ack (max_in_flight 20)" % len(got)
            got_ids = [c.job.id for c in got]
            assert len(set(got_ids)) == 20 and set(got_ids) <= set(ids)
            # Claim order is enqueue order (one priority, all due).
            assert got_ids == ids[:20]
            for c in got:
                assert c.job.state == broker_pb2.JOB_STATE_ACTIVE and c.job.attempts == 1 and c.lease_token

            # Acking one frees one slot: exactly one more job arrives.
            stub.Ack(broker_pb2.AckRequest(queue=queue, job_id=got[0].job.id,
                                           lease_token=got[0].lease_token), timeout=10)
            with cond:
                assert cond.wait_for(lambda: len(received()) >= 21, timeout=10)
            time.sleep(0.3)
            with cond:
                more = received()[20:]
            assert [c.job.id for c in more] == [ids[20]]
        finally:
            call.cancel()
            reader.join(timeout=10)
    assert ended in ([], [grpc.StatusCode.CANCELLED]), ended
