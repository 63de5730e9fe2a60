#!/usr/bin/env python3
"""RQ in the side-by-side benchmark (bench/README.md, "Side by side"): one
producer process and one worker process, the program protocol every system
follows (bench/side_protocol.md).

  .venv/bin/python bench/peers/rq_side.py --role worker --redis-url redis://127.0.0.1:6379 --jobs 50000
  .venv/bin/python bench/peers/rq_side.py --role producer --redis-url redis://127.0.0.1:6379 --jobs 50000

Worker: an RQ worker runs one job at a time, so the worker role runs
--workers (default 6: of 2, 3, 4, 6, 8 the fastest on 2 cores) SimpleWorker processes, its own children (forked; a
SimpleWorker runs the job in its own process, no work-horse fork per job);
--concurrency is not used (RQ has no concurrency inside one process). A job
counts as done when the job function returns (RQ gives no cheap completion
confirmation), counted in shared memory (multiprocessing.Value / Array) of
this process and its children, not in Redis. "ready" once every child is
registered as an RQ worker.

Producer: Queue.enqueue_many of --chunk jobs in one Redis pipeline per chunk,
one thread; with --rate, one Queue.enqueue per job, handed at its scheduled
time to --senders threads (one Redis connection each), open loop. Jobs have
result_ttl=0 (the job hash is deleted on success).
"""

import argparse
import ctypes
import json
import multiprocessing
import os
import queue as queue_mod
import signal
import sys
import threading
import time

import redis
import rq
from rq import Queue
from rq.worker import SimpleWorker

# The workers look the job function up as "rq_side.noop": make that this
# module (and its shared counters), not a second copy.
sys.modules.setdefault("rq_side", sys.modules[__name__])

SYSTEM = "rq"
JOB = "rq_side.noop"
_shared = None  # the worker role's shared memory, set before the children fork


def now_ms():
    return time.time() * 1000


