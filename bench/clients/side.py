#!/usr/bin/env python3
"""jobwire's Python client in the side-by-side benchmark (bench/README.md,
"Side by side"): one producer process and one worker process, the program
protocol every system follows (bench/side_protocol.md).

  .venv/bin/python bench/clients/side.py --role worker --addr 127.0.0.1:50051 --jobs 50000
  .venv/bin/python bench/clients/side.py --role producer --addr 127.0.0.1:50051 --jobs 50000

Producer: one thread, Client.enqueue_batch of --chunk jobs, one call after
another; with --rate, one Client.enqueue per job, handed at its scheduled
time to a free one of --senders (4) threads, open loop (--senders 0: the
calls are started on jobwire.aio.Client, one asyncio loop, not awaited
before the next; at 1000/s both keep the schedule, the threads had the
lower latency here). Warm-up: one GetJob of a job that does not exist.

Worker: one jobwire.Worker of --concurrency handler threads; a job counts as
done when its outcome is ack_ok (the broker confirmed the ack).
"""

import argparse
import asyncio
import json
import os
import queue as queue_mod
import sys
import threading
import time

import grpc

import jobwire
import jobwire.aio

SYSTEM = "jobwire-python"


def now_ms():
    return time.time() * 1000


def emit(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def payload(i, t_ms):
    """The protocol's 64-byte JSON object {"i":..,"t":..,"p":"x..."}."""
    head = '{"i":%d,"t":%.3f,"p":"' % (i, t_ms)
    return (head + "x" * max(0, 64 - len(head) - 2) + '"}').encode()


def latency_summary(ms):
    ms = sorted(ms)

    def pct(p):
        return ms[min(len(ms) - 1, int(p * len(ms)))] if ms else 0.0

    return {"n": len(ms), "mean": sum(ms) / len(ms) if ms else 0.0, "p50": pct(0.5),
            "p90": pct(0.9), "p99": pct(0.99), "max": ms[-1] if ms else 0.0}


def exit_soon(code, seconds=5.0):
    """The protocol's "exit anyway after ~5 s" once the done line is out."""
    timer = threading.Timer(seconds, lambda: os._exit(code))
    timer.daemon = True
    timer.start()


def probe(addr, queue):
    """One round trip that enqueues nothing (GetJob of a job that does not
    exist: NOT_FOUND is the expected answer)."""
    with jobwire.Client(addr) as client:
        try:
            client.get_job(queue, "0")
        except jobwire.JobwireError as exc:
            if exc.code != grpc.StatusCode.NOT_FOUND:
                raise


def run_worker(args):
    lock = threading.Lock()
    latencies = []
    state = {"done": 0, "other": 0, "first": 0.0, "last": 0.0}
    all_done = threading.Event()

    def on_outcome(outcome):
        if outcome.kind != "ack_ok":
            with lock:
                state["other"] += 1
            print(f"outcome {outcome.kind}: {outcome.error}", file=sys.stderr)
            return
        t = now_ms()
        with lock:
            state["done"] += 1
            if state["done"] == 1:
                state["first"] = t
            state["last"] = t
            if state["done"] == args.jobs:
                all_done.set()

    def noop(job):
        start = now_ms()
        body = json.loads(job.payload)
        with lock:
            latencies.append(start - body["t"])

    worker = jobwire.Worker(args.addr, queues=[args.queue], concurrency=args.concurrency,
                            worker_id="bench-python", on_outcome=on_outcome, grace=4.0)
    worker.register("noop", noop)
    runner = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False},
                              daemon=True)
    runner.start()
    probe(args.addr, args.queue)  # the broker answers; the Claim stream opens at once
    time.sleep(0.2)
    emit({"event": "ready"})
    if not all_done.wait(timeout=600):
        print(f"timed out: {state['done']} of {args.jobs} acked", file=sys.stderr)
        return 1
    with lock:
        emit({"event": "done", "completed": state["done"], "first_done_ms": state["first"],
              "last_done_ms": state["last"], "latency_ms": latency_summary(latencies)})
    exit_soon(0)
    worker.stop(wait=True, timeout=4.5)
    return 0 if state["other"] == 0 else 1


