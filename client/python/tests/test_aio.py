"""asyncio API (jobwire.aio) against the real broker."""
import asyncio
import sys
import time

import grpc
import pytest

from jobwire import JobState, JobwireError
from jobwire import aio
from conftest import free_port


async def wait_state(client, queue, job_id, state, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        job = await client.get_job(queue, job_id)
        if job.state == state:
            return job
        assert time.monotonic() < deadline, "job %s not %s: %s" % (job_id, state.name, job)
        await asyncio.sleep(0.05)


def test_aio_client_round_trip_and_errors(broker, queue):
    async def main():
        async with aio.Client(broker.addr, timeout=5) as c:
            r = await c.enqueue(queue, "t", {"x": 1}, priority=3, max_attempts=2)
            job = await c.get_job(queue, r.job_id)
            assert job.json() == {"x": 1} and job.priority == 3 and job.max_attempts == 2
            res = await c.enqueue_batch(queue, [{"type": "a"}, {"type": ""}])
            assert res[0].ok and res[1].error.code == grpc.StatusCode.INVALID_ARGUMENT
            assert await c.cancel(queue, r.job_id) is False  # PENDING: DEAD at once
            assert (await c.get_job(queue, r.job_id)).state == JobState.DEAD
            with pytest.raises(JobwireError) as ei:
                await c.enqueue(queue, "t", b"", priority=5000)
            assert ei.value.code == grpc.StatusCode.INVALID_ARGUMENT
            assert ei.value.message.startswith("priority")
        async with aio.Client("127.0.0.1:%d" % free_port(), timeout=1) as dead:
            with pytest.raises(JobwireError) as ei:
                await dead.get_job(queue, "1")
            assert ei.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    asyncio.run(main())


def test_aio_worker_async_and_sync_handlers_retry_and_stop(broker, queue):
    async def main():
        outcomes = []
        w = aio.Worker(broker.addr, queue, concurrency=2, lease_ms=1000,
                       on_outcome=outcomes.append)

        @w.handler("async")
        async def handle_async(job):
            if job.attempt == 1 and job.json().get("fail_first"):
                raise ValueError("first")
            await asyncio.sleep(1.5)  # longer than the lease: renewed
            return {"n": job.json()["n"]}

        @w.handler("sync")
        def handle_sync(job):
            return job.payload.upper()

        async with aio.Client(broker.addr) as c:
            # A job of a type without handler, first in the queue: the Claim
            # names only "async" and "sync", so it is never delivered.
            u = await c.enqueue(queue, "nope", b"")
            run = asyncio.create_task(w.run(install_signal_handlers=False))
            a = await c.enqueue(queue, "async", {"n": 1, "fail_first": True}, backoff_base_ms=100)
            s = await c.enqueue(queue, "sync", b"abc")
            ja = await wait_state(c, queue, a.job_id, JobState.COMPLETED)
            js = await wait_state(c, queue, s.job_id, JobState.COMPLETED)
            ju = await c.get_job(queue, u.job_id)
            await w.stop()
            await asyncio.wait_for(run, 5)
        assert ja.attempts == 2 and ja.result_json() == {"n": 1}
        assert js.result == b"ABC"
        assert ju.state == JobState.PENDING and ju.attempts == 0 and ju.error == ""
        assert [o for o in outcomes if o.job.id == u.job_id] == []
        kinds = sorted((o.kind, o.job.attempt) for o in outcomes if o.job.id == a.job_id)
        assert kinds == [("ack_ok", 2), ("fail_ok", 1)]
    asyncio.run(main())


def test_aio_run_refuses_no_handler_and_more_than_64_types(broker, queue):
    async def main():
        w = aio.Worker(broker.addr, queue)
        with pytest.raises(ValueError, match=r"^Worker.run\(\): no handler registered"):
            await w.run(install_signal_handlers=False)
        for i in range(65):
            w.register("t%d" % i, lambda job: None)
        with pytest.raises(ValueError, match=r"65 job types have handlers; a Worker takes at most 64"):
            await w.run(install_signal_handlers=False)
    asyncio.run(main())


def test_aio_stop_before_run_makes_run_return(broker, queue):
    async def main():
        seen = []
        w = aio.Worker(broker.addr, queue)
        w.register("t", seen.append)
        await w.stop()  # before run(): not ignored
        async with aio.Client(broker.addr) as c:
            r = await c.enqueue(queue, "t", b"")
            t0 = time.monotonic()
            await asyncio.wait_for(w.run(install_signal_handlers=False), 5)
            took = time.monotonic() - t0
            job = await c.get_job(queue, r.job_id)
        assert took < 2
        assert seen == [] and job.state == JobState.PENDING and job.attempts == 0
    asyncio.run(main())


def test_aio_worker_context_manager_and_handler_exit(broker, queue):
    """``async with`` stops the worker; a handler's SystemExit stops it and
    run() raises it, the job not failed."""
    async def main():
        w = aio.Worker(broker.addr, queue, lease_ms=3000)
        w.register("exit", lambda job: sys.exit(4))
        async with aio.Client(broker.addr) as c:
            r = await c.enqueue(queue, "exit", b"", max_attempts=3)
            # Awaited directly: a task ending in SystemExit would stop the loop
            # itself (asyncio's rule for SystemExit / KeyboardInterrupt).
            with pytest.raises(SystemExit) as ei:
                await w.run(install_signal_handlers=False)
            assert ei.value.code == 4
            job = await c.get_job(queue, r.job_id)
            assert job.state == JobState.ACTIVE and job.error == "" and job.attempts == 1

            async with aio.Worker(broker.addr, queue) as w2:
                w2.register("exit", lambda job: job.attempt)
                run = asyncio.create_task(w2.run(install_signal_handlers=False))
                done = await wait_state(c, queue, r.job_id, JobState.COMPLETED, timeout=15)
            await asyncio.wait_for(run, 5)  # the block's end stopped it
        assert done.result_json() == 2 and "SystemExit" not in done.error
    asyncio.run(main())
