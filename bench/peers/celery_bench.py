#!/usr/bin/env python3
"""Celery peer of the jobwire benchmark (bench/README.md).

End to end with the Redis broker: a Celery worker (forked from this process,
started with Celery's own `worker` command line) and producer threads at
once, from the first apply_async to the last task run; prints one JSON line.

  .venv/bin/python bench/peers/celery_bench.py --redis-url redis://127.0.0.1:6379 --jobs 20000

Settings (Celery's documented throughput knobs, "Optimizing" guide):
- result backend disabled (task_ignore_result, no result_backend): no result
  writes to Redis;
- worker: --pool threads (default) --concurrency 64 --prefetch-multiplier 16,
  --without-gossip --without-mingle --without-heartbeat (no per-worker
  broadcast traffic through Redis). Threads rather than prefork because the
  task is a no-op: prefork would add a pipe hop to a child process per task
  and 64 child processes on 2 cores; `--pool prefork --concurrency 2` is
  available to compare;
- early ack (Celery's default, task_acks_late off): the message is acked when
  the worker receives it, before the task runs (at-most-once), unlike jobwire,
  BullMQ, asynq and RQ, which finish a job after the handler ran;
- Celery has no bulk publish for the Redis transport (group() / chunks()
  publish one message per task, or change what a message is): --producers
  threads (4) call apply_async, one message per job, through Celery's
  producer pool.

Completion is counted without Redis: a counter in shared memory
(multiprocessing.Value), incremented by the task in the forked worker
process (or its prefork children); the last one sets an Event. So the
Redis commands and CPU the driver measures are Celery's own.
"""

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time

import celery
from celery import Celery
from celery.signals import worker_ready

# The worker is forked from this process and imports nothing again: make the
# module importable under its own name too, so that it is one module.
sys.modules.setdefault("celery_bench", sys.modules[__name__])

QUEUE = "bench"
app = Celery("celery_bench")
_count = None  # multiprocessing.Value('q'), set before the worker is forked
_last = None   # multiprocessing.Value('d'): time.monotonic() of the last task
_done = None   # multiprocessing.Event
_target = 0
_lat = None    # latency mode: multiprocessing.Array('d'), ms of job n at [n]


@app.task(name="bench.noop", ignore_result=True)
def noop(payload):
    if _lat is not None:
        _lat[payload["n"]] = (time.monotonic_ns() - payload["sent_ns"]) / 1e6
    with _count.get_lock():
        _count.value += 1
        last = _count.value == _target
    if last:
        _last.value = time.monotonic()
        _done.set()


@worker_ready.connect
def _ready(**_):
    path = os.environ.get("CELERY_BENCH_READY")
    if path:
        open(path, "w").close()


def run_worker(args):
    os.dup2(2, 1)  # the banner: stdout carries only the result line
    argv = ["worker", f"--pool={args.pool}", f"--concurrency={args.concurrency}",
            f"--prefetch-multiplier={args.prefetch_multiplier}", f"--queues={QUEUE}",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--loglevel=WARNING", "--hostname=bench@%h"]
    app.worker_main(argv=argv)


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
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--pool", default="threads", choices=["threads", "prefork", "solo"])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--prefetch-multiplier", type=int, default=16)
    parser.add_argument("--rate", type=float, default=0,
                        help="latency mode: offered jobs/s, one enqueue per job, open loop")
    parser.add_argument("--seconds", type=float, default=5, help="latency mode: how long")
    args = parser.parse_args()

    app.conf.update(
        broker_url=args.redis_url,
        result_backend=None,
        task_ignore_result=True,
        task_default_queue=QUEUE,
        worker_prefetch_multiplier=args.prefetch_multiplier,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        worker_send_task_events=False,
        task_send_sent_event=False,
    )
    ctx = multiprocessing.get_context("fork")
    _count, _last, _done, _target = ctx.Value("q", 0), ctx.Value("d", 0.0), ctx.Event(), args.jobs
    if args.rate > 0:  # enqueue-to-handler latency (CLOCK_MONOTONIC is system-wide)
        args.jobs = _target = int(args.rate * args.seconds)
        _lat = ctx.Array("d", args.jobs, lock=False)

    ready = os.path.join(tempfile.mkdtemp(prefix="celery-bench-"), "ready")
    os.environ["CELERY_BENCH_READY"] = ready
    worker = ctx.Process(target=run_worker, args=(args,), daemon=False)
    worker.start()
    deadline = time.monotonic() + 60
    while not os.path.exists(ready):
        if not worker.is_alive() or time.monotonic() > deadline:
            print("celery worker did not start", file=sys.stderr)
            return 1
        time.sleep(0.02)
    time.sleep(0.3)  # consumer blocked on its queue, like jobwire_bench

    failed = [0]

    def produce(p):
        with app.producer_or_acquire() as producer:
            for n in range(p, args.jobs, args.producers):
                payload = {"n": n, "sent_ns": time.monotonic_ns(), "pad": "jobwire-bench"}
                try:
                    noop.apply_async(args=(payload,), queue=QUEUE, producer=producer)
                except Exception as exc:  # noqa: BLE001 - counted, reported
                    failed[0] += 1
                    print(f"apply_async: {exc}", file=sys.stderr)

    def offer():
        # Open loop: job n is sent at start + n / rate, whatever came before.
        with app.producer_or_acquire() as producer:
            for n in range(args.jobs):
                delay = start + n / args.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                payload = {"n": n, "sent_ns": time.monotonic_ns(), "pad": "jobwire-bench"}
                try:
                    noop.apply_async(args=(payload,), queue=QUEUE, producer=producer)
                except Exception as exc:  # noqa: BLE001 - counted, reported
                    failed[0] += 1
                    print(f"apply_async: {exc}", file=sys.stderr)

    start = time.monotonic()
    threads = [threading.Thread(target=offer)] if args.rate > 0 else [
        threading.Thread(target=produce, args=(p,)) for p in range(args.producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = failed[0] == 0 and _done.wait(timeout=300)  # a failed publish: never all done
    end = _last.value
    worker.terminate()  # SIGTERM: warm shutdown
    worker.join(timeout=20)
    if worker.is_alive():
        worker.kill()
    if not ok:
        print(f"timed out: {_count.value} of {args.jobs} done", file=sys.stderr)
        return 1
    if args.rate > 0:
        print(json.dumps(latency_result("Celery", args, failed[0], list(_lat))), flush=True)
        return 0 if failed[0] == 0 else 1
    seconds = end - start
    import kombu
    import redis
    print(json.dumps({
        "system": "Celery",
        "version": f"celery {celery.__version__}, kombu {kombu.__version__}, redis-py {redis.__version__}",
        "jobs": args.jobs, "failed": failed[0], "seconds": seconds,
        "jobs_per_s": args.jobs / seconds,
        "settings": (f"Redis broker, no result backend (ignore_result); apply_async one message per job "
                     f"from {args.producers} threads (no bulk publish); worker --pool {args.pool} "
                     f"--concurrency {args.concurrency} --prefetch-multiplier {args.prefetch_multiplier} "
                     "--without-gossip/mingle/heartbeat; early ack (Celery default); "
                     "completion counted in shared memory"),
        "instrumentation_commands": 0,
    }), flush=True)
    return 0 if failed[0] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
