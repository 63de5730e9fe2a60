"""The final Ack / Fail answered CANCELLED (docs/clients.md, Worker), against
the real broker and Redis, for both Workers (threaded and asyncio).

gRPC C++ core (the broker's, 1.51) ends a call that reaches a broker just as
it starts shutting down with CANCELLED, not UNAVAILABLE, and no handler sees
it (grpc/grpc#41785). Such a CANCELLED, which the client did not cause, is
taken as UNAVAILABLE is (``_lease_rules.unanswered``): the Ack / Fail is sent
again under the same rules, and its outcome is not ``*_error``. Here a client
interceptor (conftest.CancelledByBroker) answers the first Fail call, or the
first AckBatch call (the Workers' acks go as AckBatch calls with a broker
older than Work: conftest.older_broker), CANCELLED without sending it.

A CANCELLED the client made itself for a call it cut (``ClientCancelled``:
the ack coalescer's sending interrupted, its channel closed) stays final:
``ack_error``, not sent again.
"""
import asyncio

import grpc
import pytest

from jobwire import JobState, NonRetryableError
from jobwire._errors import ClientCancelled
from conftest import ACK_BATCH_METHOD, FAIL_METHOD, CancelledByBroker, wait_for
from test_lease_lost_final import coalescer
from test_worker import Outcomes, wait_state
from test_worker_lease import WORKERS, run_worker


@pytest.mark.parametrize("kind", WORKERS)
def test_a_fail_answered_cancelled_by_the_broker_is_sent_again(broker, client, queue, kind,
                                                               worker_interceptors):
    cut = worker_interceptors.add(CancelledByBroker(FAIL_METHOD, unary=True))
    outcomes = Outcomes()
    runs = []

    def register(w):
        def handle(job):
            runs.append(job.attempt)
            raise NonRetryableError("give up")  # DEAD at once: no second attempt
        w.register("t", handle)

    def body():
        job_id = client.enqueue(queue, "t", b"", max_attempts=3).job_id
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id

    job_id = run_worker(kind, broker.addr, register, body, queues=queue, concurrency=1,
                        lease_ms=5000, on_outcome=outcomes)
    [outcome] = outcomes.items
    assert (outcome.kind, outcome.fail_outcome, outcome.code, outcome.lease_lost) == (
        "fail_ok", "DEAD", None, False)
    assert cut.cut.is_set()
    assert cut.calls == 2  # the first answered CANCELLED (not sent), then sent again
    assert runs == [1]  # the handler ran once
    job = wait_state(client, queue, job_id, JobState.DEAD)
    assert job.attempts == 1
    assert [(e.attempt, e.error) for e in job.errors] == [(1, "NonRetryableError: give up")]


@pytest.mark.parametrize("kind", WORKERS)
def test_an_ack_batch_answered_cancelled_by_the_broker_is_sent_again(
        broker, client, queue, kind, worker_interceptors, older_broker):
    cut = worker_interceptors.add(CancelledByBroker(ACK_BATCH_METHOD, unary=True))
    outcomes = Outcomes()
    runs = []

    def register(w):
        def handle(job):
            runs.append(job.attempt)
            return {"n": job.json()["n"] + 1}
        w.register("t", handle)

    def body():
        job_id = client.enqueue(queue, "t", {"n": 1}, max_attempts=3).job_id
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id

    job_id = run_worker(kind, broker.addr, register, body, queues=queue, concurrency=1,
                        lease_ms=5000, on_outcome=outcomes)
    assert older_broker.work_calls >= 1  # Claim streams and AckBatch calls
    [outcome] = outcomes.items
    assert (outcome.kind, outcome.code, outcome.lease_lost) == ("ack_ok", None, False)
    assert cut.cut.is_set()
    assert cut.calls == 2  # the first answered CANCELLED (not sent), then sent again
    assert runs == [1]  # the handler ran once
    job = wait_state(client, queue, job_id, JobState.COMPLETED)
    assert job.attempts == 1 and job.result_json() == {"n": 2}


class AckSendCutByClient:
    """Stands in for the sending of a Worker's ack batches: the first one
    fails with the CANCELLED the client makes for a call it cut itself
    (ClientCancelled, as the ack coalescer's interrupted sending or its
    closed channel gives), the others reach the broker. Counts the calls."""

    def __init__(self):
        self.calls = 0

    def install(self, acks):
        real = acks._send
        if asyncio.iscoroutinefunction(real):
            async def send(requests, timeout):
                self.calls += 1
                if self.calls == 1:
                    raise ClientCancelled("AckBatch interrupted")
                return await real(requests, timeout)
        else:
            def send(requests, timeout):
                self.calls += 1
                if self.calls == 1:
                    raise ClientCancelled("AckBatch interrupted")
                return real(requests, timeout)
        acks._send = send


@pytest.mark.parametrize("kind", WORKERS)
def test_an_ack_cancelled_by_the_client_itself_is_final(broker, client, queue, kind):
    outcomes = Outcomes()
    acks = AckSendCutByClient()

    def register(w):
        w.register("t", lambda job: "done")

    def body():
        job_id = client.enqueue(queue, "t", b"", max_attempts=3).job_id
        wait_for(lambda: outcomes.kinds(job_id), timeout=15, what="the outcome")
        return job_id, client.get_job(queue, job_id)

    job_id, job = run_worker(kind, broker.addr, register, body,
                             lambda w: acks.install(coalescer(kind, w)), queues=queue,
                             concurrency=1, lease_ms=5000, on_outcome=outcomes)
    assert acks.calls == 1  # not sent again
    [outcome] = outcomes.items
    assert (outcome.kind, outcome.code, outcome.error) == (
        "ack_error", grpc.StatusCode.CANCELLED, "AckBatch interrupted")
    assert job.state == JobState.ACTIVE  # not acked: its lease runs out

