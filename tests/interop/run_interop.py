#!/usr/bin/env python3
"""The cross-language interop proof (tests/interop/README.md).

Starts a real redis-server and the real broker, one worker process per
language on one queue (restarted when it crashes on purpose), and producers in
two languages. Meanwhile it freezes each language's worker once, past its
lease, while it holds a job (lease_freezer.py). When every job has settled it
checks, from the workers' logs and from GetJob (interop_checks.py):

- every job ends COMPLETED, or DEAD when it was built to exhaust its attempts;
- no job completed twice, and no Ack was accepted for a superseded lease,
  while every language sent late Acks of superseded leases (all refused);
- each stored result names the language that logged its Ack, and its n;
- no worker logged a job id that no Enqueue returned;
- every language completed jobs, and retries crossed languages;
- the broker's attempts match the runs seen in the logs.

Exit status 0 when every check holds; otherwise 1, with the failures listed.
"""

import argparse
import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import grpc
from jobwire.v1 import broker_pb2, broker_pb2_grpc

import interop_checks
from interop_checks import RUN_STEPS, LogTail, cross_pairs
from lease_freezer import LeaseFreezer

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LANGS = ["python", "node", "go", "cpp"]
PRODUCERS = ["python", "node"]
CRASH_EXIT = 3
# Simulated work per run: long enough that every worker's share of the jobs is
# set by its concurrency, not by its language's per-job overhead.
WORK_MS = 20
# The jobs come due evenly over this long (delay_ms), below what the workers
# drain, so that no backlog builds up. A retry is claimed in due-time order
# (docs/semantics.md): behind a backlog every retry would wait for its end
# and run in the last second of the run, and a language frozen or restarting
# in that second would take none of them (the cross-language check could
# then not tell a fault from bad luck).
SPREAD_MS = 8000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} not listening on {port} after {timeout} s")


def job_spec(n, jobs):
    """The planned behaviour of job n of `jobs`: about 20% fail their first
    attempt, 1% crash their worker on the first attempt, 0.4% always fail
    (and end DEAD after max_attempts = 2); due n / jobs of SPREAD_MS after
    its enqueue."""
    crash = n % 100 == 37
    always_fail = n % 250 == 11
    fail_first = n % 5 == 0
    return {
        "n": n,
        "type": "interop",
        "payload": {"n": n, "fail_first": fail_first, "crash": crash,
                    "always_fail": always_fail, "work_ms": WORK_MS},
        "max_attempts": 2 if always_fail else 6,
        "idempotency_key": f"interop-{n}",
        "backoff_base_ms": 50,
        "backoff_max_ms": 500,
        "delay_ms": n * SPREAD_MS // jobs,
    }


class WorkerSupervisor:
    """One worker process per language; restarts a worker that crashed on
    purpose (exit status 3), each incarnation with its own log file."""

    def __init__(self, workdir, env):
        self.workdir = workdir
        self.env = env
        self.procs = {}
        self.incarnation = collections.Counter()
        self.crashes = collections.Counter()
        self.logs = []          # (lang, incarnation, path)
        self.crashed_logs = set()
        self.failures = []

    def start(self, lang):
        self.incarnation[lang] += 1
        k = self.incarnation[lang]
        log = os.path.join(self.workdir, f"{lang}-{k}.log")
        stderr = open(os.path.join(self.workdir, f"{lang}-{k}.stderr"), "w")
        env = dict(self.env, INTEROP_LANG=lang, INTEROP_LOG=log)
        proc = subprocess.Popen([os.path.join(HERE, lang, "worker")], env=env,
                                stdout=stderr, stderr=subprocess.STDOUT)
        self.procs[lang] = (proc, log, stderr)
        self.logs.append((lang, k, log))

    def poll(self):
        for lang, (proc, log, stderr) in list(self.procs.items()):
            status = proc.poll()
            if status is None:
                continue
            stderr.close()
            if status == CRASH_EXIT:
                self.crashes[lang] += 1
                self.crashed_logs.add(log)
                self.start(lang)
            else:
                self.failures.append(
                    f"{lang} worker exited with status {status}: {tail(stderr.name)}")
                del self.procs[lang]

    def stop_all(self, timeout=30.0):
        for proc, _, _ in self.procs.values():
            proc.send_signal(signal.SIGTERM)
        for lang, (proc, log, stderr) in self.procs.items():
            try:
                status = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                status = proc.wait()
            stderr.close()
            if status != 0:
                self.failures.append(
                    f"{lang} worker ended with status {status} on SIGTERM: {tail(stderr.name)}")
        self.procs = {}


def tail(path, lines=15):
    try:
        with open(path) as f:
            return "\n" + "".join(f.readlines()[-lines:])
    except OSError:
        return ""


