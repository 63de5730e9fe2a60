"""Bearer tokens and TLS / mutual TLS (docs/security.md) against the real
broker: a throwaway PKI made with the openssl CLI (the commands of
tests/test_pki.cc) and a tokens file of SHA-256 hashes."""
import asyncio
import hashlib
import json
import logging
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import grpc
import pytest

from jobwire import Client, JobState, JobwireError, Worker
from jobwire import aio
from conftest import Broker, running, wait_for

# Random per session so that nothing could pass by accident.
PRODUCER_TOKEN = "producer-" + uuid.uuid4().hex   # "billing-api": enqueue billing.*
WORKER_TOKEN = "worker-" + uuid.uuid4().hex       # "billing-worker": claim billing.*
OPS_TOKEN = "ops-" + uuid.uuid4().hex             # "ops": enqueue + claim everything
ALL_TOKENS = (PRODUCER_TOKEN, WORKER_TOKEN, OPS_TOKEN)

# The PKI script every language's TLS tests share.
PKI_SCRIPT = Path(__file__).resolve().parents[3] / "tests" / "make_test_pki.sh"


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Path:
    if not shutil.which("openssl"):
        pytest.fail("openssl not found on PATH")
    d = tmp_path_factory.mktemp("pki")
    r = subprocess.run(["sh", str(PKI_SCRIPT), str(d)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, "openssl failed:\n%s%s" % (r.stdout, r.stderr)
    return d


@pytest.fixture(scope="module")
def tokens_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("auth") / "tokens.json"
    path.write_text(json.dumps({"tokens": [
        {"name": "billing-api", "sha256": sha256(PRODUCER_TOKEN), "enqueue": ["billing.*"]},
        {"name": "billing-worker", "sha256": sha256(WORKER_TOKEN), "claim": ["billing.*"]},
        {"name": "ops", "sha256": sha256(OPS_TOKEN), "enqueue": ["*"], "claim": ["*"]},
    ]}))
    return path


def _broker(redis_url, tmp_path_factory, *flags):
    b = Broker(redis_url, tmp_path_factory.mktemp("broker"), "--backoff_base_ms=100", *flags)
    b.start()
    return b


@pytest.fixture(scope="module")
def token_broker(redis_url, tmp_path_factory, tokens_file):
    """Plaintext listener, tokens required."""
    b = _broker(redis_url, tmp_path_factory, "--auth_tokens_file=%s" % tokens_file)
    yield b
    b.stop()


@pytest.fixture(scope="module")
def mtls_broker(redis_url, tmp_path_factory, tokens_file, pki):
    """Mutual TLS (client certificates signed by ca.pem) and tokens required."""
    b = _broker(redis_url, tmp_path_factory, "--auth_tokens_file=%s" % tokens_file,
                "--tls_cert=%s" % (pki / "server.pem"), "--tls_key=%s" % (pki / "server.key"),
                "--tls_client_ca=%s" % (pki / "ca.pem"))
    yield b
    b.stop()


@pytest.fixture(scope="module")
def tls_broker(redis_url, tmp_path_factory, pki):
    """One-way TLS, no tokens."""
    b = _broker(redis_url, tmp_path_factory,
                "--tls_cert=%s" % (pki / "server.pem"), "--tls_key=%s" % (pki / "server.key"))
    yield b
    b.stop()


@pytest.fixture(autouse=True)
def no_env_token(monkeypatch):
    monkeypatch.delenv("JOBWIRE_TOKEN", raising=False)


@pytest.fixture
def billing_queue():
    return "billing." + uuid.uuid4().hex[:12]


def mtls_paths(pki):
    """The mutual-TLS options as file paths (str)."""
    return dict(tls_root_ca=str(pki / "ca.pem"), tls_client_cert=str(pki / "client.pem"),
                tls_client_key=str(pki / "client.key"))


def mtls_texts(pki):
    """The mutual-TLS options as PEM text."""
    return {k: Path(v).read_text() for k, v in mtls_paths(pki).items()}


def assert_no_token(*texts):
    for text in texts:
        for token in ALL_TOKENS:
            assert token not in text


def raises_code(fn, code):
    with pytest.raises(JobwireError) as ei:
        fn()
    assert ei.value.code == code, str(ei.value)
    assert_no_token(str(ei.value), repr(ei.value))
    return ei.value


class Outcomes(list):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()

    def __call__(self, outcome):
        with self.lock:
            self.append(outcome)


# -- tokens over plaintext (metadata: call credentials need TLS) ------------

def test_token_allows_enqueue_and_get_job_over_plaintext(token_broker, billing_queue):
    with Client(token_broker.addr, timeout=5, token=PRODUCER_TOKEN) as c:
        r = c.enqueue(billing_queue, "invoice", {"n": 1})
        job = c.get_job(billing_queue, r.job_id)
        batch = c.enqueue_batch(billing_queue, [{"type": "a"}, {"type": "b"}])
        c.cancel(billing_queue, batch[1].job_id)
        cancelled = c.get_job(billing_queue, batch[1].job_id)
    assert job.json() == {"n": 1} and job.state == JobState.PENDING
    assert [b.ok for b in batch] == [True, True]
    assert cancelled.state == JobState.DEAD


def test_missing_or_unknown_token_is_unauthenticated(token_broker, billing_queue):
    with Client(token_broker.addr, timeout=5) as c:
        e = raises_code(lambda: c.enqueue(billing_queue, "t", b""),
                        grpc.StatusCode.UNAUTHENTICATED)
    assert e.message.startswith("missing bearer token")
    with Client(token_broker.addr, timeout=5, token="not-a-known-token") as c:
        e = raises_code(lambda: c.get_job(billing_queue, "1"), grpc.StatusCode.UNAUTHENTICATED)
    assert e.message == "invalid bearer token"


def test_queue_not_allowed_is_permission_denied_with_broker_message(token_broker, billing_queue):
    emails = "emails-" + uuid.uuid4().hex[:8]
    with Client(token_broker.addr, timeout=5, token=PRODUCER_TOKEN) as c:
        e = raises_code(lambda: c.enqueue(emails, "send", b""), grpc.StatusCode.PERMISSION_DENIED)
        assert e.message == 'token "billing-api" may not enqueue to queue "%s"' % emails
        # A batch is refused as a whole with the same message.
        e = raises_code(lambda: c.enqueue_batch(emails, [{"type": "send"}]),
                        grpc.StatusCode.PERMISSION_DENIED)
        assert e.message == 'token "billing-api" may not enqueue to queue "%s"' % emails
    # The worker's token may read jobs of its queues but not enqueue.
    with Client(token_broker.addr, timeout=5, token=WORKER_TOKEN) as c:
        e = raises_code(lambda: c.enqueue(billing_queue, "t", b""),
                        grpc.StatusCode.PERMISSION_DENIED)
    assert e.message == 'token "billing-worker" may not enqueue to queue "%s"' % billing_queue


def test_token_from_jobwire_token_env(token_broker, billing_queue, monkeypatch):
    monkeypatch.setenv("JOBWIRE_TOKEN", PRODUCER_TOKEN)
    with Client(token_broker.addr, timeout=5) as c:  # no token= : the env's
        r = c.enqueue(billing_queue, "t", b"env")
        assert c.get_job(billing_queue, r.job_id).payload == b"env"
        assert repr(c).endswith("token=set)")
    # An explicit token wins over the environment.
    monkeypatch.setenv("JOBWIRE_TOKEN", "not-a-known-token")
    with Client(token_broker.addr, timeout=5, token=PRODUCER_TOKEN) as c:
        assert c.enqueue(billing_queue, "t", b"").job_id
    with Client(token_broker.addr, timeout=5) as c:
        e = raises_code(lambda: c.enqueue(billing_queue, "t", b""),
                        grpc.StatusCode.UNAUTHENTICATED)
    assert e.message == "invalid bearer token"

    async def aio_env():
        monkeypatch.setenv("JOBWIRE_TOKEN", PRODUCER_TOKEN)
        async with aio.Client(token_broker.addr, timeout=5) as c:
            return (await c.enqueue(billing_queue, "t", b"")).job_id
    assert asyncio.run(aio_env())


def test_worker_token_without_claim_permission_keeps_retrying_and_logs(
        token_broker, billing_queue, caplog):
    with Client(token_broker.addr, timeout=5, token=PRODUCER_TOKEN) as c:
        r = c.enqueue(billing_queue, "t", b"")
        outcomes = Outcomes()
        handled = []
        # The producer's token may not claim: the broker refuses every Claim.
        w = Worker(token_broker.addr, billing_queue, token=PRODUCER_TOKEN, on_outcome=outcomes)
        w.register("t", handled.append)
        with caplog.at_level(logging.DEBUG, logger="jobwire.worker"):
            with running(w) as t:
                wait_for(lambda: [rec for rec in caplog.records
                                  if "PERMISSION_DENIED" in rec.getMessage()],
                         what="the Claim refusal in the log")
                time.sleep(0.5)  # a few reconnects later: still running, nothing claimed
                assert t.is_alive()
                job = c.get_job(billing_queue, r.job_id)
        # run() returned normally at stop() (only INVALID_ARGUMENT is fatal).
    expected = ('claim stream error PERMISSION_DENIED: token "billing-api" may not claim '
                'from queue "%s"; reconnecting' % billing_queue)
    refusals = [rec for rec in caplog.records if "PERMISSION_DENIED" in rec.getMessage()]
    assert refusals[0].levelno == logging.WARNING and expected in refusals[0].getMessage()
    assert len(refusals) >= 2  # it reconnected (with backoff) and was refused again
    assert job.state == JobState.PENDING and job.attempts == 0
    assert handled == [] and outcomes == []
    assert_no_token(*(rec.getMessage() for rec in caplog.records), caplog.text)


def test_aio_worker_without_claim_permission_keeps_retrying_and_logs(
        token_broker, billing_queue, caplog):
    async def main():
        handled = []
        w = aio.Worker(token_broker.addr, billing_queue, token=PRODUCER_TOKEN)
        w.register("t", handled.append)
        async with aio.Client(token_broker.addr, timeout=5, token=PRODUCER_TOKEN) as c:
            r = await c.enqueue(billing_queue, "t", b"")
            run = asyncio.create_task(w.run(install_signal_handlers=False))
            deadline = time.monotonic() + 10
            while "PERMISSION_DENIED" not in caplog.text:
                assert time.monotonic() < deadline, "no Claim refusal logged"
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            alive = not run.done()
            await w.stop()
            await asyncio.wait_for(run, 10)  # returns normally: not fatal
            return alive, handled, await c.get_job(billing_queue, r.job_id)
    with caplog.at_level(logging.INFO, logger="jobwire.worker"):
        alive, handled, job = asyncio.run(main())
    assert alive and handled == []
    assert job.state == JobState.PENDING and job.attempts == 0
    assert ('claim stream error PERMISSION_DENIED: token "billing-api" may not claim from '
            'queue "%s"; reconnecting' % billing_queue) in caplog.text
    assert_no_token(caplog.text)


def test_worker_without_token_is_refused_unauthenticated(token_broker, billing_queue, caplog):
    w = Worker(token_broker.addr, billing_queue)
    w.register("t", lambda job: None)
    with caplog.at_level(logging.WARNING, logger="jobwire.worker"):
        with running(w):
            wait_for(lambda: "UNAUTHENTICATED: missing bearer token" in caplog.text,
                     what="the UNAUTHENTICATED refusal in the log")


# -- TLS and mutual TLS ------------------------------------------------------

def test_mtls_with_token_end_to_end(mtls_broker, pki, billing_queue):
    """Producer (options as paths) and worker (options as PEM text) over mTLS
    with their tokens: Claim, ExtendLease, Fail and Ack all carry the token."""
    outcomes = Outcomes()
    attempts = []
    w = Worker(mtls_broker.addr, billing_queue, lease_ms=1000, on_outcome=outcomes,
               token=WORKER_TOKEN, **mtls_texts(pki))

    @w.handler("invoice")
    def invoice(job):
        attempts.append(job.attempt)
        if job.attempt == 1:
            raise ValueError("first try fails")
        time.sleep(1.6)  # longer than the lease: renewed by ExtendLease
        return {"paid": job.json()["n"]}

    with Client(mtls_broker.addr, timeout=5, token=PRODUCER_TOKEN, **mtls_paths(pki)) as c:
        with running(w):
            r = c.enqueue(billing_queue, "invoice", {"n": 42}, backoff_base_ms=100)
            job = wait_for(lambda: (lambda j: j if j.state == JobState.COMPLETED else None)(
                c.get_job(billing_queue, r.job_id)), timeout=15, what="job completed")
            wait_for(lambda: len(outcomes) == 2, what="2 outcomes")
    assert job.result_json() == {"paid": 42} and job.attempts == 2
    assert job.error == "ValueError: first try fails"
    assert attempts == [1, 2]
    assert [(o.kind, o.job.attempt, o.lease_lost) for o in outcomes] == [
        ("fail_ok", 1, False), ("ack_ok", 2, False)]


def test_aio_mtls_with_token_end_to_end(mtls_broker, pki, billing_queue):
    async def main():
        outcomes = []
        w = aio.Worker(mtls_broker.addr, billing_queue, lease_ms=1000, on_outcome=outcomes.append,
                       token=WORKER_TOKEN, **mtls_paths(pki))

        @w.handler("invoice")
        async def invoice(job):
            await asyncio.sleep(1.6)  # renewed by ExtendLease
            return {"paid": job.json()["n"]}

        async with aio.Client(mtls_broker.addr, timeout=5, token=PRODUCER_TOKEN,
                              **mtls_texts(pki)) as c:
            run = asyncio.create_task(w.run(install_signal_handlers=False))
            r = await c.enqueue(billing_queue, "invoice", {"n": 7})
            deadline = time.monotonic() + 15
            while (job := await c.get_job(billing_queue, r.job_id)).state != JobState.COMPLETED:
                assert time.monotonic() < deadline, job
                await asyncio.sleep(0.05)
            with pytest.raises(JobwireError) as ei:
                await c.enqueue("emails", "t", b"")
            await w.stop()
            await asyncio.wait_for(run, 10)
        return job, outcomes, ei.value
    job, outcomes, denied = asyncio.run(main())
    assert job.result_json() == {"paid": 7} and job.attempts == 1
    assert [(o.kind, o.lease_lost) for o in outcomes] == [("ack_ok", False)]
    assert denied.code == grpc.StatusCode.PERMISSION_DENIED
    assert denied.message == 'token "billing-api" may not enqueue to queue "emails"'


@pytest.mark.parametrize("form", ["path", "pathlib", "text", "bytes"])
def test_pem_options_as_path_or_text(mtls_broker, pki, billing_queue, form):
    paths = mtls_paths(pki)
    convert = {"path": str, "pathlib": Path, "text": lambda p: Path(p).read_text(),
               "bytes": lambda p: Path(p).read_bytes()}[form]
    with Client(mtls_broker.addr, timeout=5, token=PRODUCER_TOKEN,
                **{k: convert(v) for k, v in paths.items()}) as c:
        r = c.enqueue(billing_queue, "t", form)
        assert c.get_job(billing_queue, r.job_id).json() == form


def test_tls_without_client_cert_against_mtls_is_unavailable(mtls_broker, pki, billing_queue):
    with Client(mtls_broker.addr, timeout=5, token=PRODUCER_TOKEN,
                tls_root_ca=str(pki / "ca.pem")) as c:
        raises_code(lambda: c.enqueue(billing_queue, "t", b""), grpc.StatusCode.UNAVAILABLE)


def test_client_cert_of_another_ca_is_unavailable(mtls_broker, pki, billing_queue):
    with Client(mtls_broker.addr, timeout=5, token=PRODUCER_TOKEN, tls_root_ca=pki / "ca.pem",
                tls_client_cert=pki / "other-client.pem",
                tls_client_key=pki / "other-client.key") as c:
        raises_code(lambda: c.enqueue(billing_queue, "t", b""), grpc.StatusCode.UNAVAILABLE)


def test_server_cert_not_trusted_by_system_roots(mtls_broker, pki, billing_queue):
    # tls=True alone trusts the system roots, which do not know the test CA.
    with Client(mtls_broker.addr, timeout=5, token=PRODUCER_TOKEN, tls=True,
                tls_client_cert=pki / "client.pem", tls_client_key=pki / "client.key") as c:
        raises_code(lambda: c.enqueue(billing_queue, "t", b""), grpc.StatusCode.UNAVAILABLE)


def test_one_way_tls_and_plaintext_against_tls(tls_broker, pki, queue):
    with Client(tls_broker.addr, timeout=5, tls_root_ca=pki / "ca.pem") as c:
        r = c.enqueue(queue, "t", b"tls")
        assert c.get_job(queue, r.job_id).payload == b"tls"
        assert repr(c) == "jobwire.Client(addr=%r, tls=True, token=none)" % tls_broker.addr
    with Client(tls_broker.addr, timeout=5) as c:  # plaintext against a TLS listener
        raises_code(lambda: c.get_job(queue, r.job_id), grpc.StatusCode.UNAVAILABLE)


# -- option errors: every call fails with a clear error, never the token ---

def test_unreadable_pem_file_fails_every_call_and_worker_run(pki, tmp_path, billing_queue):
    missing = str(tmp_path / "missing-ca.pem")
    with Client("127.0.0.1:1", timeout=2, token=PRODUCER_TOKEN, tls_root_ca=missing) as c:
        e = raises_code(lambda: c.enqueue(billing_queue, "t", b""),
                        grpc.StatusCode.INVALID_ARGUMENT)
        raises_code(lambda: c.get_job(billing_queue, "1"), grpc.StatusCode.INVALID_ARGUMENT)
    assert e.message == "tls_root_ca: cannot read PEM file %s: No such file or directory" % missing

    w = Worker("127.0.0.1:1", billing_queue, token=WORKER_TOKEN, tls_root_ca=pki / "ca.pem",
               tls_client_cert=pki / "client.pem", tls_client_key=str(tmp_path / "nope.key"))
    w.register("t", lambda job: None)
    t0 = time.monotonic()
    e = raises_code(lambda: w.run(install_signal_handlers=False), grpc.StatusCode.INVALID_ARGUMENT)
    assert time.monotonic() - t0 < 5
    assert e.message.startswith("tls_client_key: cannot read PEM file ")

    async def aio_run():
        w = aio.Worker("127.0.0.1:1", billing_queue, tls_root_ca=missing)
        w.register("t", lambda job: None)
        await asyncio.wait_for(w.run(install_signal_handlers=False), 10)
    e = raises_code(lambda: asyncio.run(aio_run()), grpc.StatusCode.INVALID_ARGUMENT)
    assert e.message.startswith("tls_root_ca: cannot read PEM file ")

    async def aio_call():
        async with aio.Client("127.0.0.1:1", tls_root_ca=missing) as c:
            await c.get_job(billing_queue, "1")
    raises_code(lambda: asyncio.run(aio_call()), grpc.StatusCode.INVALID_ARGUMENT)


def test_client_cert_without_key_is_an_error(pki, billing_queue):
    with Client("127.0.0.1:1", timeout=2, tls_root_ca=pki / "ca.pem",
                tls_client_cert=pki / "client.pem") as c:
        e = raises_code(lambda: c.get_job(billing_queue, "1"), grpc.StatusCode.INVALID_ARGUMENT)
    assert "tls_client_cert and tls_client_key" in e.message


def test_token_never_in_repr_or_errors(token_broker, billing_queue, monkeypatch):
    secret = "line\nbreak-" + PRODUCER_TOKEN
    c = Client(token_broker.addr, timeout=5, token=secret)
    e = raises_code(lambda: c.get_job(billing_queue, "1"), grpc.StatusCode.INVALID_ARGUMENT)
    assert e.message.startswith("token: a bearer token may hold only printable ASCII")
    assert_no_token(repr(c), str(vars(c)), repr(c._security))
    c.close()
    monkeypatch.setenv("JOBWIRE_TOKEN", secret)
    with Client(token_broker.addr, timeout=5) as c:
        e = raises_code(lambda: c.get_job(billing_queue, "1"), grpc.StatusCode.INVALID_ARGUMENT)
    assert e.message.startswith("$JOBWIRE_TOKEN: ")
    monkeypatch.delenv("JOBWIRE_TOKEN")
    w = Worker(token_broker.addr, billing_queue, token=WORKER_TOKEN)
    assert repr(w).endswith("tls=False, token=set)")
    assert_no_token(repr(w), str(vars(w)))
    w.stop()

    async def aio_repr():
        async with aio.Client(token_broker.addr, token=OPS_TOKEN) as a:
            return repr(a), str(vars(a))
    texts = asyncio.run(aio_repr())
    assert texts[0].endswith("token=set)")
    assert_no_token(*texts)
