#!/usr/bin/env python3
"""Celery in the side-by-side benchmark (bench/README.md, "Side by side"):
one producer process and one worker process, the program protocol every
system follows (bench/side_protocol.md).

  .venv/bin/python bench/peers/celery_side.py --role worker --redis-url redis://127.0.0.1:6379 --jobs 50000
  .venv/bin/python bench/peers/celery_side.py --role producer --redis-url redis://127.0.0.1:6379 --jobs 50000

Worker: Celery's own worker in this process (app.worker_main, the `celery
worker` command line), --pool (default threads) --concurrency K,
--prefetch-multiplier (default 1), --without-gossip/mingle/heartbeat, no
result backend (ignore_result), early ack (Celery's default). Celery gives
no cheap completion confirmation: a job counts as done when the task
function returns, counted in this process. "ready" is printed on Celery's
worker_ready signal (consumer started).

Producer (--publish): "batch" (default) = Task.apply_async, one message per
call, inside kombu's Producer.batch(max_size=--chunk) on one producer: kombu
5.7 buffers the LPUSHes of a chunk in one Redis pipeline (the nearest thing
to a bulk publish Celery's stack has); "single" = apply_async one LPUSH per
call on one producer (one thread); "threads" = apply_async from --producers
threads, each with its own producer of Celery's pool. With --rate: one
apply_async per job (no batch), handed at its scheduled time to --producers
sender threads (own producer each), open loop.
"""

