"""Typed error details (proto/jobwire/v1/broker.proto, "Error details")
against the real broker: ``JobwireError.reason`` / ``metadata`` / ``field`` /
``retry_delay`` decoded from the broker's google.rpc.Status, the per-item
reasons of ``enqueue_batch`` / ``ack_batch`` (the results' ``reason``
field), and ``Outcome.reason`` of a worker whose Ack is refused.

Every case runs twice: through ``jobwire.Client`` (and sync raw stubs) and
through ``jobwire.aio.Client`` (and ``grpc.aio`` raw stubs, whose errors are
``AioRpcError``s), each driven by a synchronous adapter. The last tests,
without a broker: the ``Reason`` enum against the contract's table, copies
and pickles, and the decoding of inconsistent or damaged details."""
import asyncio
import copy
import hashlib
import json
import pickle
import re
import subprocess
import uuid
from dataclasses import dataclass, field as dc_field
from typing import Any, Callable, Dict, Optional

import grpc
import pytest

import jobwire
from jobwire import JobState, JobwireError, Reason, aio
from jobwire.v1 import broker_pb2 as pb
from jobwire.v1 import broker_pb2_grpc as pb_grpc
from conftest import REPO, Broker, free_port

UNKNOWN_JOB_ID = "999999999999"
PROTO = REPO / "proto" / "jobwire" / "v1" / "broker.proto"


# -- the two APIs behind one synchronous face ---------------------------------
class SyncApi:
    """jobwire.Client, and raw calls on a sync channel."""

    name = "sync"

    def __init__(self, addr: str, **options):
        self.addr = addr
        self.client = jobwire.Client(addr, timeout=10, **options)

    def call(self, method: str, *args, **kwargs):
        return getattr(self.client, method)(*args, **kwargs)

    def raw(self, method: str, request, metadata=None):
        """A raw stub call; a failure raises JobwireError.from_rpc_error."""
        with grpc.insecure_channel(self.addr) as ch:
            try:
                return getattr(pb_grpc.BrokerServiceStub(ch), method)(
                    request, timeout=10, metadata=metadata)
            except grpc.RpcError as e:
                raise JobwireError.from_rpc_error(e) from None

    def raw_claim_error(self, request) -> JobwireError:
        """The error a raw Claim stream ends with before its first message."""
        with grpc.insecure_channel(self.addr) as ch:
            try:
                for _ in pb_grpc.BrokerServiceStub(ch).Claim(request, timeout=10):
                    raise AssertionError("the Claim delivered a message")
            except grpc.RpcError as e:
                return JobwireError.from_rpc_error(e)
        raise AssertionError("the Claim stream ended without an error")

    def close(self) -> None:
        self.client.close()


class AioApi:
    """jobwire.aio.Client, and raw calls on a grpc.aio channel, each run to
    completion on this adapter's own event loop."""

    name = "aio"

    def __init__(self, addr: str, **options):
        self.addr = addr
        self.loop = asyncio.new_event_loop()

        async def make():
            return aio.Client(addr, timeout=10, **options)
        self.client = self.loop.run_until_complete(make())

    def call(self, method: str, *args, **kwargs):
        return self.loop.run_until_complete(getattr(self.client, method)(*args, **kwargs))

    def raw(self, method: str, request, metadata=None):
        async def go():
            async with grpc.aio.insecure_channel(self.addr) as ch:
                try:
                    return await getattr(pb_grpc.BrokerServiceStub(ch), method)(
                        request, timeout=10, metadata=metadata)
                except grpc.aio.AioRpcError as e:
                    raise JobwireError.from_rpc_error(e) from None
        return self.loop.run_until_complete(go())

    def raw_claim_error(self, request) -> JobwireError:
        async def go():
            async with grpc.aio.insecure_channel(self.addr) as ch:
                try:
                    async for _ in pb_grpc.BrokerServiceStub(ch).Claim(request, timeout=10):
                        raise AssertionError("the Claim delivered a message")
                except grpc.aio.AioRpcError as e:
                    return JobwireError.from_rpc_error(e)
            raise AssertionError("the Claim stream ended without an error")
        return self.loop.run_until_complete(go())

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


APIS = [SyncApi, AioApi]


@pytest.fixture(params=APIS, ids=lambda cls: cls.name)
def api(request, broker):
    a = request.param(broker.addr)
    yield a
    a.close()