class WorkerLogs:
    """Every worker log of the run, read as it grows (LogTail): events holds,
    per job id, every line in order of appearance."""

    def __init__(self):
        self.events = collections.defaultdict(list)  # job id -> [Event]
        self._tails = {}

    def read(self, workers):
        """Reads what every log (of every incarnation) gained since the last
        call; returns it as [(job_id, Event)]."""
        new_events = []
        for _, _, path in workers.logs:
            new_events += self._tails.setdefault(path, LogTail(path)).read()
        for job_id, e in new_events:
            self.events[job_id].append(e)
        return new_events


def run(args):
    workdir = tempfile.mkdtemp(prefix="jobwire-interop-")
    procs = []
    started = time.time()
    try:
        redis_port = free_port()
        redis = subprocess.Popen(
            ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(redis)
        wait_listening(redis_port, redis, "redis-server")

        broker_port = free_port()
        addr = f"127.0.0.1:{broker_port}"
        broker_log = open(os.path.join(workdir, "broker.log"), "w")
        broker = subprocess.Popen(
            [args.broker, f"--listen={addr}", f"--redis_url=redis://127.0.0.1:{redis_port}",
             "--log_level=warning"],
            stdout=broker_log, stderr=subprocess.STDOUT)
        procs.append(broker)
        wait_listening(broker_port, broker, "broker")

        env = dict(os.environ, JOBWIRE_ADDR=addr, INTEROP_QUEUE=args.queue,
                   INTEROP_CONCURRENCY=str(args.concurrency),
                   INTEROP_LEASE_MS=str(args.lease_ms))
        if args.build_dir:
            env["JOBWIRE_BUILD_DIR"] = args.build_dir
        workers = WorkerSupervisor(workdir, env)
        for lang in LANGS:
            workers.start(lang)

        # Producers: job n goes to PRODUCERS[n % 2].
        producers = {}
        for i, lang in enumerate(PRODUCERS):
            jobs_path = os.path.join(workdir, f"jobs-{lang}.jsonl")
            with open(jobs_path, "w") as f:
                for n in range(i, args.jobs, len(PRODUCERS)):
                    f.write(json.dumps(job_spec(n, args.jobs)) + "\n")
            out = os.path.join(workdir, f"enqueued-{lang}.txt")
            penv = dict(env, INTEROP_JOBS=jobs_path, INTEROP_OUT=out)
            producers[lang] = (subprocess.Popen(
                [os.path.join(HERE, lang, "producer")], env=penv,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out)

        failures = []
        job_ids = {}  # n -> job id
        traces = {}   # job id -> "<trace_id> <span_id>" of its producer span
        for lang, (proc, out) in producers.items():
            output, _ = proc.communicate(timeout=args.timeout)
            if proc.returncode != 0:
                failures.append(f"{lang} producer exited with {proc.returncode}: {output}")
                continue
            with open(out) as f:
                for line in f:
                    # "<n> <job_id> <duplicate> [<trace_id> <span_id>]" (README.md)
                    n, job_id, duplicate, *trace = line.split()
                    if duplicate != "0":
                        failures.append(f"job {n} reported as duplicate on first enqueue")
                    job_ids[int(n)] = job_id
                    if trace:
                        traces[job_id] = " ".join(trace)
        if len(job_ids) != args.jobs:
            failures.append(f"producers stored {len(job_ids)} of {args.jobs} jobs")
        enqueued_at = time.time()

        # Wait until every job has a final outcome: in the logs, or (for the
        # few whose outcome line died with a crashing worker) in the broker;
        # meanwhile the freezer freezes each language's worker once.
        channel = grpc.insecure_channel(addr)
        stub = broker_pb2_grpc.BrokerServiceStub(channel)
        expect_dead = {job_ids[n] for n in job_ids if job_spec(n, args.jobs)["payload"]["always_fail"]}
        freezer = LeaseFreezer(stub, args.queue, workers, LANGS, args.lease_ms, first_n=args.jobs)
        logs = WorkerLogs()
        settled = set()
        swept_at = 0.0
        deadline = started + args.timeout
        try:
            while time.time() < deadline and not workers.failures:
                workers.poll()
                new_events = logs.read(workers)
                for job_id, e in new_events:
                    if e.kind == "ack_ok" or (e.kind == "fail_ok" and e.detail == "DEAD"):
                        settled.add(job_id)
                freezer.step(new_events)
                unsettled = (set(job_ids.values()) | set(freezer.job_n)) - settled
                if not unsettled and freezer.done:
                    break
                if len(unsettled) <= 100 and time.time() > swept_at + 0.5:
                    swept_at = time.time()
                    for job_id in unsettled:
                        job = stub.GetJob(broker_pb2.GetJobRequest(queue=args.queue,
                                                                   job_id=job_id), timeout=10).job
                        if job.state in (broker_pb2.JOB_STATE_COMPLETED, broker_pb2.JOB_STATE_DEAD):
                            settled.add(job_id)
                time.sleep(0.1)
        finally:
            freezer.resume_all()
        drained_at = time.time()
        workers.stop_all()
        logs.read(workers)
        failures += workers.failures + freezer.failures
        if not freezer.done:
            failures.append("the run ended before every language's worker was frozen")

        # The broker's view of every job the producers and the freezer enqueued.
        job_n = {job_id: n for n, job_id in job_ids.items()}
        job_n.update(freezer.job_n)
        broker_jobs = {}
        for job_id in job_n:
            broker_jobs[job_id] = stub.GetJob(
                broker_pb2.GetJobRequest(queue=args.queue, job_id=job_id), timeout=10).job
        channel.close()

        facts = interop_checks.Run(
            langs=LANGS, concurrency=args.concurrency, job_n=job_n, expect_dead=expect_dead,
            broker_jobs=broker_jobs, events=logs.events, crashes=sum(workers.crashes.values()),
            crashed_logs=workers.crashed_logs, freezes=freezer.freezes, traces=traces)
        check_failures, counts = interop_checks.check(facts)
        failures += check_failures
        summarize(facts, counts, workers, enqueued_at - started, drained_at - started)
        return failures
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}")


def summarize(run, counts, workers, enqueue_s, drain_s):
    completed = collections.Counter()
    runs = collections.Counter()
    failed = collections.Counter()
    for evs in run.events.values():
        for e in evs:
            if e.kind == "ack_ok":
                completed[e.lang] += 1
            elif e.kind == "start":
                runs[e.lang] += 1
            elif e.kind == "fail_ok":
                failed[e.lang] += 1
    states = collections.Counter(broker_pb2.JobState.Name(j.state)
                                 for j in run.broker_jobs.values())
    print(f"attempts without a logged run (delivered to a crashing worker): "
          f"{counts['unlogged_runs']}")
    print(f"acks lost with their crashing worker's log line: {counts['unlogged_acks']}")
    print(f"acks answered unknown, then found stored: {counts['acks_unknown_stored']}")
    print(f"Ack/Fail refused by the broker (superseded leases): {counts['stale_refused']}")
    print(f"late Acks of superseded leases: {counts['late_acks']}, refused "
          f"{counts['late_acks_refused']}")
    print(f"handler spans of the Node.js producer's traces, parent checked: "
          f"{counts['spans_checked']}")
    print(f"\n{len(run.broker_jobs)} jobs from {', '.join(PRODUCERS)} producers and the "
          f"freezer; enqueued after {enqueue_s:.1f} s, drained after {drain_s:.1f} s; "
          f"final states {dict(states)}")
    print(f"{'language':<8} {'runs':>6} {'completed':>9} {'failed':>6} {'crashes':>7}")
    for lang in LANGS:
        print(f"{lang:<8} {runs[lang]:>6} {completed[lang]:>9} {failed[lang]:>6} "
              f"{workers.crashes[lang]:>7}")
    pairs = cross_pairs(run.events)
    print("\ncross-language retries (failed or crashed in row, completed in column)")
    print(f"{'':<8} " + " ".join(f"{b:>6}" for b in LANGS))
    for a in LANGS:
        print(f"{a:<8} " + " ".join(f"{pairs[(a, b)] if a != b else '-':>6}" for b in LANGS))
    print("\nfrozen workers (SIGSTOP while holding a job, past its lease)")
    for f in run.freezes:
        ends = [f"{e.kind} {e.detail}".strip() for e in run.events.get(f.job_id, [])
                if e.log == f.log and e.attempt == f.attempt and e.kind not in RUN_STEPS]
        print(f"{f.lang:<8} job {f.job_id} attempt {f.attempt}: frozen {f.frozen_s:.1f} s, "
              f"broker at attempt {f.attempts_at_resume} on resume; late Ack: "
              f"{ends[0] if ends else 'no outcome logged'}")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default=os.path.join(REPO, "build", "broker",
                                                         "jobwire-broker"))
    parser.add_argument("--build-dir", default="")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--lease-ms", type=int, default=2000)
    parser.add_argument("--queue", default="interop")
    parser.add_argument("--timeout", type=float, default=150.0)
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    parser.add_argument("--langs", default=",".join(LANGS),
                        help="worker languages (all four for the proof)")
    parser.add_argument("--producers", default=",".join(PRODUCERS))
    args = parser.parse_args()
    LANGS[:] = args.langs.split(",")
    PRODUCERS[:] = args.producers.split(",")
    failures = run(args)
    if failures:
        print(f"FAILED: {len(failures)} check(s)")
        for f in failures[:50]:
            print("  " + f)
        return 1
    print("PASSED: every check holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