async def offer(args, start_ms):
    """Open loop: job i is started at start + i / rate on the asyncio client,
    whatever came before; returns the number of failed calls."""
    failed = 0
    async with jobwire.aio.Client(args.addr) as client:
        try:  # the aio channel's own warm-up, before the clock: enqueues nothing
            await client.get_job(args.queue, "0")
        except jobwire.JobwireError:
            pass

        async def one(i, t_ms):
            nonlocal failed
            try:
                await client.enqueue(args.queue, "noop", payload(i, t_ms))
            except jobwire.JobwireError as exc:
                failed += 1
                print(f"enqueue: {exc}", file=sys.stderr)

        loop = asyncio.get_running_loop()
        start = loop.time() - (now_ms() - start_ms) / 1000  # loop clock of start_ms
        tasks = []
        for i in range(args.jobs):
            offset = i / args.rate
            delay = start + offset - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one(i, start_ms + offset * 1000)))
        await asyncio.gather(*tasks)
    return failed


def offer_threads(args, client, start_ms):
    """Open loop on the synchronous client: job i is handed at start + i /
    rate to a free one of --senders threads; returns the failed calls."""
    todo = queue_mod.SimpleQueue()
    failed = [0]

    def sender():
        while True:
            item = todo.get()
            if item is None:
                return
            i, t_ms = item
            try:
                client.enqueue(args.queue, "noop", payload(i, t_ms))
            except jobwire.JobwireError as exc:
                failed[0] += 1
                print(f"enqueue: {exc}", file=sys.stderr)

    threads = [threading.Thread(target=sender) for _ in range(args.senders)]
    for t in threads:
        t.start()
    start = time.monotonic() - (now_ms() - start_ms) / 1000
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
    return failed[0]


def run_producer(args):
    client = jobwire.Client(args.addr)
    try:
        client.get_job(args.queue, "0")  # connects; enqueues nothing
    except jobwire.JobwireError as exc:
        if exc.code != grpc.StatusCode.NOT_FOUND:
            raise
    if args.rate > 0 and args.senders == 0:
        loop = asyncio.new_event_loop()  # the aio client's loop, made before the clock
    emit({"event": "ready"})
    sys.stdin.readline()
    start_ms = now_ms()
    failed = 0
    if args.rate > 0 and args.senders > 0:
        failed = offer_threads(args, client, start_ms)
    elif args.rate > 0:
        failed = loop.run_until_complete(offer(args, start_ms))
        loop.close()
    else:
        for first in range(0, args.jobs, args.chunk):
            t = now_ms()
            batch = [{"type": "noop", "payload": payload(i, t)}
                     for i in range(first, min(first + args.chunk, args.jobs))]
            try:
                results = client.enqueue_batch(args.queue, batch)
                failed += sum(1 for r in results if r.error is not None)
            except jobwire.JobwireError as exc:
                failed += len(batch)
                print(f"enqueue_batch: {exc}", file=sys.stderr)
    done = {"event": "done", "enqueued": args.jobs - failed, "start_ms": start_ms,
            "end_ms": now_ms()}
    if failed:
        done["failed"] = failed
    emit(done)
    client.close()
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--role", required=True, choices=["producer", "worker"])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="broker host:port")
    parser.add_argument("--redis-url", default="", help="unused (the broker has it)")
    parser.add_argument("--queue", default="bench")
    parser.add_argument("--jobs", type=int, default=50000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rate", type=float, default=0)
    parser.add_argument("--senders", type=int, default=4,
                        help="--rate: N sender threads on jobwire.Client; 0 = jobwire.aio.Client")
    args = parser.parse_args()
    args.chunk = max(1, args.chunk)
    if args.role == "worker":
        settings = (f"1 jobwire.Worker (threads), concurrency {args.concurrency}, one Work "
                    "stream carrying the coalesced acks; completion counted by on_outcome ack_ok")
    elif args.rate > 0 and args.senders > 0:
        settings = (f"one Client.enqueue per job, open loop at {args.rate:g}/s, handed to "
                    f"{args.senders} sender threads (one channel)")
    elif args.rate > 0:
        settings = (f"one enqueue per job on jobwire.aio.Client (one asyncio loop, "
                    f"not awaited before the next), open loop at {args.rate:g}/s")
    else:
        settings = f"Client.enqueue_batch x{args.chunk} from 1 thread, one call at a time"
    emit({"event": "info", "system": SYSTEM,
          "version": f"jobwire python client {jobwire.__version__}, grpcio {grpc.__version__}",
          "settings": settings})
    return run_worker(args) if args.role == "worker" else run_producer(args)


if __name__ == "__main__":
    sys.exit(main())