def claim_one(addr: str, queue: str) -> str:
    """Claims the queue's next job through a raw Claim stream (closed after);
    the job stays ACTIVE under a 60 s lease. Returns its lease token."""
    with grpc.insecure_channel(addr) as ch:
        call = pb_grpc.BrokerServiceStub(ch).Claim(
            pb.ClaimRequest(queues=[queue], max_in_flight=1, lease_ms=60_000,
                            worker_id="pytest-error-reasons"), timeout=10)
        message = next(iter(call))
        call.cancel()
    assert len(message.jobs) == 1, message
    return message.jobs[0].lease_token


def active_job(api, queue: str):
    """(job_id, lease_token) of a job claimed (ACTIVE) in ``queue``."""
    job_id = api.call("enqueue", queue, "t", {"n": 1}).job_id
    return job_id, claim_one(api.addr, queue)


# -- errors of a call: one table ----------------------------------------------
@dataclass
class Case:
    name: str
    act: Callable[[Any, str], Any]  # (api, queue): the call that must fail
    code: grpc.StatusCode
    reason: Reason
    metadata: Dict[str, str] = dc_field(default_factory=dict)  # must be among e.metadata
    field: Optional[str] = None
    message_prefix: str = ""


def _bad_priority_raw(api, queue):
    # The raw stub (no client in between) and JobwireError.from_rpc_error.
    return api.raw("Enqueue", pb.EnqueueRequest(queue=queue, type="t", priority=5000))


def _ack_with_wrong_token(api, queue):
    job_id, token = active_job(api, queue)
    return api.raw("Ack", pb.AckRequest(queue=queue, job_id=job_id, lease_token=token + "x"))


def _fail_with_wrong_token(api, queue):
    job_id, token = active_job(api, queue)
    return api.raw("Fail", pb.FailRequest(queue=queue, job_id=job_id, lease_token="not-" + token,
                                          error="x"))


def _cancel_completed(api, queue):
    job_id, token = active_job(api, queue)
    api.raw("Ack", pb.AckRequest(queue=queue, job_id=job_id, lease_token=token))
    return api.call("cancel", queue, job_id)


def _progress_after_cancel(api, queue):
    job_id, token = active_job(api, queue)
    assert api.call("cancel", queue, job_id) is True  # ACTIVE: its run is asked to stop
    try:
        return api.call("report_progress", queue, job_id, token, 50)
    finally:
        # Nothing stored: the job is still ACTIVE, without progress.
        job = api.call("get_job", queue, job_id)
        assert (job.state, job.progress_percent) == (JobState.ACTIVE, None)


def _cancel_dead(api, queue):
    job_id = api.call("enqueue", queue, "t").job_id
    api.call("cancel", queue, job_id)
    return api.call("cancel", queue, job_id)


