#!/usr/bin/env python3
"""jobwire fault-injection ("chaos") test (tests/chaos/README.md).

A load of Python producers and workers (the jobwire client) runs against two
or more broker replicas sharing one Redis with AOF, while a seeded nemesis
injects, one at a time and each for a bounded time:

  worker_kill       kill -9 of a worker process that is mid-job (restarted)
  worker_pause      SIGSTOP of a worker mid-job for longer than its lease,
                    then SIGCONT: its late Ack must be refused
  broker_kill       kill -9 of a broker replica, restarted after a while
  broker_term       SIGTERM (drain) of a replica, restarted after a while
  broker_freeze     SIGSTOP / SIGCONT of a replica
  broker_partition  a replica cut off from Redis: every connection it has to
                    Redis is killed (CLIENT KILL LADDR) every 100 ms
  redis_kill        kill -9 of Redis, restarted from its AOF
  redis_pause       Redis frozen (SIGSTOP, or CLIENT PAUSE ALL) for longer
                    than the clients' deadlines

With --redis sentinel (1 master, 1 replica, 3 sentinels) or --redis cluster
(3 masters, 3 replicas) the brokers run in that mode, redis_kill and
redis_pause are replaced by

  master_kill       kill -9 of the chaos queue's master; its replica is
                    promoted; the old one restarts and rejoins as a replica

and acknowledged enqueues that asynchronous replication lost (NOT_FOUND,
enqueued within a window around a master kill) are reported as
lost_in_failover, not lost.

Every operation goes to a history (one JSONL file per process). After the
faults the producers stop, everything heals, the workers drain the queue (and
finish every run in flight), and the checker judges from the histories (a job
is completed only when a worker logged ack_ok; runs are the workers' start
records, one per lease token), against GetJob of every job:

  lost                        acknowledged (or landed) enqueue, never completed
                              nor dead; or NOT_FOUND within the retention
  unexpected                  a run of a job never (successfully) enqueued
  completed twice             more than one ack_ok for one uid
  stale acks accepted         an ack_ok for a run of a job that another run
                              (another lease token) started after it
  attempts beyond max         more deliveries than max_attempts
  idempotency broken          one uid, two job ids
  completed without ack       COMPLETED, but no run's Ack was ok or unknown
  ack_ok not durable          an ack_ok for a job the broker has not COMPLETED
  dead unexplained            DEAD with fewer recorded deliveries than
                              max_attempts (the handlers fail only retryably)
  runs without outcome        a run no record settles or explains
  fault kinds without effect  a fault kind that never took effect

Exit status 0 when all of them are zero (and no process misbehaved),
otherwise 1. Only loopback is used (127.0.0.x); every loop is bounded.
"""

import argparse
import collections
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from chaos_system import (HERE, PY, QUEUE, REPO, Broker, Workers, log,
                          signal_proc)
from failover_redis import make_redis
from checker import (VIOLATIONS, check, failover_windows, get_jobs, producer_view,
                     read_history, resolve_unknown)
from nemesis import Nemesis, faults_for, full_round_s, make_schedule

# --------------------------------------------------------------------------