def emit(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def payload(i, t_ms):
    """The protocol's 64-byte JSON object {"i":..,"t":..,"p":"x..."}."""
    head = '{"i":%d,"t":%.3f,"p":"' % (i, t_ms)
    return head + "x" * max(0, 64 - len(head) - 2) + '"}'


def latency_summary(ms):
    ms = sorted(ms)

    def pct(p):
        return ms[min(len(ms) - 1, int(p * len(ms)))] if ms else 0.0

    return {"n": len(ms), "mean": sum(ms) / len(ms) if ms else 0.0, "p50": pct(0.5),
            "p90": pct(0.9), "p99": pct(0.99), "max": ms[-1] if ms else 0.0}


class Shared:
    """Completion counters in shared memory (fork context)."""

    def __init__(self, ctx, jobs):
        self.jobs = jobs
        self.count = ctx.Value("q", 0)  # its lock guards first / last too
        self.first = ctx.Value("d", 0.0, lock=False)
        self.last = ctx.Value("d", 0.0, lock=False)
        self.latency = ctx.Array("d", jobs, lock=False)  # ms, job i at [i]
        self.seen = ctx.Array("b", jobs, lock=False)
        self.done = ctx.Event()


def noop(body):
    start = now_ms()
    job = json.loads(body)
    end = now_ms()  # the function returns: counted done (no confirmation in RQ)
    s = _shared
    i = job["i"]
    if 0 <= i < s.jobs:
        s.latency[i] = start - job["t"]
        s.seen[i] = 1
    with s.count.get_lock():
        s.count.value += 1
        if s.count.value == 1:
            s.first.value = end
        if end > s.last.value:
            s.last.value = end
        if s.count.value == s.jobs:
            s.done.set()


def child(url, queue_name, index):
    try:  # die with the worker role's process
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    conn = redis.Redis.from_url(url)
    worker = SimpleWorker([Queue(queue_name, connection=conn)], connection=conn,
                          name=f"bench-{os.getppid()}-{index}")
    worker.work(burst=False, logging_level="WARNING", with_scheduler=False)


def run_worker(args):
    global _shared
    ctx = multiprocessing.get_context("fork")
    _shared = Shared(ctx, args.jobs)
    children = [ctx.Process(target=child, args=(args.redis_url, args.queue, i))
                for i in range(args.workers)]
    for c in children:
        c.start()

    def stop_children(*_):
        for c in children:
            if c.is_alive():
                os.kill(c.pid, signal.SIGTERM)  # RQ's warm shutdown

    signal.signal(signal.SIGTERM, lambda *a: (stop_children(), os._exit(1)))
    conn = redis.Redis.from_url(args.redis_url)
    deadline = time.monotonic() + 60
    names = {f"bench-{os.getpid()}-{i}".encode() for i in range(args.workers)}
    while True:  # every child registered (its work loop is starting)
        registered = {k.rsplit(b":", 1)[-1] for k in conn.smembers("rq:workers")}
        if names <= registered:
            break
        if time.monotonic() > deadline or not all(c.is_alive() for c in children):
            print("rq workers did not start", file=sys.stderr)
            stop_children()
            return 1
        time.sleep(0.02)
    conn.close()
    time.sleep(0.2)  # their BLPOPs are out
    emit({"event": "ready"})
    if not _shared.done.wait(timeout=600):
        print(f"timed out: {_shared.count.value} of {args.jobs} done", file=sys.stderr)
        stop_children()
        return 1
    with _shared.count.get_lock():
        lat = [_shared.latency[i] for i in range(args.jobs) if _shared.seen[i]]
        emit({"event": "done", "completed": _shared.count.value,
              "first_done_ms": _shared.first.value, "last_done_ms": _shared.last.value,
              "latency_ms": latency_summary(lat)})
    stop_children()
    deadline = time.monotonic() + 4.5
    for c in children:
        c.join(timeout=max(0.0, deadline - time.monotonic()))
    for c in children:
        if c.is_alive():
            c.kill()
            c.join(timeout=1)
    return 0


def run_producer(args):
    failed = [0]
    senders = args.senders if args.rate > 0 else 1
    conns = [redis.Redis.from_url(args.redis_url) for _ in range(senders)]
    for conn in conns:
        conn.ping()  # connects; enqueues nothing
    queues = [Queue(args.queue, connection=conn) for conn in conns]
    emit({"event": "ready"})
    sys.stdin.readline()
    start_ms = now_ms()
    if args.rate > 0:
        todo = queue_mod.SimpleQueue()

        def sender(q):
            while True:
                item = todo.get()
                if item is None:
                    return
                i, t_ms = item
                try:
                    q.enqueue(JOB, payload(i, t_ms), result_ttl=0, failure_ttl=60)
                except Exception as exc:  # noqa: BLE001 - counted, reported
                    failed[0] += 1
                    print(f"enqueue: {exc}", file=sys.stderr)

        threads = [threading.Thread(target=sender, args=(q,)) for q in queues]
        for t in threads:
            t.start()
        start = time.monotonic()
        for i in range(args.jobs):  # open loop: job i handed over at start + i / rate
            offset = i / args.rate
            delay = start + offset - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            todo.put((i, start_ms + offset * 1000))
        for _ in threads:
            todo.put(None)
        for t in threads:
            t.join()
    else:
        q, conn = queues[0], conns[0]
        for first in range(0, args.jobs, args.chunk):
            t_ms = now_ms()
            datas = [Queue.prepare_data(JOB, args=(payload(i, t_ms),), result_ttl=0,
                                        failure_ttl=60)
                     for i in range(first, min(first + args.chunk, args.jobs))]
            try:
                with conn.pipeline() as pipe:
                    q.enqueue_many(datas, pipeline=pipe)
                    pipe.execute()
            except Exception as exc:  # noqa: BLE001 - counted, reported
                failed[0] += len(datas)
                print(f"enqueue_many: {exc}", file=sys.stderr)
    done = {"event": "done", "enqueued": args.jobs - failed[0], "start_ms": start_ms,
            "end_ms": now_ms()}
    if failed[0]:
        done["failed"] = failed[0]
    emit(done)
    return 1 if failed[0] else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", required=True, choices=["producer", "worker"])
    parser.add_argument("--addr", default="", help="unused (jobwire programs)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--queue", default="bench")
    parser.add_argument("--jobs", type=int, default=50000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50,
                        help="unused: RQ runs one job at a time per process (see --workers)")
    parser.add_argument("--rate", type=float, default=0)
    # RQ's own knobs (the defaults are the fastest shape found, see "settings")
    parser.add_argument("--workers", type=int, default=6, help="SimpleWorker child processes")
    parser.add_argument("--senders", type=int, default=4, help="--rate: sender threads")
    args = parser.parse_args()
    args.chunk = max(1, args.chunk)
    if args.role == "worker":
        settings = (f"{args.workers} SimpleWorker child processes of the worker process, one "
                    f"job at a time each (--concurrency {args.concurrency} not applicable); "
                    "done counted when the job function returns (RQ gives no completion "
                    "confirmation), in shared memory")
    elif args.rate > 0:
        settings = (f"one Queue.enqueue per job, open loop at {args.rate:g}/s, handed to "
                    f"{args.senders} sender threads (one connection each); result_ttl=0")
    else:
        settings = (f"Queue.enqueue_many x{args.chunk} in one Redis pipeline per chunk, "
                    "1 thread; result_ttl=0")
    emit({"event": "info", "system": SYSTEM,
          "version": f"rq {rq.__version__}, redis-py {redis.__version__}", "settings": settings})
    return run_worker(args) if args.role == "worker" else run_producer(args)


if __name__ == "__main__":
    sys.exit(main())