CASES = [
    Case("get_job_missing", lambda api, q: api.call("get_job", q, UNKNOWN_JOB_ID),
         grpc.StatusCode.NOT_FOUND, Reason.JOB_NOT_FOUND),
    Case("cancel_missing", lambda api, q: api.call("cancel", q, UNKNOWN_JOB_ID),
         grpc.StatusCode.NOT_FOUND, Reason.JOB_NOT_FOUND),
    Case("enqueue_priority_5000",
         lambda api, q: api.call("enqueue", q, "t", b"", priority=5000),
         grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_FIELD, {"field": "priority"},
         field="priority", message_prefix="priority"),
    Case("raw_enqueue_priority_5000", _bad_priority_raw,
         grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_FIELD, {"field": "priority"},
         field="priority", message_prefix="priority"),
    Case("enqueue_empty_type", lambda api, q: api.call("enqueue", q, ""),
         grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_FIELD, {"field": "type"},
         field="type"),
    Case("ack_wrong_lease_token", _ack_with_wrong_token,
         grpc.StatusCode.FAILED_PRECONDITION, Reason.LEASE_STALE),
    Case("fail_wrong_lease_token", _fail_with_wrong_token,
         grpc.StatusCode.FAILED_PRECONDITION, Reason.LEASE_STALE),
    Case("cancel_completed_job", _cancel_completed,
         grpc.StatusCode.FAILED_PRECONDITION, Reason.JOB_STATE, {"state": "completed"}),
    Case("progress_of_a_cancelled_run", _progress_after_cancel,
         grpc.StatusCode.FAILED_PRECONDITION, Reason.JOB_CANCEL_REQUESTED),
    Case("cancel_dead_job", _cancel_dead,
         grpc.StatusCode.FAILED_PRECONDITION, Reason.JOB_STATE, {"state": "dead"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_error_carries_reason(api, queue, case):
    with pytest.raises(JobwireError) as ei:
        case.act(api, queue)
    e = ei.value
    assert (e.code, e.reason) == (case.code, case.reason), str(e)
    assert e.reason == case.reason.value and isinstance(e.reason, str)
    assert isinstance(e.metadata, dict)
    for key, value in case.metadata.items():
        assert e.metadata.get(key) == value, e.metadata
    assert e.field == case.field
    assert e.retry_delay is None
    assert e.message.startswith(case.message_prefix), e.message
    assert str(e) == "%s: %s" % (case.code.name, e.message)  # unchanged


# -- per-item errors of the batch calls ---------------------------------------
def test_enqueue_batch_item_error_has_the_result_reason(api, queue):
    results = api.call("enqueue_batch", queue, [
        {"type": "ok", "payload": {"n": 1}},
        {"type": "bad", "options": {"priority": 5000}},
    ])
    assert len(results) == 2
    good, bad = results
    assert good.ok and good.error is None and good.job_id
    assert api.call("get_job", queue, good.job_id).state == JobState.PENDING
    assert not bad.ok and bad.job_id == ""
    e = bad.error
    assert isinstance(e, JobwireError)
    assert (e.code, e.reason) == (grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_FIELD)
    assert e.message.startswith("jobs[1].priority"), e.message
    # A batch result carries code, message and reason only.
    assert (e.metadata, e.field, e.retry_delay) == ({}, None, None)


def test_ack_batch_item_errors_have_the_result_reasons(api, queue):
    job_id, token = active_job(api, queue)
    other_id, other_token = active_job(api, queue)
    results = api.call("ack_batch", [
        {"queue": queue, "job_id": job_id, "lease_token": token + "x"},
        {"queue": queue, "job_id": UNKNOWN_JOB_ID, "lease_token": token},
        {"queue": queue, "job_id": job_id, "lease_token": ""},
        {"queue": queue, "job_id": other_id, "lease_token": other_token, "result": "done"},
    ])
    expected = [
        (grpc.StatusCode.FAILED_PRECONDITION, Reason.LEASE_STALE),
        (grpc.StatusCode.NOT_FOUND, Reason.JOB_NOT_FOUND),
        (grpc.StatusCode.INVALID_ARGUMENT, Reason.INVALID_FIELD),
        None,
    ]
    assert len(results) == len(expected)
    for i, (r, want) in enumerate(zip(results, expected)):
        if want is None:
            assert r.ok, (i, r)
        else:
            assert (r.error.code, r.error.reason) == want, (i, r.error)
    assert api.call("get_job", queue, job_id).state == JobState.ACTIVE
    assert api.call("get_job", queue, other_id).state == JobState.COMPLETED


# -- RetryInfo: TOO_MANY_CLAIM_STREAMS ----------------------------------------
@pytest.fixture
def one_stream_broker(redis_url, tmp_path_factory):
    """A broker that allows one Claim stream at a time; one per test, since a
    cancelled stream frees its slot only once the broker has seen it end."""
    b = Broker(redis_url, tmp_path_factory.mktemp("broker-one-stream"), "--max_claim_streams=1")
    b.start()
    yield b
    b.stop()


@pytest.mark.parametrize("api_cls", APIS, ids=lambda cls: cls.name)
def test_too_many_claim_streams_has_retry_delay(one_stream_broker, queue, api_cls):
    api = api_cls(one_stream_broker.addr)
    try:
        with grpc.insecure_channel(one_stream_broker.addr) as ch:
            first = pb_grpc.BrokerServiceStub(ch).Claim(
                pb.ClaimRequest(queues=[queue], max_in_flight=1), timeout=30)
            # The first stream is open once a job reaches it.
            api.call("enqueue", queue, "t")
            assert len(next(iter(first)).jobs) == 1
            e = api.raw_claim_error(pb.ClaimRequest(queues=[queue], max_in_flight=1))
            first.cancel()
    finally:
        api.close()
    assert (e.code, e.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                  Reason.TOO_MANY_CLAIM_STREAMS), str(e)
    assert e.retry_delay == 1.0
    assert e.field is None


# -- tokens: TOKEN_MISSING / TOKEN_INVALID / TOKEN_NOT_PERMITTED ---------------
TOKEN = "reasons-" + uuid.uuid4().hex


@pytest.fixture(scope="module")
def token_broker(redis_url, tmp_path_factory):
    """Tokens required; TOKEN may enqueue to allowed.* only."""
    d = tmp_path_factory.mktemp("broker-tokens")
    tokens = d / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [
        {"name": "reasons", "sha256": hashlib.sha256(TOKEN.encode()).hexdigest(),
         "enqueue": ["allowed.*"]}]}))
    b = Broker(redis_url, d, "--auth_tokens_file=%s" % tokens)
    b.start()
    yield b
    b.stop()


