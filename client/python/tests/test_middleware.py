"""Handler middleware (``Worker.use``, docs/clients.md, Worker) against the
real broker and Redis, for both Workers (threaded, asyncio with an ``async
def`` handler, asyncio with a plain-function handler run in a thread):

- two middlewares run around the handler, the first registered outermost;
- what the middleware returns is the stored result (a changed result, or an
  error turned into a result); what it raises fails the job with that error;
- ``use()`` after ``run()`` is refused (RuntimeError), as is what is not
  callable or made for the other Worker (TypeError).
"""
import asyncio
import threading

import pytest

from jobwire import JobState, Worker, aio
from conftest import running, wait_for
from test_worker import Outcomes, wait_state
from test_worker_lease import run_worker

KINDS = ["threaded", "asyncio", "asyncio-plain-handler"]


def make_handler(kind, body):
    """A handler calling ``body(job)``: an ``async def`` for the asyncio
    Worker, else a plain function."""
    if kind == "asyncio":
        async def handle(job):
            return body(job)
    else:
        def handle(job):
            return body(job)
    return handle


def run(kind, broker, queue, handler_body, middlewares, body, **options):
    """Runs a Worker of ``kind`` whose handler of type "t" runs
    ``handler_body(job)``, with ``middlewares`` (made for its kind) used in
    order, while ``body()`` runs."""
    def register(w):
        for mw in middlewares:
            w.use(mw)
        w.register("t", make_handler(kind, handler_body))
    return run_worker(kind.split("-")[0], broker.addr, register, body, queues=queue, **options)


def recording_middlewares(kind, calls):
    """Two middlewares that record their entry and exit into ``calls``."""
    if kind == "threaded":
        def outer(job, call_next):
            calls.append("outer-in")
            value = call_next(job)
            calls.append("outer-out")
            return value

        def inner(job, call_next):
            calls.append("inner-in %s" % job.type)
            value = call_next(job)
            calls.append("inner-out")
            return value
        return [outer, inner]

    async def aouter(job, call_next):
        calls.append("outer-in")
        value = await call_next(job)
        calls.append("outer-out")
        return value

    async def ainner(job, call_next):
        calls.append("inner-in %s" % job.type)
        value = await call_next(job)
        calls.append("inner-out")
        return value
    return [aouter, ainner]


@pytest.mark.parametrize("kind", KINDS)
def test_middlewares_run_around_the_handler_first_outermost(broker, client, queue, kind):
    calls = []

    def handle(job):
        calls.append("handler")
        return {"n": job.json()["n"]}

    job_id = client.enqueue(queue, "t", {"n": 1}).job_id
    done = run(kind, broker, queue, handle, recording_middlewares(kind, calls),
               lambda: client.wait(queue, job_id, timeout=10))
    assert calls == ["outer-in", "inner-in t", "handler", "inner-out", "outer-out"]
    assert done.result_json() == {"n": 1}


def result_changing_middleware(kind):
    """Wraps the handler's result as {"wrapped": result}; a handler error
    becomes the result {"recovered": "<error>"}."""
    if kind == "threaded":
        def mw(job, call_next):
            try:
                return {"wrapped": call_next(job)}
            except ValueError as e:
                return {"recovered": str(e)}
        return mw

    async def amw(job, call_next):
        try:
            return {"wrapped": await call_next(job)}
        except ValueError as e:
            return {"recovered": str(e)}
    return amw


@pytest.mark.parametrize("kind", KINDS)
def test_middleware_changes_the_result(broker, client, queue, kind):
    def handle(job):
        if job.json().get("fail"):
            raise ValueError("handler failed")
        return "plain"

    good = client.enqueue(queue, "t", {}).job_id
    bad = client.enqueue(queue, "t", {"fail": True}, max_attempts=1).job_id

    def body():
        return [client.wait(queue, j, timeout=10) for j in (good, bad)]

    done = run(kind, broker, queue, handle, [result_changing_middleware(kind)], body)
    assert [j.result_json() for j in done] == [{"wrapped": "plain"},
                                              {"recovered": "handler failed"}]
    assert [j.attempts for j in done] == [1, 1]


@pytest.mark.parametrize("kind", KINDS)
def test_middleware_raising_fails_the_job_with_its_error(broker, client, queue, kind):
    ran = []
    outcomes = Outcomes()
    if kind == "threaded":
        def refuse(job, call_next):
            raise RuntimeError("middleware says no")
    else:
        async def refuse(job, call_next):
            raise RuntimeError("middleware says no")

    job_id = client.enqueue(queue, "t", {}, max_attempts=1).job_id

    def body():
        return wait_state(client, queue, job_id, JobState.DEAD)

    dead = run(kind, broker, queue, ran.append, [refuse], body, on_outcome=outcomes)
    assert dead.error == "RuntimeError: middleware says no"
    assert ran == []  # the handler never ran
    wait_for(lambda: outcomes.kinds(job_id), what="the outcome")
    assert outcomes.kinds(job_id) == [("fail_ok", 1, "DEAD")]


def test_use_after_run_is_refused_threaded(broker, queue):
    w = Worker(broker.addr, queue)
    w.register("t", lambda job: None)
    w.use(lambda job, call_next: call_next(job))
    with running(w):
        wait_for(lambda: w._run_thread is not None, what="run() started")
        with pytest.raises(RuntimeError, match="before run"):
            w.use(lambda job, call_next: call_next(job))
    assert len(w._middlewares) == 1


def test_use_after_run_is_refused_asyncio(broker, queue):
    async def main():
        w = aio.Worker(broker.addr, queue)
        w.register("t", lambda job: None)

        async def mw(job, call_next):
            return await call_next(job)
        w.use(mw)
        task = asyncio.create_task(w.run(install_signal_handlers=False))
        await asyncio.sleep(0.05)
        try:
            with pytest.raises(RuntimeError, match="before run"):
                w.use(mw)
        finally:
            await w.stop()
            await task
        return len(w._middlewares)
    assert asyncio.run(main()) == 1


def test_use_refuses_what_is_not_a_middleware_for_that_worker():
    from jobwire.tracing import async_tracing_middleware, tracing_middleware

    async def amw(job, call_next):
        return await call_next(job)

    w = Worker("127.0.0.1:1", "q")
    aw = aio.Worker("127.0.0.1:1", "q")
    try:
        for bad in (None, "mw"):
            with pytest.raises(TypeError):
                w.use(bad)
            with pytest.raises(TypeError):
                aw.use(bad)
        with pytest.raises(TypeError, match="jobwire.aio.Worker"):
            w.use(amw)
        with pytest.raises(TypeError, match="jobwire.aio.Worker"):
            w.use(async_tracing_middleware())
        with pytest.raises(TypeError, match="async_tracing_middleware"):
            aw.use(tracing_middleware())
        assert (w._middlewares, aw._middlewares) == ([], [])
    finally:
        w.stop()


def test_middleware_runs_in_the_handler_thread(broker, client, queue):
    threads = []

    def mw(job, call_next):
        threads.append(threading.current_thread())
        return call_next(job)

    def handle(job):
        threads.append(threading.current_thread())
        return None

    job_id = client.enqueue(queue, "t", {}).job_id
    run("threaded", broker, queue, handle, [mw], lambda: client.wait(queue, job_id, timeout=10))
    assert len(threads) == 2 and threads[0] is threads[1]
    assert threads[0].name.startswith("jobwire-handler-")
