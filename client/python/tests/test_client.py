"""Producer API against the real broker."""
import socket
import time

import grpc
import pytest

from jobwire import Client, JobState, JobwireError
from conftest import free_port


def now_ms() -> int:
    return int(time.time() * 1000)


def test_enqueue_get_job_round_trip_with_options(client, queue):
    before = now_ms()
    r = client.enqueue(queue, "resize", b"\x00\x01raw", priority=7, delay_ms=60_000,
                       max_attempts=5, backoff_base_ms=250, backoff_max_ms=9_000)
    assert r.job_id and r.duplicate is False
    job = client.get_job(queue, r.job_id)
    assert job.id == r.job_id and job.queue == queue and job.type == "resize"
    assert job.payload == b"\x00\x01raw"  # bytes pass through unchanged
    assert job.priority == 7
    assert job.state == JobState.PENDING
    assert job.available_at_ms >= before + 59_000  # delayed: due in the future
    assert job.max_attempts == 5
    assert job.attempts == 0
    assert (job.backoff_base_ms, job.backoff_max_ms) == (250, 9_000)


def test_defaults_and_run_at(client, queue):
    r = client.enqueue(queue, "t", {"a": 1})
    job = client.get_job(queue, r.job_id)
    assert job.payload == b'{"a":1}' and job.json() == {"a": 1}
    assert job.max_attempts == 3  # broker default
    assert job.priority == 0
    at = now_ms() + 3_600_000
    job2 = client.get_job(queue, client.enqueue(queue, "t", run_at=at).job_id)
    assert job2.available_at_ms == at and job2.payload == b""


def test_idempotency_key_duplicate_returns_same_id(client, queue):
    a = client.enqueue(queue, "t", {"n": 1}, idempotency_key="order-42")
    b = client.enqueue(queue, "t", {"n": 2}, idempotency_key="order-42")
    assert a.duplicate is False
    assert b.duplicate is True and b.job_id == a.job_id
    job = client.get_job(queue, a.job_id)
    assert job.json() == {"n": 1} and job.idempotency_key == "order-42"
    by_key = client.get_job_by_idempotency_key(queue, "order-42")
    assert by_key.id == a.job_id and by_key.json() == {"n": 1}
    with pytest.raises(JobwireError) as ei:
        client.get_job_by_idempotency_key(queue, "order-43")
    assert ei.value.code == grpc.StatusCode.NOT_FOUND


def test_enqueue_batch_per_job_error_returned_others_stored(client, queue):
    results = client.enqueue_batch(queue, [
        {"type": "a", "payload": {"i": 0}},
        {"type": "b", "payload": b"x", "options": {"priority": 5000}},
        {"type": "c", "payload": [1, 2], "max_attempts": 2},
    ])
    assert len(results) == 3
    assert results[0].ok and results[2].ok
    bad = results[1]
    assert not bad.ok and bad.job_id == ""
    assert bad.error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "priority" in bad.error.message
    assert client.get_job(queue, results[0].job_id).json() == {"i": 0}
    third = client.get_job(queue, results[2].job_id)
    assert third.type == "c" and third.json() == [1, 2] and third.max_attempts == 2


def test_enqueue_batch_empty_raises(client, queue):
    with pytest.raises(JobwireError) as ei:
        client.enqueue_batch(queue, [])
    assert ei.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_cancel(client, queue):
    r = client.enqueue(queue, "t", b"", delay_ms=60_000)
    assert client.cancel(queue, r.job_id) is False  # PENDING: DEAD at once
    job = client.get_job(queue, r.job_id)
    assert job.state == JobState.DEAD and job.error == "cancelled"
    with pytest.raises(JobwireError) as ei:  # already dead
        client.cancel(queue, r.job_id)
    assert ei.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_unknown_job_not_found(client, queue):
    with pytest.raises(JobwireError) as ei:
        client.get_job(queue, "999999999999")
    assert ei.value.code == grpc.StatusCode.NOT_FOUND


def test_invalid_argument_message_unchanged(client, queue, broker):
    with pytest.raises(JobwireError) as ei:
        client.enqueue(queue, "t", b"", priority=5000)
    err = ei.value
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    # The broker's own text, unchanged (same as a raw stub call gives).
    from jobwire.v1 import broker_pb2, broker_pb2_grpc
    with grpc.insecure_channel(broker.addr) as ch:
        with pytest.raises(grpc.RpcError) as raw:
            broker_pb2_grpc.BrokerServiceStub(ch).Enqueue(
                broker_pb2.EnqueueRequest(queue=queue, type="t", priority=5000), timeout=5)
    assert err.message == raw.value.details()
    assert err.message.startswith("priority")
    assert "5000" in err.message


def test_unreachable_broker_fails_within_deadline():
    port = free_port()  # nothing listens there
    c = Client("127.0.0.1:%d" % port, timeout=1.5)
    t0 = time.monotonic()
    with pytest.raises(JobwireError) as ei:
        c.enqueue("q", "t", b"")
    elapsed = time.monotonic() - t0
    c.close()
    assert ei.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert elapsed < 1.5 + 1.0


def test_blackholed_broker_hits_deadline():
    # A listening socket that never speaks HTTP/2: the call must fail by the
    # deadline, not hang.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    try:
        c = Client("127.0.0.1:%d" % srv.getsockname()[1], timeout=1.0)
        t0 = time.monotonic()
        with pytest.raises(JobwireError) as ei:
            c.get_job("q", "1")
        elapsed = time.monotonic() - t0
        c.close()
    finally:
        srv.close()
    assert ei.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert elapsed < 1.0 + 1.0


def test_default_addr_from_env(monkeypatch, broker, queue):
    monkeypatch.setenv("JOBWIRE_ADDR", broker.addr)
    with Client() as c:
        assert c.addr == broker.addr
        assert c.enqueue(queue, "t").job_id