import argparse
import os
import sys


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", required=True, choices=["producer", "worker"])
    parser.add_argument("--addr", default="", help="unused (jobwire programs)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--queue", default="bench")
    parser.add_argument("--jobs", type=int, default=50000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rate", type=float, default=0)
    # Celery's own knobs (the defaults are the fastest shape found, see "settings")
    parser.add_argument("--pool", default="threads", choices=["threads", "gevent", "solo"])
    parser.add_argument("--prefetch-multiplier", type=int, default=1)
    parser.add_argument("--publish", default="batch", choices=["batch", "single", "threads"])
    parser.add_argument("--producers", type=int, default=4,
                        help="sender threads (--publish threads, and --rate)")
    return parser.parse_args()


ARGS = parse_args()
if ARGS.role == "worker" and ARGS.pool == "gevent":
    from gevent import monkey  # before anything else is imported

    monkey.patch_all()

import json  # noqa: E402
import queue as queue_mod  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import celery  # noqa: E402
import kombu  # noqa: E402
import redis  # noqa: E402
from celery import Celery  # noqa: E402
from celery.signals import worker_ready  # noqa: E402

# The worker looks the task up by name in this module; one module, not two.
sys.modules.setdefault("celery_side", sys.modules[__name__])

SYSTEM = "celery"
_out = sys.stdout  # replaced in the worker: Celery prints its banner to fd 1


def now_ms():
    return time.time() * 1000


def emit(line):
    _out.write(json.dumps(line) + "\n")
    _out.flush()


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


app = Celery("celery_side")
app.conf.update(
    broker_url=ARGS.redis_url,
    result_backend=None,
    task_ignore_result=True,
    task_default_queue=ARGS.queue,
    worker_prefetch_multiplier=ARGS.prefetch_multiplier,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    worker_send_task_events=False,
    task_send_sent_event=False,
)

_lock = threading.Lock()
_latencies = []
_state = {"done": 0, "first": 0.0, "last": 0.0}
_all_done = threading.Event()


@app.task(name="bench.noop", ignore_result=True)
def noop(body):
    start = now_ms()
    job = json.loads(body)
    end = now_ms()  # the function returns: counted done (no confirmation in Celery)
    with _lock:
        _latencies.append(start - job["t"])
        _state["done"] += 1
        if _state["done"] == 1:
            _state["first"] = end
        _state["last"] = end
        if _state["done"] == ARGS.jobs:
            _all_done.set()


@worker_ready.connect
def _on_ready(**_):
    def later():
        time.sleep(0.2)  # the consumer's BRPOP is out
        emit({"event": "ready"})

    threading.Thread(target=later, daemon=True).start()


def exit_soon(code, seconds=5.0):
    timer = threading.Timer(seconds, lambda: os._exit(code))
    timer.daemon = True
    timer.start()


def run_worker(args):
    global _out
    _out = os.fdopen(os.dup(1), "w")  # the protocol's lines
    os.dup2(2, 1)  # Celery's banner and prints: stderr

    def finish():
        if not _all_done.wait(timeout=600):
            print(f"timed out: {_state['done']} of {args.jobs} done", file=sys.stderr)
            os._exit(1)
        with _lock:
            emit({"event": "done", "completed": _state["done"], "first_done_ms": _state["first"],
                  "last_done_ms": _state["last"], "latency_ms": latency_summary(_latencies)})
        exit_soon(0)
        os.kill(os.getpid(), signal.SIGTERM)  # Celery's warm shutdown

    threading.Thread(target=finish, daemon=True).start()
    argv = ["worker", f"--pool={args.pool}", f"--concurrency={args.concurrency}",
            f"--prefetch-multiplier={args.prefetch_multiplier}", f"--queues={args.queue}",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--loglevel=WARNING", f"--hostname=bench-{os.getpid()}@%h"]
    try:
        app.worker_main(argv=argv)
    except SystemExit as exc:
        return exc.code or 0
    return 0


def warm(producers):
    """Connect every producer that will publish: one PING each (no job)."""
    for producer in producers:
        producer.channel.client.ping()


def run_producer(args):
    failed = [0]
    n_producers = args.producers if (args.rate > 0 or args.publish == "threads") else 1
    # Hold n producers of Celery's pool at once so that each is a connection of its own.
    holders = [app.producer_pool.acquire(block=True) for _ in range(n_producers)]
    warm(holders)
    emit({"event": "ready"})
    sys.stdin.readline()
    start_ms = now_ms()

    def send(producer, i, t_ms):
        try:
            noop.apply_async(args=(payload(i, t_ms),), queue=args.queue, producer=producer)
        except Exception as exc:  # noqa: BLE001 - counted, reported
            failed[0] += 1
            print(f"apply_async: {exc}", file=sys.stderr)

    if args.rate > 0:
        # Open loop: job i is handed at start + i / rate to a free sender thread.
        todo = queue_mod.SimpleQueue()

        def sender(producer):
            while True:
                item = todo.get()
                if item is None:
                    return
                send(producer, *item)

        threads = [threading.Thread(target=sender, args=(p,)) for p in holders]
        for t in threads:
            t.start()
        start = time.monotonic()
        for i in range(args.jobs):
            offset = i / args.rate
            delay = start + offset - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            todo.put((i, start_ms + offset * 1000))
        for _ in threads:
            todo.put(None)
        for t in threads:
            t.join()
    elif args.publish == "batch":
        producer = holders[0]
        for first in range(0, args.jobs, args.chunk):
            t_ms = now_ms()
            try:
                with producer.batch(max_size=args.chunk):
                    for i in range(first, min(first + args.chunk, args.jobs)):
                        noop.apply_async(args=(payload(i, t_ms),), queue=args.queue,
                                         producer=producer)
            except Exception as exc:  # noqa: BLE001 - counted, reported
                failed[0] += min(args.chunk, args.jobs - first)
                print(f"batch publish: {exc}", file=sys.stderr)
    elif args.publish == "single":
        for i in range(args.jobs):
            send(holders[0], i, now_ms())
    else:
        def thread_main(p):
            for i in range(p, args.jobs, n_producers):
                send(holders[p], i, now_ms())

        threads = [threading.Thread(target=thread_main, args=(p,)) for p in range(n_producers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    done = {"event": "done", "enqueued": args.jobs - failed[0], "start_ms": start_ms,
            "end_ms": now_ms()}
    if failed[0]:
        done["failed"] = failed[0]
    emit(done)
    for producer in holders:
        producer.release()
    return 1 if failed[0] else 0


def settings(args):
    if args.role == "worker":
        return (f"app.worker_main in this process: --pool {args.pool} --concurrency "
                f"{args.concurrency} --prefetch-multiplier {args.prefetch_multiplier} "
                "--without-gossip --without-mingle --without-heartbeat; no result backend "
                "(ignore_result); early ack (Celery default); done counted when the task "
                "function returns (Celery gives no completion confirmation)")
    if args.rate > 0:
        return (f"one apply_async per job (one LPUSH each), open loop at {args.rate:g}/s, "
                f"handed to {args.producers} sender threads (one kombu producer each)")
    if args.publish == "batch":
        return (f"apply_async one message per call inside kombu Producer.batch(max_size="
                f"{args.chunk}) on one producer (the chunk's LPUSHes in one Redis pipeline), "
                "1 thread; t = chunk start")
    if args.publish == "single":
        return "apply_async one message (one LPUSH) per call on one producer, 1 thread"
    return (f"apply_async one message (one LPUSH) per call from {args.producers} threads, "
            "one producer each")


def main(args):
    args.chunk = max(1, args.chunk)
    emit({"event": "info", "system": SYSTEM,
          "version": f"celery {celery.__version__}, kombu {kombu.__version__}, "
                     f"redis-py {redis.__version__}",
          "settings": settings(args)})
    return run_worker(args) if args.role == "worker" else run_producer(args)


if __name__ == "__main__":
    sys.exit(main(ARGS))
