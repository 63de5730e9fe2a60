"""Job headers (broker.proto: EnqueueRequest.headers, Job.headers) against the
real broker and Redis:

- ``enqueue(..., headers=...)`` (sync and asyncio clients, and per entry of
  ``enqueue_batch``, inline or under ``options``) stores them with the job;
  ``get_job`` / ``wait`` / a listed job show them as a plain dict, and the
  handler of either Worker gets them as ``job.headers`` (empty when none);
- headers the broker refuses (a bad key, more than 64) are INVALID_ARGUMENT
  with field ``headers`` and nothing is stored;
- what is not a mapping of str to str is a TypeError before any call.
"""
import asyncio

import grpc
import pytest

from jobwire import JobState, JobwireError, Reason, aio
from jobwire._types import Job
from jobwire.v1 import admin_pb2, admin_pb2_grpc
from jobwire.v1 import broker_pb2 as pb
from conftest import wait_for
from test_worker import Outcomes
from test_worker_lease import WORKERS, run_worker

HEADERS = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "tenant": "acme"}


def stored_jobs(addr, queue):
    """(counts of the queue's stats, ids of its jobs in every state), read
    through the admin service."""
    with grpc.insecure_channel(addr) as ch:
        admin = admin_pb2_grpc.AdminServiceStub(ch)
        st = admin.GetQueueStats(admin_pb2.GetQueueStatsRequest(queue=queue), timeout=5).stats
        ids = []
        for state in (pb.JOB_STATE_PENDING, pb.JOB_STATE_ACTIVE, pb.JOB_STATE_COMPLETED,
                      pb.JOB_STATE_DEAD):
            resp = admin.ListJobs(admin_pb2.ListJobsRequest(queue=queue, state=state,
                                                            page_size=1000), timeout=5)
            ids += [j.id for j in resp.jobs]
    counts = (st.pending_due, st.pending_scheduled, st.active, st.completed, st.dead)
    return counts, ids


def listed_pending(addr, queue):
    """The queue's PENDING jobs as ``Job`` values (ListJobs)."""
    with grpc.insecure_channel(addr) as ch:
        resp = admin_pb2_grpc.AdminServiceStub(ch).ListJobs(
            admin_pb2.ListJobsRequest(queue=queue, state=pb.JOB_STATE_PENDING, page_size=1000),
            timeout=5)
    return {j.id: Job.from_proto(j) for j in resp.jobs}


# -- the handler, get_job, wait, list ----------------------------------------
@pytest.mark.parametrize("kind", WORKERS + ["asyncio-plain-handler"])
def test_handler_sees_the_headers(broker, client, queue, kind):
    seen = {}
    outcomes = Outcomes()

    def record(job):
        seen[job.id] = (type(job.headers), dict(job.headers))
        return "ok"

    def register(w):
        if kind == "asyncio":
            async def handle(job):
                return record(job)
        else:  # a thread: jobwire.Worker, or a plain function in jobwire.aio.Worker
            def handle(job):
                return record(job)
        w.register("t", handle)

    with_id = client.enqueue(queue, "t", b"", headers=HEADERS).job_id
    none_id = client.enqueue(queue, "t", b"").job_id
    before = client.get_job(queue, with_id)
    listed = listed_pending(broker.addr, queue)

    def body():
        wait_for(lambda: len(outcomes.kinds(with_id)) + len(outcomes.kinds(none_id)) == 2,
                 timeout=15, what="both outcomes")
        return client.wait(queue, with_id, timeout=10)

    done = run_worker(kind.split("-")[0], broker.addr, register, body, queues=queue,
                      on_outcome=outcomes)
    assert seen == {with_id: (dict, HEADERS), none_id: (dict, {})}
    assert outcomes.kinds(with_id) == [("ack_ok", 1, None)]
    assert (before.state, before.headers) == (JobState.PENDING, HEADERS)
    assert type(before.headers) is dict
    assert (listed[with_id].headers, listed[none_id].headers) == (HEADERS, {})
    assert (done.state, done.headers) == (JobState.COMPLETED, HEADERS)
    assert client.get_job(queue, none_id).headers == {}