def run(args):
    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="jobwire-chaos-")
    schedule = make_schedule(rng, args.duration, args)
    FAULTS = faults_for(args.redis)
    redis = make_redis(args.redis, workdir, args.appendfsync, args.brokers, aof=args.aof,
                       cut_ms=args.cut_replication_ms)
    print(f"jobwire chaos: seed {args.seed}, {redis.describe()}, "
          f"{args.brokers} brokers, {args.workers} workers x {args.concurrency}, "
          f"{args.producers} producers x {args.rate}/s, lease {args.lease_ms} ms, "
          f"faults for {args.duration:.0f} s; workdir {workdir}")
    print_schedule("planned fault schedule", [dict(planned=p, kind=k, target=t, secs=s)
                                              for p, k, t, s in schedule])
    failures = []
    # Every kind must take effect; a run too short to hold one of each
    # requires only the kinds it schedules (and says so).
    scheduled = {k for _, k, _, _ in schedule}
    required = [k for k in FAULTS if k in scheduled]
    if args.duration >= full_round_s(args):
        required = list(FAULTS)
        if scheduled != set(FAULTS):
            failures.append(f"fault kinds not scheduled: {sorted(set(FAULTS) - scheduled)}")
    else:
        print(f"note: {args.duration:.0f} s of faults cannot hold every kind (that needs "
              f"{full_round_s(args):.0f} s); not scheduled: {sorted(set(FAULTS) - scheduled)}")
    brokers = []
    workers = None
    producers = []
    stop_event = threading.Event()
    nemesis = None
    started = time.time()
    try:
        redis.start()
        for i in range(args.brokers):
            b = Broker(i, args.broker, workdir, redis, args)
            b.start()
            brokers.append(b)
        workers = Workers(workdir, brokers, args)
        for i in range(workers.n):
            workers.start(i)
        pnames = []
        for i in range(args.producers):
            order = [b.addr for b in brokers]
            k = i % len(order)
            addr = "ipv4:" + ",".join(order[k:] + order[:k])
            name = f"p{i}"
            pnames.append(name)
            producers.append(subprocess.Popen(
                [PY, os.path.join(HERE, "producer.py"), "--addr", addr, "--name", name,
                 "--history", os.path.join(workdir, f"producer-{name}.jsonl"),
                 "--queue", QUEUE, "--rate", str(args.rate)],
                stdout=open(os.path.join(workdir, f"producer-{name}.stderr"), "wb"),
                stderr=subprocess.STDOUT))

        # ---- fault phase
        t0 = time.time()
        nemesis = Nemesis(schedule, t0, redis, brokers, workers, rng, stop_event)
        nemesis.start()
        end = t0 + args.duration
        last_report = 0
        # the phase lasts until the nemesis has run its whole schedule (it
        # falls behind its plan when a drain or a restart takes long)
        while time.time() < end or (nemesis.is_alive() and time.time() < end + 30):
            supervise(redis, brokers, workers, producers, failures)
            if time.time() - last_report > 15:
                last_report = time.time()
                log(f"t={time.time() - t0:.0f}s {progress(workdir)}")
            time.sleep(0.2)
        stop_event.set()
        nemesis.join(timeout=30)
        if nemesis.is_alive():
            failures.append("nemesis did not finish its last fault within 30 s")
        fault_end = time.time()

        # ---- stop the load, heal
        for p in producers:
            signal_proc(p, signal.SIGTERM)
        for p in producers:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                failures.append("a producer did not stop within 15 s of SIGTERM")
            if p.returncode not in (0, -9):
                failures.append(f"producer exited with {p.returncode}")
        heal(redis, brokers, workers)
        log(f"load stopped and healed; {progress(workdir)}; draining")

        # ---- drain: every acknowledged (or landed) job COMPLETED or DEAD
        from jobwire import Client, JobState
        client = Client("ipv4:" + ",".join(b.addr for b in brokers), timeout=5)
        pevents, bad_p = read_history(glob.glob(os.path.join(workdir, "producer-*.jsonl")))
        pview = producer_view(pevents)
        unresolved = [u for u, v in pview.items() if not v["ok"] and v["unknown"]]
        landed = resolve_unknown(redis.master_port(), unresolved)
        ids = {j for v in pview.values() for j in v["ok"]} | {j for j in landed.values() if j}
        pending = set(ids)
        drain_deadline = time.time() + args.drain_timeout
        while pending and time.time() < drain_deadline:
            supervise(redis, brokers, workers, [], failures)
            jobs = get_jobs(client, pending)
            pending = {j for j, job in jobs.items()
                       if job is not None and job.state not in (JobState.COMPLETED,
                                                                JobState.DEAD)}
            if pending:
                time.sleep(1.0)
        # ... and every run still in flight settled (a superseded run's late
        # Ack must be in the history before the checker judges it)
        while time.time() < drain_deadline:
            supervise(redis, brokers, workers, [], failures)
            in_flight = sum(workers.in_flight(i) for i in range(workers.n))
            if not in_flight:
                break
            time.sleep(0.25)
        in_flight = sum(workers.in_flight(i) for i in range(workers.n))
        drained = time.time()
        log(f"drain: {len(pending)} of {len(ids)} jobs not settled, {in_flight} runs in "
            f"flight after {drained - fault_end:.0f} s")
        workers.stop_all(timeout=15)
        failures += [f"worker {n} {s}" for n, s in workers.unexpected_exits]

        # ---- final state and the checker
        wevents, bad_w = read_history(
            glob.glob(os.path.join(workdir, "worker-*.jsonl")),
            killed_paths={os.path.join(workdir, f"worker-{name}.jsonl") for name in workers.killed})
        ids |= {e["job"] for e in wevents if "job" in e}
        jobs = get_jobs(client, ids)
        client.close()
        if bad_p or bad_w:
            failures.append(f"{bad_p + bad_w} torn history lines")
        windows = failover_windows(nemesis.done)
        res, info, detail = check(pview, wevents, jobs, landed, faults=nemesis.done,
                                  required_faults=required, killed=workers.killed,
                                  failover_windows=windows,
                                  allow_failover_loss=args.redis != "standalone")
        info["runs_in_flight_at_sigterm"] = in_flight
        failures += nemesis.errors
        for b in brokers:
            unexpected = [s for s, why in b.exits if why == "unexpected"]
            if unexpected:
                failures.append(f"broker b{b.index} exited by itself: {unexpected}")

        # ---- report
        print()
        print_schedule("executed fault schedule", nemesis.done)
        kinds = collections.Counter(r["kind"] for r in nemesis.done)
        print("faults injected: " + ", ".join(f"{k} {kinds[k]}" for k in FAULTS))
        print(f"\ntimings: fault phase {fault_end - t0:.0f} s, drain "
              f"{drained - fault_end:.0f} s, total {time.time() - started:.0f} s")
        print("\nhistory:")
        for k, v in info.items():
            print(f"  {k:<36} {v}")
        print("\nchecker:")
        for k, v in res.items():
            print(f"  {k:<36} {v}")
            for line in detail.get(k, [])[:10]:
                print(f"      {line}")
        if args.redis != "standalone":
            print("\nfailover (reported, not violations):")
            for k in ("lost_in_failover", "ack_ok_lost_in_failover", "job_ids_reused"):
                print(f"  {k:<36} {info[k]}")
                for line in detail.get(k, [])[:10]:
                    print(f"      {line}")
        for k, v in res.items():
            if v:
                failures.append(f"{k} = {v}")
        summary = {"seed": args.seed, "redis": args.redis, "aof": args.aof,
                   "cut_replication_ms": args.cut_replication_ms,
                   "appendfsync": args.appendfsync,
                   "duration": args.duration, "counts": res, "info": info,
                   "detail": {k: v[:50] for k, v in detail.items()},
                   "faults": nemesis.done, "failures": failures,
                   "timings": {"faults_s": round(fault_end - t0),
                               "drain_s": round(drained - fault_end),
                               "total_s": round(time.time() - started)}}
        with open(os.path.join(workdir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1, default=str)
        if args.summary:
            with open(args.summary, "w") as f:
                json.dump(summary, f, indent=1, default=str)
        return failures
    finally:
        stop_event.set()
        for p in producers:
            if p.poll() is None:
                p.kill()
        if workers is not None:
            for p in workers.procs:
                if p is not None and p.poll() is None:
                    signal_proc(p, signal.SIGCONT)
                    p.kill()
        for b in brokers:
            if b.alive():
                signal_proc(b.proc, signal.SIGCONT)
                b.proc.terminate()
                try:
                    b.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    b.proc.kill()
        redis.stop()
        if args.keep:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def supervise(redis, brokers, workers, producers, failures):
    """Restart what died without the nemesis asking (and record it)."""
    for b in brokers:
        if not b.held and b.proc is not None and b.proc.poll() is not None:
            b.exits.append((b.proc.returncode, "unexpected"))
            log(f"broker b{b.index} exited by itself with {b.proc.returncode}; restarting")
            b.start()
    workers.poll()
    for p in producers:
        if p.poll() is not None and p.returncode != 0:
            failures.append(f"producer exited with {p.returncode} during the run")
            producers.remove(p)


def heal(redis, brokers, workers):
    redis.heal()
    for b in brokers:
        signal_proc(b.proc, signal.SIGCONT)
        b.held = False
        if not b.alive():
            b.start()
    with workers.lock:
        for i, p in enumerate(workers.procs):
            signal_proc(p, signal.SIGCONT)
            workers.held[i] = False
    workers.poll()


def progress(workdir):
    counts = collections.Counter()
    for path in glob.glob(os.path.join(workdir, "*.jsonl")):
        with open(path) as f:
            for line in f:
                try:
                    counts[json.loads(line)["ev"]] += 1
                except ValueError:
                    pass
    return ("enqueue ok %(ok)d unknown %(unknown)d failed %(failed)d; runs %(start)d "
            "ack_ok %(ack_ok)d ack_error %(ack_error)d ack_unknown %(ack_unknown)d "
            "fail_ok %(fail_ok)d expired_dropped %(expired_dropped)d" % counts)


def print_schedule(title, recs):
    print(f"{title} ({len(recs)} faults):")
    for r in recs:
        extra = {k: v for k, v in r.items() if k not in (
            "planned", "kind", "target", "secs", "t_start", "t_end", "t_stopped", "held_tokens")}
        print(f"  t={r['planned']:>6.1f}s  {r['kind']:<17} {r['target']:<20} {r['secs']:>4.1f}s"
              + (f"  {extra}" if extra else ""))
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default=os.path.join(REPO, "build", "broker",
                                                         "jobwire-broker"))
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds of faults (default 60, or 240 with --long)")
    parser.add_argument("--long", action="store_true", help="the long run (240 s of faults)")
    parser.add_argument("--redis", choices=["standalone", "sentinel", "cluster"],
                        default="standalone",
                        help="standalone: one Redis with AOF (default); sentinel: 1 master + 1 "
                        "replica + 3 sentinels; cluster: 3 masters + 3 replicas")
    parser.add_argument("--cut-replication-ms", type=int, default=0,
                        help="sentinel / cluster, an experiment: cut the master's replication "
                        "this long before each master_kill, so that the failover loses the "
                        "writes acknowledged meanwhile (lost_in_failover; the Acks it undoes "
                        "fail the run)")
    parser.add_argument("--appendfsync", choices=["always", "everysec"], default="always")
    parser.add_argument("--aof", action="store_true",
                        help="sentinel / cluster: AOF on the data nodes too (default: none, "
                        "the replicas are the durability)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--rate", type=float, default=10.0, help="jobs/s per producer")
    parser.add_argument("--lease-ms", type=int, default=2000)
    parser.add_argument("--shutdown-grace-ms", type=int, default=2000)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--drain-timeout", type=float, default=None)
    parser.add_argument("--summary", default="", help="also write the summary JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if args.duration is None:
        args.duration = 240.0 if args.long else 60.0
    if args.drain_timeout is None:
        args.drain_timeout = 90.0 if args.long else 45.0
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 10**6)
    if args.cut_replication_ms and args.redis == "standalone":
        parser.error("--cut-replication-ms needs --redis sentinel or cluster")
    if args.brokers < 2:
        parser.error("--brokers must be at least 2")
    failures = run(args)
    print()
    if failures:
        print(f"FAILED (seed {args.seed}): {len(failures)} violation(s)")
        for f in failures[:50]:
            print("  " + f)
        return 1
    print(f"PASSED (seed {args.seed}, --redis {args.redis}): " + " = ".join(VIOLATIONS) + " = 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
