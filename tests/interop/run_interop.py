#!/usr/bin/env python3
"""The cross-language interop proof (tests/interop/README.md).

Starts a real redis-server and the real broker, one worker process per
language on one queue (restarted when it crashes on purpose), and producers in
two languages. When every job has settled it checks, from the workers' logs
and from GetJob:

- every job ends COMPLETED, or DEAD when it was built to exhaust its attempts;
- no job completed twice, and no Ack was accepted for a superseded lease;
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

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LANGS = ["python", "node", "go", "cpp"]
PRODUCERS = ["python", "node"]
CRASH_EXIT = 3
# Simulated work per run: long enough that every worker's share of the jobs is
# set by its concurrency, not by its language's per-job overhead.
WORK_MS = 20


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


def job_spec(n):
    """The planned behaviour of job n: about 20% fail their first attempt,
    1% crash their worker on the first attempt, 0.4% always fail (and end
    DEAD after max_attempts = 2)."""
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


def read_log(path):
    """Lines "<event> <job_id> <attempt> <lang> [detail]". A last line without
    its newline is being written right now (the logs are read while workers
    run) and is left for the next read."""
    events = []
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break
            parts = line.split()
            if len(parts) < 4:
                raise ValueError(f"{path}: malformed line {line!r}")
            detail = parts[4] if len(parts) > 4 else ""
            events.append((parts[0], parts[1], int(parts[2]), parts[3], detail))
    return events


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
                    f.write(json.dumps(job_spec(n)) + "\n")
            out = os.path.join(workdir, f"enqueued-{lang}.txt")
            penv = dict(env, INTEROP_JOBS=jobs_path, INTEROP_OUT=out)
            producers[lang] = (subprocess.Popen(
                [os.path.join(HERE, lang, "producer")], env=penv,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out)

        failures = []
        job_ids = {}  # n -> job id
        for lang, (proc, out) in producers.items():
            output, _ = proc.communicate(timeout=args.timeout)
            if proc.returncode != 0:
                failures.append(f"{lang} producer exited with {proc.returncode}: {output}")
                continue
            with open(out) as f:
                for line in f:
                    n, job_id, duplicate = line.split()
                    if duplicate != "0":
                        failures.append(f"job {n} reported as duplicate on first enqueue")
                    job_ids[int(n)] = job_id
        if len(job_ids) != args.jobs:
            failures.append(f"producers stored {len(job_ids)} of {args.jobs} jobs")
        enqueued_at = time.time()

        # Wait until every job has a final outcome: in the logs, or (for the
        # few whose outcome line died with a crashing worker) in the broker.
        channel = grpc.insecure_channel(addr)
        stub = broker_pb2_grpc.BrokerStub(channel)
        expect_dead = {job_ids[n] for n in job_ids if job_spec(n)["payload"]["always_fail"]}
        finished = set()  # settled according to the broker
        deadline = started + args.timeout
        while time.time() < deadline and not workers.failures:
            workers.poll()
            settled = set(finished)
            for _, _, path in workers.logs:
                if not os.path.exists(path):
                    continue
                for event, job_id, _, _, detail in read_log(path):
                    if event == "ack_ok" or (event == "fail_ok" and detail == "DEAD"):
                        settled.add(job_id)
            unsettled = set(job_ids.values()) - settled
            if not unsettled:
                break
            if len(unsettled) <= 100:
                for job_id in unsettled:
                    job = stub.GetJob(broker_pb2.GetJobRequest(queue=args.queue, job_id=job_id),
                                      timeout=10)
                    if job.state in (broker_pb2.COMPLETED, broker_pb2.DEAD):
                        finished.add(job_id)
            time.sleep(0.2)
        drained_at = time.time()
        workers.stop_all()
        failures += workers.failures

        # The broker's view of every job.
        broker_jobs = {}
        for n, job_id in job_ids.items():
            broker_jobs[job_id] = stub.GetJob(
                broker_pb2.GetJobRequest(queue=args.queue, job_id=job_id), timeout=10)
        channel.close()

        # The logs' view: per job, every event in order of appearance.
        events = collections.defaultdict(list)   # job id -> [(event, attempt, lang, detail, log)]
        for lang, _, path in workers.logs:
            if os.path.exists(path):
                for event, job_id, attempt, log_lang, detail in read_log(path):
                    events[job_id].append((event, attempt, log_lang, detail, path))

        failures += check(args, job_ids, broker_jobs, events, expect_dead, workers)
        summarize(args, job_ids, broker_jobs, events, workers,
                  enqueued_at - started, drained_at - started)
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


def check(args, job_ids, broker_jobs, events, expect_dead, workers):
    failures = []
    completed_state = broker_pb2.COMPLETED
    dead_state = broker_pb2.DEAD
    unlogged_runs = 0
    unlogged_acks = 0
    for job_id, job in broker_jobs.items():
        evs = events.get(job_id, [])
        acks = [e for e in evs if e[0] == "ack_ok"]
        starts = [e for e in evs if e[0] == "start"]
        # Runs whose outcome was never logged because their process crashed.
        crashed = {(e[1], e[4]) for e in starts if e[4] in workers.crashed_logs} - {
            (e[1], e[4]) for e in evs if e[0] != "start"}

        want = dead_state if job_id in expect_dead else completed_state
        if job.state != want:
            failures.append(f"job {job_id}: state {broker_pb2.JobState.Name(job.state)}, "
                            f"want {broker_pb2.JobState.Name(want)} (error {job.error!r})")
            continue
        if len(acks) > 1:
            failures.append(f"job {job_id}: completed {len(acks)} times: {acks}")
        if want == completed_state:
            if acks:
                if acks[0][1] != job.attempts:
                    failures.append(f"job {job_id}: Ack accepted for attempt {acks[0][1]}, "
                                    f"but the broker's latest attempt is {job.attempts}")
            elif any(a == job.attempts for a, _ in crashed):
                # Acked, then the process crashed before the log line.
                unlogged_acks += 1
            else:
                failures.append(f"job {job_id}: COMPLETED with no Ack in the logs")
        else:
            if acks:
                failures.append(f"job {job_id}: DEAD but acked: {acks}")
        # Attempts against logged runs: a job delivered to a worker that crashed
        # before starting its handler was claimed without a logged run.
        attempts_logged = sorted(e[1] for e in starts)
        if len(attempts_logged) != len(set(attempts_logged)):
            failures.append(f"job {job_id}: attempt ran twice: {attempts_logged}")
        missing = job.attempts - len(starts)
        if missing < 0 or (attempts_logged and attempts_logged[-1] > job.attempts):
            failures.append(f"job {job_id}: broker counts {job.attempts} attempts, "
                            f"logs show runs {attempts_logged}")
        unlogged_runs += max(missing, 0)
    # A crash loses at most the other jobs delivered to that worker's stream.
    limit = sum(workers.crashes.values()) * (args.concurrency - 1)
    if unlogged_runs > limit:
        failures.append(f"{unlogged_runs} attempts without a logged run; at most {limit} "
                        f"can be explained by crashes")
    for lang in LANGS:
        if not any(e[0] == "ack_ok" and e[2] == lang for evs in events.values() for e in evs):
            failures.append(f"no job completed in {lang}")
    pairs = cross_pairs(events)
    runs = collections.Counter(e[2] for evs in events.values() for e in evs if e[0] == "start")
    total_runs = sum(runs.values())
    for a in LANGS:
        for b in LANGS:
            # "Likely" pairs: both languages ran at least 5% of all runs.
            if a != b and runs[a] >= 0.05 * total_runs and runs[b] >= 0.05 * total_runs \
                    and pairs[(a, b)] == 0:
                failures.append(f"no job failed in {a} and completed in {b}")
    stale_refused = sum(1 for evs in events.values() for e in evs
                        if e[0] in ("ack_error", "fail_error"))
    print(f"attempts without a logged run (delivered to a crashing worker): {unlogged_runs}")
    print(f"acks lost with their crashing worker's log line: {unlogged_acks}")
    print(f"Ack/Fail refused by the broker (superseded leases): {stale_refused}")
    return failures


def cross_pairs(events):
    """(failed-in, completed-in) counts over jobs whose failed or crashed
    attempt ran in one language and whose completion in another."""
    pairs = collections.Counter()
    for evs in events.values():
        done = [e[2] for e in evs if e[0] == "ack_ok"]
        if not done:
            continue
        failed_in = {e[2] for e in evs if e[0] == "crash" or
                     (e[0] == "fail_ok" and e[3] == "RETRY_SCHEDULED")}
        for a in failed_in:
            if a != done[0]:
                pairs[(a, done[0])] += 1
    return pairs


def summarize(args, job_ids, broker_jobs, events, workers, enqueue_s, drain_s):
    completed = collections.Counter()
    runs = collections.Counter()
    failed = collections.Counter()
    for evs in events.values():
        for e in evs:
            if e[0] == "ack_ok":
                completed[e[2]] += 1
            elif e[0] == "start":
                runs[e[2]] += 1
            elif e[0] == "fail_ok":
                failed[e[2]] += 1
    states = collections.Counter(broker_pb2.JobState.Name(j.state) for j in broker_jobs.values())
    print(f"\n{len(job_ids)} jobs from {', '.join(PRODUCERS)} producers; "
          f"enqueued after {enqueue_s:.1f} s, drained after {drain_s:.1f} s; "
          f"final states {dict(states)}")
    print(f"{'language':<8} {'runs':>6} {'completed':>9} {'failed':>6} {'crashes':>7}")
    for lang in LANGS:
        print(f"{lang:<8} {runs[lang]:>6} {completed[lang]:>9} {failed[lang]:>6} "
              f"{workers.crashes[lang]:>7}")
    pairs = cross_pairs(events)
    print("\ncross-language retries (failed or crashed in row, completed in column)")
    print(f"{'':<8} " + " ".join(f"{b:>6}" for b in LANGS))
    for a in LANGS:
        print(f"{a:<8} " + " ".join(f"{pairs[(a, b)] if a != b else '-':>6}" for b in LANGS))
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