TOKEN_CASES = [
    ("missing", None, "allowed.q", grpc.StatusCode.UNAUTHENTICATED, Reason.TOKEN_MISSING, {}),
    ("unknown", "not-" + TOKEN, "allowed.q", grpc.StatusCode.UNAUTHENTICATED,
     Reason.TOKEN_INVALID, {}),
    ("not_permitted", TOKEN, "other.q", grpc.StatusCode.PERMISSION_DENIED,
     Reason.TOKEN_NOT_PERMITTED, {"queue": "other.q"}),
]


@pytest.mark.parametrize("api_cls", APIS, ids=lambda cls: cls.name)
@pytest.mark.parametrize("name,token,queue_name,code,reason,metadata", TOKEN_CASES,
                         ids=[c[0] for c in TOKEN_CASES])
def test_token_errors_carry_reason(token_broker, monkeypatch, api_cls, name, token, queue_name,
                                   code, reason, metadata):
    monkeypatch.delenv("JOBWIRE_TOKEN", raising=False)
    api = api_cls(token_broker.addr, token=token)
    try:
        with pytest.raises(JobwireError) as ei:
            api.call("enqueue", queue_name, "t")
    finally:
        api.close()
    e = ei.value
    assert (e.code, e.reason) == (code, reason), str(e)
    for key, value in metadata.items():
        assert e.metadata.get(key) == value, e.metadata
    assert TOKEN not in str(e) and TOKEN not in repr(e) and TOKEN not in repr(e.metadata)


# -- the aio Worker's refused Ack: Outcome.reason ------------------------------
def test_aio_worker_refused_ack_outcome_has_reason(broker, client, queue, redis_url):
    async def main():
        outcomes = []
        started = asyncio.Event()
        release = asyncio.Event()
        w = aio.Worker(broker.addr, queue, lease_ms=1000, on_outcome=outcomes.append)

        @w.handler("long")
        async def long_job(job):
            if job.attempt == 1:
                started.set()
                await release.wait()
            return "attempt %d" % job.attempt

        run = asyncio.create_task(w.run(install_signal_handlers=False))
        job_id = client.enqueue(queue, "long", b"", max_attempts=3).job_id
        await asyncio.wait_for(started.wait(), 10)
        # The lease changes hands, as in test_worker's lost-lease test: the
        # job record's lease_token (cmsgpack field 7) is overwritten.
        subprocess.run(["redis-cli", "-u", redis_url, "EVAL",
                        "local r = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1])) "
                        "r[7] = ARGV[2] redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(r))",
                        "1", "jw:{%s}:jobs" % queue, job_id, "taken-over"],
                       check=True, capture_output=True)
        release.set()
        for _ in range(200):
            if [o for o in outcomes if o.job.attempt == 1]:
                break
            await asyncio.sleep(0.05)
        await w.stop()
        await run
        return outcomes

    outcomes = asyncio.run(main())
    [first] = [o for o in outcomes if o.job.attempt == 1]
    assert first.kind == "ack_error", first
    assert (first.code, first.reason) == (grpc.StatusCode.FAILED_PRECONDITION, Reason.LEASE_STALE)


# -- errors without details ----------------------------------------------------
@pytest.mark.parametrize("api_cls", APIS, ids=lambda cls: cls.name)
def test_unreachable_broker_error_has_no_reason(api_cls):
    api = api_cls("127.0.0.1:%d" % free_port())
    api.client.timeout = 1.0
    try:
        with pytest.raises(JobwireError) as ei:
            api.call("get_job", "q", "1")
    finally:
        api.close()
    e = ei.value
    assert e.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert (e.reason, e.metadata, e.field, e.retry_delay) == ("", {}, None, None)


# -- the Reason enum and the error object --------------------------------------
def contract_reasons():
    """The reasons broker.proto's "Error details" table lists."""
    text = PROTO.read_text()
    start = text.index("// Error details:")
    end = text.index("// Batch results (EnqueueResult", start)
    return re.findall(r"^//   ([A-Z][A-Z_]+) {2,}", text[start:end], re.M)