def test_aio_client_enqueues_headers(broker, queue):
    async def main():
        async with aio.Client(broker.addr, timeout=5.0) as c:
            job_id = (await c.enqueue(queue, "t", b"", headers=HEADERS)).job_id
            [batched] = await c.enqueue_batch(queue, [{"type": "t", "headers": {"k": "v"}}])
            return await c.get_job(queue, job_id), await c.get_job(queue, batched.job_id)

    job, batched = asyncio.run(main())
    assert (job.headers, batched.headers) == (HEADERS, {"k": "v"})
    assert type(job.headers) is dict


def test_enqueue_batch_headers_per_entry(broker, client, queue):
    results = client.enqueue_batch(queue, [
        {"type": "t", "headers": HEADERS},                             # inline
        {"type": "t", "options": {"headers": {"tenant": "globex"}}},   # under options
        {"type": "t"},                                                 # none
        {"type": "t", "headers": {"Bad Key": "x"}},                    # refused
        {"type": "t", "options": {"headers": {"x-request-id": "r-1"}, "priority": 3}},
    ])
    assert [r.ok for r in results] == [True, True, True, False, True]
    got = [client.get_job(queue, r.job_id).headers for r in results if r.ok]
    assert got == [HEADERS, {"tenant": "globex"}, {}, {"x-request-id": "r-1"}]
    e = results[3].error
    assert (e.code, e.reason) == (grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_FIELD), e
    assert "jobs[3].headers" in e.message, e.message
    counts, ids = stored_jobs(broker.addr, queue)
    assert sorted(ids) == sorted(r.job_id for r in results if r.ok)  # the refused one: nothing
    assert sum(counts) == 4


# -- refused by the broker ----------------------------------------------------
def _too_many():
    return {"h%02d" % i: "v" for i in range(65)}


@pytest.mark.parametrize("api", ["sync", "asyncio"])
@pytest.mark.parametrize("name,headers,in_message", [
    ("bad-key", {"tenant": "acme", "Bad Key": "x"}, "Bad Key"),
    ("65-headers", _too_many(), "64"),
])
def test_refused_headers_are_invalid_argument_and_store_nothing(broker, client, queue, api,
                                                                name, headers, in_message):
    if api == "sync":
        with pytest.raises(JobwireError) as ei:
            client.enqueue(queue, "t", b"", headers=headers)
    else:
        async def main():
            async with aio.Client(broker.addr, timeout=5.0) as c:
                await c.enqueue(queue, "t", b"", headers=headers)
        with pytest.raises(JobwireError) as ei:
            asyncio.run(main())
    e = ei.value
    assert e.code == grpc.StatusCode.INVALID_ARGUMENT, e
    assert (e.reason, e.field) == (Reason.INVALID_FIELD, "headers"), e
    assert in_message in e.message, e.message
    assert stored_jobs(broker.addr, queue) == ((0, 0, 0, 0, 0), [])
    # Just inside the limits the same enqueue is stored (another queue, so
    # the one above stays empty).
    ok_headers = dict(list(headers.items())[:64]) if name == "65-headers" else {"tenant": "acme"}
    ok_id = client.enqueue(queue + "-ok", "t", b"", headers=ok_headers).job_id
    assert client.get_job(queue + "-ok", ok_id).headers == ok_headers


# -- type checks, before any call --------------------------------------------
@pytest.mark.parametrize("headers", [
    {"tenant": 1},
    {"tenant": b"acme"},
    {"tenant": None},
    {1: "x"},
    {b"tenant": "acme"},
    [("tenant", "acme")],
    "tenant=acme",
])
def test_headers_that_are_not_str_to_str_raise_type_error(headers):
    from jobwire import Client
    c = Client("127.0.0.1:1", timeout=1.0)  # nothing listens: no call may be made
    try:
        with pytest.raises(TypeError):
            c.enqueue("q", "t", b"", headers=headers)
        with pytest.raises(TypeError):
            c.enqueue_batch("q", [{"type": "t", "headers": headers}])
        with pytest.raises(TypeError):
            c.enqueue_batch("q", [{"type": "t", "options": {"headers": headers}}])
    finally:
        c.close()


def test_headers_are_copied_into_the_request():
    from jobwire._requests import build_enqueue_request
    h = dict(HEADERS)
    req = build_enqueue_request("q", "t", b"", headers=h)
    h["tenant"] = "changed"
    assert dict(req.headers) == HEADERS
    assert dict(build_enqueue_request("q", "t", b"", headers={}).headers) == {}
    assert dict(build_enqueue_request("q", "t", b"").headers) == {}
