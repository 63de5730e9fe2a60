"""Job dependencies (docs/semantics.md, "Dependencies") through the Python
client against the real broker: a child enqueued with ``depends_on`` waits,
PENDING, until its parent completed; then a Worker's handler gets it with the
parent's result in ``job.dependency_results``. An id that names no job of the
queue is refused NOT_FOUND, reason DEPENDENCY_NOT_FOUND: raised by
``enqueue``, per job from ``enqueue_batch``; what is not a sequence of ids is
a TypeError before any call. In ``enqueue_batch``, ``depends_on_batch_index``
names parents among the batch's earlier jobs by index (a graph in one call)."""
import threading
import time

import grpc
import pytest

from jobwire import JobState, JobwireError, Reason, Worker
from conftest import running, wait_for

UNKNOWN_JOB_ID = "999999999999"


def test_the_child_runs_after_its_parent_with_the_parents_result(broker, client, queue):
    parent = client.enqueue(queue, "parent", {"n": 1}).job_id
    child = client.enqueue(queue, "child", depends_on=[parent]).job_id
    anyway = client.enqueue(queue, "child", depends_on=[parent],
                            run_after_failed_dependency=True).job_id
    waiting = client.get_job(queue, child)
    assert (waiting.state, waiting.depends_on, waiting.dependencies_left) == (
        JobState.PENDING, [parent], 1)
    assert (waiting.dependency_results, waiting.run_after_failed_dependency) == ({}, False)
    assert client.get_job(queue, anyway).run_after_failed_dependency is True

    lock = threading.Lock()
    runs = []  # (job id, its dependency_results), in the order the handlers started
    w = Worker(broker.addr, [queue], concurrency=4)

    @w.handler("parent")
    def run_parent(job):
        with lock:
            runs.append((job.id, dict(job.dependency_results)))
        time.sleep(0.2)  # free slots meanwhile: a child delivered early would start
        return {"sum": job.json()["n"] + 41}

    @w.handler("child")
    def run_child(job):
        with lock:
            runs.append((job.id, dict(job.dependency_results)))

    with running(w):
        wait_for(lambda: len(runs) == 3, timeout=15, what="three runs")
        for job_id in (parent, child, anyway):
            wait_for(lambda: client.get_job(queue, job_id).state == JobState.COMPLETED,
                     timeout=10, what="job %s completed" % job_id)
    result = b'{"sum":42}'
    assert runs[0] == (parent, {}), runs
    assert sorted(runs[1:]) == sorted([(child, {parent: result}), (anyway, {parent: result})])
    done = client.get_job(queue, child)
    assert (done.dependencies_left, done.dependency_results) == (0, {parent: result})


def test_an_unknown_parent_is_refused_not_found(client, queue):
    parent = client.enqueue(queue, "t").job_id
    with pytest.raises(JobwireError) as ei:
        client.enqueue(queue, "t", depends_on=[parent, UNKNOWN_JOB_ID])
    e = ei.value
    assert (e.code, e.reason) == (grpc.StatusCode.NOT_FOUND, Reason.DEPENDENCY_NOT_FOUND), e
    assert e.metadata.get("job_id") == UNKNOWN_JOB_ID, e.metadata

    refused, stored = client.enqueue_batch(queue, [
        {"type": "t", "depends_on": [UNKNOWN_JOB_ID]},             # inline
        {"type": "t", "options": {"depends_on": [parent]}},        # under options
    ])
    assert (refused.error.code, refused.error.reason) == (
        grpc.StatusCode.NOT_FOUND, Reason.DEPENDENCY_NOT_FOUND), refused
    assert stored.ok and client.get_job(queue, stored.job_id).depends_on == [parent]

    for bad in (parent, [parent, 7]):
        with pytest.raises(TypeError, match="depends_on"):
            client.enqueue(queue, "t", depends_on=bad)