def test_reason_enum_matches_the_contract():
    listed = contract_reasons()
    assert len(listed) == 24, listed
    assert [r.value for r in Reason] == listed
    assert all(r.name == r.value for r in Reason)
    assert jobwire.Reason is Reason and "Reason" in jobwire.__all__


def test_reason_is_a_str_enum():
    assert Reason.LEASE_STALE == "LEASE_STALE" and "LEASE_STALE" == Reason.LEASE_STALE
    assert Reason("JOB_STATE") is Reason.JOB_STATE
    assert str(Reason.JOB_STATE) == "JOB_STATE" and "%s" % Reason.JOB_STATE == "JOB_STATE"
    assert {Reason.INVALID_FIELD: 1}["INVALID_FIELD"] == 1
    with pytest.raises(ValueError):
        Reason("SOMETHING_NEW")


def test_error_copies_and_pickles_keep_the_details():
    e = JobwireError(grpc.StatusCode.INVALID_ARGUMENT, "priority: too big",
                     reason=Reason.INVALID_FIELD, metadata={"field": "priority"},
                     field="priority", retry_delay=1.5)
    assert e.reason == "INVALID_FIELD" and type(e.reason) is str
    for twin in (pickle.loads(pickle.dumps(e)), copy.copy(e), copy.deepcopy(e)):
        assert type(twin) is JobwireError and twin is not e
        assert (twin.code, twin.message, twin.reason, twin.metadata, twin.field,
                twin.retry_delay) == (e.code, e.message, e.reason, e.metadata, e.field,
                                      e.retry_delay)
    plain = JobwireError(grpc.StatusCode.INTERNAL, "x")
    assert (plain.reason, plain.metadata, plain.field, plain.retry_delay) == ("", {}, None, None)
    r = JobwireError.from_result(9, "acks[0].lease_token: stale", "LEASE_STALE")
    assert (r.code, r.reason) == (grpc.StatusCode.FAILED_PRECONDITION, Reason.LEASE_STALE)



class FakeRpcError(grpc.RpcError):
    """A failed call as grpc presents it: code(), details(), trailing_metadata()."""

    def __init__(self, code, details, trailer: Optional[bytes]):
        self._code, self._details = code, details
        self._trailer = () if trailer is None else (("grpc-status-details-bin", trailer),)

    def code(self):
        return self._code

    def details(self):
        return self._details

    def trailing_metadata(self):
        return self._trailer


def rich_status(code: grpc.StatusCode, message: str) -> bytes:
    from google.rpc import error_details_pb2, status_pb2
    st = status_pb2.Status(code=code.value[0], message=message)
    st.details.add().Pack(error_details_pb2.ErrorInfo(
        reason="INVALID_FIELD", domain="jobwire.dev", metadata={"field": "priority"}))
    st.details.add().Pack(error_details_pb2.BadRequest(field_violations=[
        error_details_pb2.BadRequest.FieldViolation(field="priority", description=message)]))
    st.details.add().Pack(error_details_pb2.RetryInfo(retry_delay={"seconds": 2,
                                                                   "nanos": 500_000_000}))
    return st.SerializeToString()


INVALID = grpc.StatusCode.INVALID_ARGUMENT
DECODE_CASES = [
    # (name, the call's code and message, the trailer, expected reason)
    ("consistent", INVALID, "m", rich_status(INVALID, "m"), "INVALID_FIELD"),
    # grpcio-status refuses a Status whose message differs (e.g. rewritten
    # on the way): its details still count while the code matches.
    ("message_differs", INVALID, "rewritten", rich_status(INVALID, "m"), "INVALID_FIELD"),
    ("code_differs", grpc.StatusCode.INTERNAL, "m", rich_status(INVALID, "m"), ""),
    ("no_trailer", INVALID, "m", None, ""),
    ("garbage", INVALID, "m", b"\xff\xff\xff", ""),
]


@pytest.mark.parametrize("name,code,message,trailer,reason", DECODE_CASES,
                         ids=[c[0] for c in DECODE_CASES])
def test_from_rpc_error_decoding_edge_cases(name, code, message, trailer, reason):
    e = JobwireError.from_rpc_error(FakeRpcError(code, message, trailer))
    assert (e.code, e.message, e.reason) == (code, message, reason)
    if reason:
        assert (e.metadata, e.field, e.retry_delay) == ({"field": "priority"}, "priority", 2.5)
    else:
        assert (e.metadata, e.field, e.retry_delay) == ({}, None, None)
