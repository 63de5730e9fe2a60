#!/usr/bin/env python3
"""RQ peer of the jobwire benchmark (bench/README.md).

End to end: --workers RQ SimpleWorker processes (forked from this process)
and a producer at once, from the first enqueue to the last job run; prints
one JSON line.

  .venv/bin/python bench/peers/rq_bench.py --redis-url redis://127.0.0.1:6379 --jobs 20000

Settings:
- Queue.enqueue_many in batches of --batch (100) in one pipeline each (RQ's
  bulk enqueue), from one producer thread;
- jobs with result_ttl=0 (the job hash is deleted as soon as it succeeds, no
  result kept) and failure_ttl 60 s;
- --workers (4) processes each running a SimpleWorker (RQ's worker that runs
  the job in its own process instead of forking a work horse per job; the
  default forking Worker manages a few hundred jobs/s at best on this kind of
  machine and measures fork(), not the queue). An RQ worker runs one job at a
  time, so its concurrency is the number of worker processes: 4 on 2 cores.
  `--worker-class Worker` runs the forking default for comparison.

Completion is counted without Redis: a counter in shared memory
(multiprocessing.Value) incremented by the job function in the worker
processes; the last one sets an Event. So the Redis commands and CPU the
driver measures are RQ's own.
"""

import argparse
import json
import multiprocessing
import os
import signal
import sys
import threading
import time

import redis
import rq
from rq import Queue
from rq.worker import SimpleWorker, Worker

# The job function is looked up as "rq_bench.noop" by the forked workers:
# make that the module already loaded (and its shared counter), not a copy.
sys.modules.setdefault("rq_bench", sys.modules[__name__])

QUEUE = "bench"
JOB = "rq_bench.noop"  # by name: RQ refuses functions of __main__ in enqueue()
_count = None  # multiprocessing.Value('q'), set before the workers are forked
_last = None   # multiprocessing.Value('d'): time.monotonic() of the last job
_done = None   # multiprocessing.Event
_target = 0
_lat = None    # latency mode: multiprocessing.Array('d'), ms of job n at [n]


def noop(payload):
    if _lat is not None:
        _lat[payload["n"]] = (time.monotonic_ns() - payload["sent_ns"]) / 1e6
    with _count.get_lock():
        _count.value += 1
        last = _count.value == _target
    if last:
        _last.value = time.monotonic()
        _done.set()


def run_worker(url, index, worker_class, ready):
    conn = redis.Redis.from_url(url)
    cls = SimpleWorker if worker_class == "SimpleWorker" else Worker
    worker = cls([Queue(QUEUE, connection=conn)], connection=conn, name=f"bench-{os.getpid()}-{index}")
    ready.release()
    worker.work(burst=False, logging_level="WARNING", with_scheduler=False)


def latency_result(system, args, failed, latencies_ms):
    lat = sorted(latencies_ms)

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0.0

    return {"system": system, "jobs": args.jobs, "failed": failed, "offered_per_s": args.rate,
            "p50_ms": pct(0.5), "p99_ms": pct(0.99), "p999_ms": pct(0.999), "max_ms": pct(1),
            "instrumentation_commands": 0}


def main():
    global _count, _last, _done, _target, _lat
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--worker-class", default="SimpleWorker", choices=["SimpleWorker", "Worker"])
    parser.add_argument("--rate", type=float, default=0,
                        help="latency mode: offered jobs/s, one enqueue per job, open loop")
    parser.add_argument("--seconds", type=float, default=5, help="latency mode: how long")
    args = parser.parse_args()

    ctx = multiprocessing.get_context("fork")
    _count, _last, _done, _target = ctx.Value("q", 0), ctx.Value("d", 0.0), ctx.Event(), args.jobs
    if args.rate > 0:  # enqueue-to-handler latency (CLOCK_MONOTONIC is system-wide)
        args.jobs = _target = int(args.rate * args.seconds)
        _lat = ctx.Array("d", args.jobs, lock=False)
    ready = ctx.Semaphore(0)
    workers = [ctx.Process(target=run_worker, args=(args.redis_url, i, args.worker_class, ready))
               for i in range(args.workers)]
    for w in workers:
        w.start()
    for _ in workers:
        if not ready.acquire(timeout=60):
            print("rq workers did not start", file=sys.stderr)
            return 1
    time.sleep(0.3)  # workers blocked on their queue, like jobwire_bench

    conn = redis.Redis.from_url(args.redis_url)
    queue = Queue(QUEUE, connection=conn)
    failed = 0
    start = time.monotonic()
    for n in range(args.jobs if args.rate > 0 else 0):
        # Latency mode, open loop: job n is sent at start + n / rate.
        delay = start + n / args.rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        try:
            queue.enqueue(JOB, {"n": n, "sent_ns": time.monotonic_ns(), "pad": "jobwire-bench"},
                          result_ttl=0, failure_ttl=60)
        except Exception as exc:  # noqa: BLE001 - counted, reported
            failed += 1
            print(f"enqueue: {exc}", file=sys.stderr)
    for first in range(0, args.jobs if args.rate <= 0 else 0, args.batch):
        datas = [Queue.prepare_data(JOB, args=({"n": n, "sent_ns": time.monotonic_ns(),
                                                  "pad": "jobwire-bench"},),
                                    result_ttl=0, failure_ttl=60)
                 for n in range(first, min(first + args.batch, args.jobs))]
        try:
            with conn.pipeline() as pipe:
                queue.enqueue_many(datas, pipeline=pipe)
                pipe.execute()
        except Exception as exc:  # noqa: BLE001 - counted, reported
            failed += len(datas)
            print(f"enqueue_many: {exc}", file=sys.stderr)
    ok = failed == 0 and _done.wait(timeout=300)  # a failed enqueue: never all done
    end = _last.value
    for w in workers:
        os.kill(w.pid, signal.SIGTERM)  # warm shutdown
    for w in workers:
        w.join(timeout=20)
        if w.is_alive():
            w.kill()
    if not ok:
        print(f"timed out: {_count.value} of {args.jobs} done", file=sys.stderr)
        return 1
    if args.rate > 0:
        print(json.dumps(latency_result("RQ", args, failed, list(_lat))), flush=True)
        return 0 if failed == 0 else 1
    seconds = end - start
    print(json.dumps({
        "system": "RQ",
        "version": f"rq {rq.__version__}, redis-py {redis.__version__}",
        "jobs": args.jobs, "failed": failed, "seconds": seconds,
        "jobs_per_s": args.jobs / seconds,
        "settings": (f"enqueue_many x{args.batch} in one pipeline per batch, 1 producer; "
                     f"{args.workers} {args.worker_class} processes (one job at a time each); "
                     "result_ttl=0, failure_ttl=60; completion counted in shared memory"),
        "instrumentation_commands": 0,
    }), flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