def test_a_batch_stores_a_graph_by_index_and_the_join_gets_both_results(broker, client, queue):
    # Fan-out / fan-in in one enqueue_batch: a root, two children of index 0
    # (inline and under "options"), a join of indexes 1 and 2; then a child
    # naming a refused job of the batch (priority 5000) is refused too.
    results = client.enqueue_batch(queue, [
        {"type": "step", "payload": {"n": 0}},
        {"type": "step", "payload": {"n": 1}, "depends_on_batch_index": [0]},
        {"type": "step", "payload": {"n": 2}, "options": {"depends_on_batch_index": [0]}},
        {"type": "step", "payload": {"n": 3}, "depends_on_batch_index": [1, 2]},
        {"type": "step", "options": {"priority": 5000}},
        {"type": "step", "depends_on_batch_index": [4]},
    ])
    assert [r.ok for r in results] == [True, True, True, True, False, False], results
    root, left, right, join = (r.job_id for r in results[:4])
    assert client.get_job(queue, left).depends_on == [root]
    assert client.get_job(queue, right).depends_on == [root]
    waiting = client.get_job(queue, join)
    assert (waiting.state, waiting.depends_on) == (JobState.PENDING, [left, right])
    assert results[4].error.code == grpc.StatusCode.INVALID_ARGUMENT, results[4]
    orphan = results[5].error
    assert orphan.code == grpc.StatusCode.INVALID_ARGUMENT, orphan
    assert "jobs[5].depends_on_batch_index[0]" in orphan.message, orphan.message
    assert "names jobs[4], which was refused" in orphan.message, orphan.message

    lock = threading.Lock()
    runs = {}  # n -> the dependency_results its handler saw
    w = Worker(broker.addr, [queue], concurrency=4)

    @w.handler("step")
    def step(job):
        n = job.json()["n"]
        with lock:
            runs[n] = dict(job.dependency_results)
        return {"from": n}

    with running(w):
        wait_for(lambda: client.get_job(queue, join).state == JobState.COMPLETED,
                 timeout=15, what="the join completed")
    assert sorted(runs) == [0, 1, 2, 3], runs
    assert runs[0] == {}
    assert runs[1] == runs[2] == {root: b'{"from":0}'}
    assert runs[3] == {left: b'{"from":1}', right: b'{"from":2}'}, runs[3]


def test_depends_on_batch_index_is_for_batches_and_takes_ints(client, queue):
    with pytest.raises(JobwireError) as ei:
        client.enqueue(queue, "t", depends_on_batch_index=[0])
    assert ei.value.code == grpc.StatusCode.INVALID_ARGUMENT, ei.value
    assert "depends_on_batch_index" in ei.value.message, ei.value.message
    for bad in (0, "0", [0, "1"], [True], [2**31]):
        with pytest.raises(TypeError, match="depends_on_batch_index"):
            client.enqueue_batch(queue, [{"type": "t"}, {"type": "t", "depends_on_batch_index": bad}])


def test_a_parent_of_another_queue_is_named_queue_slash_id(broker, client, queue):
    """A ref "<queue>/<id>" names a parent of another queue (docs/semantics.md,
    "Parents in other queues"): the child runs after it, with its result keyed
    by the ref; a ref that names no job is refused NOT_FOUND, naming it."""
    upstream = queue + ".up"
    parent = client.enqueue(upstream, "parent").job_id
    ref = "%s/%s" % (upstream, parent)
    child = client.enqueue(queue, "child", depends_on=[ref]).job_id
    assert client.get_job(queue, child).dependencies_left == 1

    results = {}
    w = Worker(broker.addr, [upstream, queue], concurrency=2)

    @w.handler("parent")
    def run_parent(job):
        return b"paid"

    @w.handler("child")
    def run_child(job):
        results.update(job.dependency_results)

    with running(w):
        wait_for(lambda: client.get_job(queue, child).state == JobState.COMPLETED,
                 timeout=15, what="the child completed")
    assert results == {ref: b"paid"}

    missing = "%s/%s" % (upstream, UNKNOWN_JOB_ID)
    with pytest.raises(JobwireError) as ei:
        client.enqueue(queue, "t", depends_on=[missing])
    assert (ei.value.code, ei.value.reason) == (
        grpc.StatusCode.NOT_FOUND, Reason.DEPENDENCY_NOT_FOUND), ei.value
    assert ei.value.metadata.get("job_id") == missing, ei.value.metadata
