"""The lease as the Worker's handler sees it (docs/clients.md, Worker),
against the real broker and Redis, for both Workers (threaded and asyncio):

- the lease length is the one the broker granted (ClaimedJob.lease_ms,
  ``job.lease_ms``), and renewals follow it: a handler running 2.5 leases
  completes on its first attempt;
- a renewal refused (the lease is lost) sets ``job.lease_lost`` and
  ``job.lease_lost_event`` at once, and the final Ack is still sent (and its
  refusal reported).
"""
import asyncio
import threading
import time

import grpc
import pytest

from jobwire import JobState, JobwireError, Worker, aio
from jobwire.v1 import admin_pb2, admin_pb2_grpc
from conftest import Broker, running, wait_for
from test_worker import Outcomes, wait_state

WORKERS = ["threaded", "asyncio"]


def run_worker(kind, addr, register, body, patch=None, **options):
    """Runs a Worker of ``kind`` (handlers added by ``register(worker)``;
    when given, ``patch(worker)`` replaces some of its calls once they
    exist) while ``body()`` runs (in a thread for the asyncio Worker);
    returns what ``body`` returns."""
    if kind == "threaded":
        w = Worker(addr, **options)
        register(w)
        if patch:
            patch(w)
        with running(w):
            return body()

    async def main():
        w = aio.Worker(addr, **options)
        register(w)
        task = asyncio.create_task(w.run(install_signal_handlers=False))
        if patch:
            while not hasattr(w, "_acks"):  # made in run()
                await asyncio.sleep(0)
            patch(w)
        try:
            return await asyncio.to_thread(body)
        finally:
            await w.stop()
            await task
    return asyncio.run(main())


@pytest.fixture
def one_second_lease_broker(redis_url, tmp_path):
    """A broker whose default lease is 1 s (the least it allows)."""
    b = Broker(redis_url, tmp_path, "--backoff_base_ms=100", "--default_lease_ms=1000")
    b.start()
    yield b
    b.stop()


@pytest.mark.parametrize("kind", WORKERS)
@pytest.mark.parametrize("worker_lease_ms,granted_ms", [(None, 1000), (1500, 1500)])
def test_lease_length_is_the_one_the_broker_granted(one_second_lease_broker, queue, kind,
                                                    worker_lease_ms, granted_ms):
    # With the broker's 1 s default, guessing the lease from
    # lease_expires_at_ms - now gives a little under 1 s, which the old rule
    # took for implausible (30 s, renewal after 10 s): the lease was lost.
    broker = one_second_lease_broker
    outcomes = Outcomes()
    seen = []

    def register(w):
        def handle(job):
            seen.append(job.lease_ms)
            time.sleep(2.5 * granted_ms / 1000.0)  # 2.5 leases: only renewals keep it
            return "done"
        w.register("long", handle)

    from jobwire import Client
    client = Client(broker.addr, timeout=5)

    def body():
        job_id = client.enqueue(queue, "long", b"", max_attempts=3).job_id
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id

    job_id = run_worker(kind, broker.addr, register, body, queues=queue, lease_ms=worker_lease_ms,
                        on_outcome=outcomes)
    job = wait_state(client, queue, job_id, JobState.COMPLETED)
    client.close()
    assert seen == [granted_ms]
    assert outcomes.kinds(job_id) == [("ack_ok", 1, None)]
    assert job.attempts == 1 and job.result_json() == "done"


def delete_job(addr, queue, job_id):
    """AdminService.DeleteJob (proto/jobwire/v1/admin.proto)."""
    with grpc.insecure_channel(addr) as channel:
        admin_pb2_grpc.AdminServiceStub(channel).DeleteJob(
            admin_pb2.DeleteJobRequest(queue=queue, job_id=job_id), timeout=5)


@pytest.mark.parametrize("kind", WORKERS)
def test_lost_lease_is_signalled_to_the_running_handler(broker, client, queue, kind):
    outcomes = Outcomes()
    started = threading.Event()
    seen = {}

    def register(w):
        if kind == "threaded":
            def handle(job):
                seen["before"] = (job.lease_lost, job.lease_lost_event.is_set())
                started.set()
                seen["signalled"] = job.lease_lost_event.wait(10)
                seen["at"] = time.monotonic()
                seen["after"] = job.lease_lost
                return "late"
        else:
            async def handle(job):
                seen["before"] = (job.lease_lost, job.lease_lost_event.is_set())
                started.set()
                try:
                    await asyncio.wait_for(job.lease_lost_event.wait(), 10)
                    seen["signalled"] = True
                except asyncio.TimeoutError:
                    seen["signalled"] = False
                seen["at"] = time.monotonic()
                seen["after"] = job.lease_lost
                return "late"
        w.register("long", handle)

    def body():
        job_id = client.enqueue(queue, "long", b"", max_attempts=3).job_id
        assert started.wait(10)
        time.sleep(0.6)  # a renewal or two went through
        deleted_at = time.monotonic()
        delete_job(broker.addr, queue, job_id)  # the next renewal gets NOT_FOUND
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id, deleted_at

    job_id, deleted_at = run_worker(kind, broker.addr, register, body, queues=queue, lease_ms=1500,
                                    on_outcome=outcomes)
    assert seen["before"] == (False, False)
    assert seen["signalled"] and seen["after"]
    # Renewals every 0.5 s: the handler hears of it within about one (a
    # margin for a loaded machine; without the signal it never hears).
    assert seen["at"] - deleted_at < 2.0, seen["at"] - deleted_at
    # The Ack is still sent; its refusal is the outcome.
    [outcome] = outcomes.items
    assert (outcome.kind, outcome.code, outcome.lease_lost) == (
        "ack_error", grpc.StatusCode.NOT_FOUND, True)
    with pytest.raises(JobwireError) as e:
        client.get_job(queue, job_id)
    assert e.value.code == grpc.StatusCode.NOT_FOUND
