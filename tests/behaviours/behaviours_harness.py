"""The behaviours' harness (run_behaviours.py): the processes it starts (an
interop worker per language, the broker, which a behaviour may kill and start
again on the same port, a throwaway redis-server) and the broker calls the
checks use. A check that does not hold raises Failed."""
import json
import os
import signal
import subprocess
import sys
import time

import grpc
from jobwire.v1 import admin_pb2 as admin_pb
from jobwire.v1 import admin_pb2_grpc as admin_pb_grpc
from jobwire.v1 import broker_pb2 as pb
from jobwire.v1 import broker_pb2_grpc as pb_grpc

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INTEROP = os.path.join(REPO, "tests", "interop")
sys.path.insert(0, INTEROP)
from run_interop import free_port, wait_listening  # noqa: E402

# The broker default every worker gets: long enough that a loaded 2-core
# machine running four workers does not lose a lease to a slow renewal.
LEASE_MS = 3000


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


class Worker:
    """One language's interop worker process and its log. `name` tells an
    extra worker of the language (W12) from the main one: its log and its
    queues are its own; `weights` (queue -> weight) go to INTEROP_WEIGHTS."""

    def __init__(self, lang, workdir, env, name="", queues=None, weights=None):
        self.lang = lang
        base = f"{lang}-{name}" if name else lang
        self.queue = f"behaviours-{base}"
        self.log = os.path.join(workdir, f"{base}.log")
        self.stderr_path = os.path.join(workdir, f"{base}.stderr")
        self.env = dict(env, INTEROP_LANG=lang, INTEROP_LOG=self.log,
                        INTEROP_QUEUE=self.queue, INTEROP_CONCURRENCY="4",
                        INTEROP_LEASE_MS="0")
        if queues:
            self.env["INTEROP_QUEUES"] = ",".join(queues)
        if weights:
            self.env["INTEROP_WEIGHTS"] = ",".join(str(weights[q]) for q in queues)
        self.proc = None
        self.start()

    def start(self):
        self.stderr = open(self.stderr_path, "a")
        self.proc = subprocess.Popen([os.path.join(INTEROP, self.lang, "worker")],
                                     env=self.env, stdout=self.stderr, stderr=subprocess.STDOUT)

    def all_lines(self):
        """Every log line, each split into fields."""
        try:
            with open(self.log) as f:
                rows = [line.split() for line in f]
        except FileNotFoundError:
            return []
        return [r for r in rows if len(r) >= 4]

    def lines(self, job_id):
        """The log lines of `job_id`, each split into fields."""
        return [r for r in self.all_lines() if r[1] == job_id]

    def wait_line(self, job_id, kind, timeout, count=1):
        """The `count`-th line of `kind` for the job; Failed after `timeout`."""
        deadline = time.time() + timeout
        while True:
            found = [r for r in self.lines(job_id) if r[0] == kind]
            if len(found) >= count:
                return found[count - 1]
            if time.time() > deadline:
                raise Failed(f"no '{kind}' line for job {job_id} after {timeout} s "
                             f"(log: {[' '.join(r) for r in self.lines(job_id)]})")
            time.sleep(0.02)

    def stop(self, timeout=30.0):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        self.stderr.close()
        return status


class BrokerProcess:
    """The broker under test, which a behaviour may kill and start again on
    the same port."""

    def __init__(self, path, redis_port, workdir):
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.argv = [path, f"--listen={self.addr}", f"--redis_url=redis://127.0.0.1:{redis_port}",
                     "--metrics_listen=", f"--default_lease_ms={LEASE_MS}",
                     "--log_level=warning"]
        self.log = open(os.path.join(workdir, "broker.log"), "a")
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.proc, "broker")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Broker:
    """The broker's Broker and Admin calls the checks use."""

    def __init__(self, addr):
        # Reconnects within half a second of a broker restart (W8, W9).
        self.channel = grpc.insecure_channel(addr, options=[
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 500)])
        self.stub = pb_grpc.BrokerServiceStub(self.channel)
        self.admin = admin_pb_grpc.AdminServiceStub(self.channel)

    def enqueue(self, queue, payload=None, type_="behaviour", **options):
        request = pb.EnqueueRequest(queue=queue, type=type_,
                                    payload=json.dumps(payload or {}).encode(), **options)
        return self.stub.Enqueue(request, timeout=10).job_id

    def enqueue_many(self, queue, count, payload, type_="behaviour", **options):
        """`count` identical jobs (EnqueueBatch, 1,000 a call): their ids."""
        ids = []
        data = json.dumps(payload).encode()
        while len(ids) < count:
            n = min(1000, count - len(ids))
            response = self.stub.EnqueueBatch(pb.EnqueueBatchRequest(jobs=[
                pb.EnqueueRequest(queue=queue, type=type_, payload=data, **options)
                for _ in range(n)]), timeout=10)
            for r in response.results:
                check(r.code == 0 and r.job_id, f"EnqueueBatch: code {r.code} {r.message}")
                ids.append(r.job_id)
        return ids

    def job(self, queue, job_id):
        return self.stub.GetJob(pb.GetJobRequest(queue=queue, job_id=job_id), timeout=10,
                                wait_for_ready=True).job

    def wait_state(self, queue, job_id, states, timeout):
        deadline = time.time() + timeout
        while True:
            job = self.job(queue, job_id)
            if job.state in states:
                return job
            if time.time() > deadline:
                raise Failed(f"job {job_id} is {pb.JobState.Name(job.state)} after {timeout} s, "
                             f"want {[pb.JobState.Name(s) for s in states]}")
            time.sleep(0.05)

    def delete_job(self, queue, job_id):
        """AdminService.DeleteJob (admin.proto)."""
        self.admin.DeleteJob(admin_pb.DeleteJobRequest(queue=queue, job_id=job_id), timeout=10)


def start_redis(workdir):
    """A throwaway redis-server on a free loopback port: (process, port)."""
    port = free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, redis, "redis-server")
    except RuntimeError:
        redis.kill()
        raise
    return redis, port
