"""Operations tests against a real redis-server and the real broker binary.

- /metrics is scraped after enqueue / claim / ack / fail / cancel operations
  and parsed with prometheus_client's text parser; counters, gauges and
  histograms must hold the exact expected values.
- grpc-health-probe (the real one, as Kubernetes runs it) exits 0 while the
  broker is SERVING and non-zero once Redis is gone, and 0 again after.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from jobwire import Client
from jobwire.v1 import broker_pb2 as pb
from jobwire.v1 import broker_pb2_grpc as pb_grpc

REPO = Path(__file__).resolve().parents[2]
BROKER_BIN = os.environ.get("JOBWIRE_BROKER_BIN") or str(REPO / "build" / "broker" / "jobwire-broker")
PROBE_BIN = os.environ.get("JOBWIRE_HEALTH_PROBE") or str(REPO / "build" / "go" / "bin" / "grpc-health-probe")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Redis:
    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="jobwire-ops-redis-")
        self.proc = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: listening(self.port), 10, "redis-server")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


class Broker:
    def __init__(self, redis_port: int) -> None:
        self.port = free_port()
        self.metrics_port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [BROKER_BIN, f"--listen={self.addr}", f"--redis_url=redis://127.0.0.1:{redis_port}",
             f"--metrics_listen=127.0.0.1:{self.metrics_port}", "--log_level=warning"])
        wait_for(lambda: listening(self.port) and listening(self.metrics_port), 10, "broker")

    def scrape(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.status == 200
            return resp.read().decode()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        return self.proc.returncode


@pytest.fixture
def redis():
    r = Redis()
    r.start()
    yield r
    r.stop()


@pytest.fixture
def broker(redis):
    b = Broker(redis.port)
    yield b
    assert b.stop() == 0


def sample(text: str, name: str, **labels) -> float | None:
    """The value of the sample `name` whose labels include `labels`, parsed
    with the real Prometheus text parser; None when there is none."""
    found = None
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                assert found is None, f"two samples match {name} {labels}"
                found = s.value
    return found


def claimed_jobs(stream, n):
    """The first n jobs of a Claim stream (whose messages carry one or more
    jobs each, in claim order); never more than n arrive (max_in_flight)."""
    got = []
    while len(got) < n:
        got.extend(next(stream).jobs)
    assert len(got) == n, [j.job.id for j in got]
    return got


def test_metrics_count_operations(broker):
    client = Client(broker.addr)
    channel = grpc.insecure_channel(broker.addr)
    stub = pb_grpc.BrokerServiceStub(channel)
    q = "ops-q"
    for i in range(4):
        client.enqueue(q, "t", {"i": i})
    first = client.enqueue(q, "t", {"i": 9}, idempotency_key="k1")
    again = client.enqueue(q, "t", {"i": 9}, idempotency_key="k1")  # duplicate: not counted
    assert first.job_id == again.job_id

    ctx_stream = stub.Claim(pb.ClaimRequest(queues=[q], max_in_flight=5, lease_ms=30000, worker_id="ops"))
    got = claimed_jobs(ctx_stream, 5)
    text = broker.scrape()
    assert sample(text, "jobwire_claim_streams_open") == 1
    assert sample(text, "jobwire_queue_claim_streams", queue=q) == 1
    stub.Ack(pb.AckRequest(queue=q, job_id=got[0].job.id, lease_token=got[0].lease_token), timeout=10)
    stub.Ack(pb.AckRequest(queue=q, job_id=got[1].job.id, lease_token=got[1].lease_token), timeout=10)
    stub.Ack(pb.AckRequest(queue=q, job_id=got[2].job.id, lease_token=got[2].lease_token), timeout=10)
    r = stub.Fail(pb.FailRequest(queue=q, job_id=got[3].job.id, lease_token=got[3].lease_token,
                                 error="later", retry_after_ms=600000), timeout=10)
    assert r.outcome == pb.FailResponse.OUTCOME_RETRY_SCHEDULED
    r = stub.Fail(pb.FailRequest(queue=q, job_id=got[4].job.id, lease_token=got[4].lease_token,
                                 error="boom", non_retryable=True), timeout=10)
    assert r.outcome == pb.FailResponse.OUTCOME_DEAD
    # Repeats (a client retrying after UNAVAILABLE) answer OK with the same
    # outcome and are not counted again.
    stub.Ack(pb.AckRequest(queue=q, job_id=got[0].job.id, lease_token=got[0].lease_token), timeout=10)
    again = stub.Fail(pb.FailRequest(queue=q, job_id=got[3].job.id, lease_token=got[3].lease_token,
                                     error="later", retry_after_ms=600000), timeout=10)
    assert again.outcome == pb.FailResponse.OUTCOME_RETRY_SCHEDULED
    again = stub.Fail(pb.FailRequest(queue=q, job_id=got[4].job.id, lease_token=got[4].lease_token,
                                     error="boom", non_retryable=True), timeout=10)
    assert again.outcome == pb.FailResponse.OUTCOME_DEAD
    with pytest.raises(grpc.RpcError) as stale:
        stub.Ack(pb.AckRequest(queue=q, job_id=got[0].job.id, lease_token="stale"), timeout=10)
    assert stale.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    ctx_stream.cancel()

    # A due job nobody claims, for the oldest-due gauge.
    client.enqueue("ops-idle", "t", {})

    def settled():
        t = broker.scrape()
        ok = (sample(t, "jobwire_queue_jobs", queue=q, state="completed") == 3
              and sample(t, "jobwire_queue_jobs", queue=q, state="dead") == 1
              and (sample(t, "jobwire_queue_oldest_due_age_seconds", queue="ops-idle") or 0) > 0
              and sample(t, "jobwire_claim_streams_open") == 0
              and sample(t, "jobwire_queue_claim_streams", queue=q) is None)
        return t if ok else None
    text = wait_for(settled, 20, "gauges refreshed and stream closed", interval=0.5)

    counters = {
        "jobwire_jobs_enqueued_total": 5,
        "jobwire_jobs_claimed_total": 5,
        "jobwire_jobs_acked_total": 3,
        "jobwire_jobs_failed_total": 2,
        "jobwire_jobs_retried_total": 1,
        "jobwire_jobs_dead_total": 1,
    }
    for name, want in counters.items():
        assert sample(text, name, queue=q) == want, name
    assert sample(text, "jobwire_jobs_lease_expired_total", queue=q) is None
    assert sample(text, "jobwire_jobs_enqueued_total", queue="ops-idle") == 1
    depth = {"pending_due": 0, "pending_scheduled": 1, "active": 0, "completed": 3, "dead": 1}
    for state, want in depth.items():
        assert sample(text, "jobwire_queue_jobs", queue=q, state=state) == want, state
    assert sample(text, "jobwire_queue_jobs", queue="ops-idle", state="pending_due") == 1
    assert sample(text, "jobwire_queue_oldest_due_age_seconds", queue=q) == 0
    assert 0 < sample(text, "jobwire_queue_oldest_due_age_seconds", queue="ops-idle") < 60
    # Histograms: one claim-wait observation per claim, one run time per ack.
    assert sample(text, "jobwire_job_claim_wait_seconds_count", queue=q) == 5
    assert sample(text, "jobwire_job_claim_wait_seconds_bucket", queue=q, le="+Inf") == 5
    assert 0 <= sample(text, "jobwire_job_claim_wait_seconds_sum", queue=q) < 30
    assert sample(text, "jobwire_job_run_seconds_count", queue=q) == 3
    # Per-RPC counts by method and code.
    rpc = "jobwire_rpc_requests_total"
    svc = "jobwire.v1.BrokerService"
    assert sample(text, rpc, service=svc, method="Enqueue", code="OK") == 7
    assert sample(text, rpc, service=svc, method="Ack", code="OK") == 4
    assert sample(text, rpc, service=svc, method="Ack", code="FAILED_PRECONDITION") == 1
    assert sample(text, rpc, service=svc, method="Fail", code="OK") == 4
    assert sample(text, rpc, service=svc, method="Claim", code="CANCELLED") == 1
    # Latency histograms count every call, whatever its code.
    dur = "jobwire_rpc_duration_seconds"
    assert sample(text, dur + "_count", service=svc, method="Enqueue") == 7
    assert sample(text, dur + "_count", service=svc, method="Ack") == 5
    assert sample(text, dur + "_bucket", service=svc, method="Ack", le="+Inf") == 5
    assert 0 < sample(text, dur + "_sum", service=svc, method="Enqueue") < 7 * 5
    channel.close()
    client.close()


def documented_families() -> dict[str, tuple[str, set[str]]]:
    """name -> (type, label names) from the metrics table of docs/operations.md."""
    out = {}
    for line in (REPO / "docs" / "operations.md").read_text().splitlines():
        if not (line.startswith("| `jobwire_") or line.startswith("| `process_")):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        labels = {l.strip(" `") for l in cells[2].split(",") if l.strip()}
        out[cells[0].strip("`")] = (cells[1], labels)
    return out


def test_every_family_is_documented_with_its_labels(broker):
    """Every jobwire_* and process_* family the broker exposes, after calls
    that make each one appear, has the type and label names the metrics table
    of docs/operations.md gives, and every documented family is exposed."""
    documented = documented_families()
    assert len(documented) >= 20, documented
    client = Client(broker.addr)
    channel = grpc.insecure_channel(broker.addr)
    stub = pb_grpc.BrokerServiceStub(channel)
    q = "ops-fam"
    client.enqueue(q, "t", {}, max_attempts=1)
    client.enqueue(q, "t", {}, max_attempts=2)
    stream = stub.Claim(pb.ClaimRequest(queues=[q], max_in_flight=2, lease_ms=1000, worker_id="ops"))
    got = claimed_jobs(stream, 2)
    stub.Ack(pb.AckRequest(queue=q, job_id=got[0].job.id, lease_token=got[0].lease_token), timeout=10)
    stub.Fail(pb.FailRequest(queue=q, job_id=got[1].job.id, lease_token=got[1].lease_token,
                             error="boom", retry_after_ms=0), timeout=10)
    # The retry comes back on the open stream and is left to expire: a
    # lease expiry on the last attempt (retried, dead, lease_expired).
    claimed_jobs(stream, 1)

    def complete():
        t = broker.scrape()
        names = {f.name for f in text_string_to_metric_families(t)}
        # prometheus_client drops _total from counter family names.
        want = {n[:-len("_total")] if n.endswith("_total") else n for n in documented}
        return t if want <= names and sample(t, "jobwire_jobs_lease_expired_total", queue=q) == 1 \
            else None
    # The round-trip PING runs every 5 s; the reaper's expiry within ~2 s.
    text = wait_for(complete, 20, "every documented family exposed", interval=0.5)

    types = {"counter": "counter", "gauge": "gauge", "histogram": "histogram"}
    seen = set()
    for family in text_string_to_metric_families(text):
        name = family.name + ("_total" if family.type == "counter" else "")
        if not (name.startswith("jobwire_") or name.startswith("process_")):
            continue
        assert name in documented, f"{name} is exposed but not in docs/operations.md"
        doc_type, doc_labels = documented[name]
        assert family.type == types[doc_type], (name, family.type, doc_type)
        for s in family.samples:
            labels = set(s.labels) - {"le"}
            assert labels == doc_labels, (name, s.name, sorted(labels), sorted(doc_labels))
        seen.add(name)
    assert seen == set(documented), set(documented) - seen

    version = subprocess.run([BROKER_BIN, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()
    assert sample(text, "jobwire_build_info", version=version[1]) == 1
    assert sample(text, "jobwire_redis_up") == 1
    assert sample(text, "jobwire_redis_roundtrip_seconds_count") >= 1
    assert 0 < sample(text, "jobwire_redis_roundtrip_seconds_sum") < 5
    assert sample(text, "process_resident_memory_bytes") > 1 << 20
    assert sample(text, "process_open_fds") >= 5  # listeners, Redis, this client
    assert sample(text, "process_max_fds") >= sample(text, "process_open_fds")
    assert abs(sample(text, "process_start_time_seconds") - time.time()) < 120
    assert sample(text, "process_cpu_seconds_total") > 0
    stream.cancel()
    channel.close()
    client.close()


def test_lease_expiry_is_counted(broker):
    client = Client(broker.addr)
    channel = grpc.insecure_channel(broker.addr)
    stub = pb_grpc.BrokerServiceStub(channel)
    q = "ops-exp"
    client.enqueue(q, "t", {}, max_attempts=1)
    stream = stub.Claim(pb.ClaimRequest(queues=[q], max_in_flight=1, lease_ms=1000, worker_id="ops"))
    claimed_jobs(stream, 1)  # held, never acked: the reaper takes the lease back
    wait_for(lambda: sample(broker.scrape(), "jobwire_jobs_lease_expired_total", queue=q) == 1,
             15, "lease expiry counted", interval=0.3)
    wait_for(lambda: sample(broker.scrape(), "jobwire_queue_jobs", queue=q, state="dead") == 1,
             15, "dead gauge", interval=0.5)
    # max_attempts=1: the expiry ended the job, so it counts as dead, not retried.
    text = broker.scrape()
    assert sample(text, "jobwire_jobs_dead_total", queue=q) == 1
    assert sample(text, "jobwire_jobs_retried_total", queue=q) is None
    stream.cancel()
    channel.close()
    client.close()


def probe(addr: str, service: str = "") -> int:
    args = [PROBE_BIN, f"-addr={addr}", "-connect-timeout=2s", "-rpc-timeout=2s"]
    if service:
        args.append(f"-service={service}")
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30).returncode


def test_grpc_health_probe_follows_redis(redis, broker):
    assert os.access(PROBE_BIN, os.X_OK), f"{PROBE_BIN} missing: run tests/ops/setup.sh"
    wait_for(lambda: probe(broker.addr) == 0, 10, "probe SERVING")
    assert probe(broker.addr, "jobwire.v1.BrokerService") == 0
    assert probe(broker.addr, "no.such.Service") != 0

    assert sample(broker.scrape(), "jobwire_redis_up") == 1

    redis.stop()
    wait_for(lambda: probe(broker.addr) != 0, 10, "probe failing without Redis")
    assert probe(broker.addr, "jobwire.v1.BrokerService") != 0
    assert sample(broker.scrape(), "jobwire_redis_up") == 0

    redis.start()  # same port: the broker reconnects (backoff up to 2 s)
    wait_for(lambda: probe(broker.addr) == 0, 15, "probe SERVING again")
    assert sample(broker.scrape(), "jobwire_redis_up") == 1
