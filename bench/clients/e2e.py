#!/usr/bin/env python3
"""jobwire end to end through the Python client (bench/README.md).

A jobwire.Worker (concurrency 64) and a producer thread (Client.enqueue_batch
of 100) at once in this process, from the first enqueue to the last ack;
prints one JSON line, the shape of the peers' (bench/peers/).

  .venv/bin/python bench/clients/e2e.py --addr 127.0.0.1:50051 --jobs 20000

Completion is counted with the Worker's on_outcome hook ("ack_ok": the broker
confirmed the Ack), so the clock stops at the last confirmed ack.
"""

import argparse
import json
import sys
import threading
import time

import jobwire


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="broker host:port")
    parser.add_argument("--redis-url", default="", help="unused (the broker has it); accepted "
                        "so that every program of the benchmark takes the same flags")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--producers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--queue", default="bench")
    parser.add_argument("--rate", type=float, default=0,
                        help="latency mode: offered jobs/s, one enqueue per job, open loop")
    parser.add_argument("--seconds", type=float, default=5, help="latency mode: how long")
    args = parser.parse_args()
    if args.rate > 0:
        args.jobs = int(args.rate * args.seconds)
    latencies = []

    lock = threading.Lock()
    state = {"acked": 0, "other": 0, "end": 0.0}
    done = threading.Event()

    def on_outcome(outcome):
        with lock:
            if outcome.kind != "ack_ok":
                state["other"] += 1
                return
            state["acked"] += 1
            if state["acked"] == args.jobs:
                state["end"] = time.monotonic()
                done.set()

    worker = jobwire.Worker(args.addr, queues=[args.queue], concurrency=args.concurrency,
                            worker_id="bench-python", on_outcome=on_outcome)
    def noop(job):
        if args.rate > 0:
            latencies.append((time.monotonic_ns() - job.json()["sent_ns"]) / 1e6)

    worker.register("noop", noop)
    runner = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False},
                              daemon=True)
    runner.start()
    time.sleep(0.3)  # Claim stream open, like jobwire_bench

    failed = [0]

    def produce(p):
        with jobwire.Client(args.addr) as client:
            for first in range(p * args.batch, args.jobs, args.producers * args.batch):
                chunk = [{"type": "noop",
                          "payload": {"n": n, "sent_ns": time.monotonic_ns(), "pad": "jobwire-bench"}}
                         for n in range(first, min(first + args.batch, args.jobs))]
                try:
                    results = client.enqueue_batch(args.queue, chunk)
                    failed[0] += sum(1 for r in results if getattr(r, "error", None) is not None)
                except jobwire.JobwireError as exc:
                    failed[0] += len(chunk)
                    print(f"enqueue_batch: {exc}", file=sys.stderr)

    def offer():
        # Open loop: job n is sent at start + n / rate, whatever came before.
        with jobwire.Client(args.addr) as client:
            for n in range(args.jobs):
                delay = start + n / args.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                try:
                    client.enqueue(args.queue, "noop", {"n": n, "sent_ns": time.monotonic_ns(),
                                                        "pad": "jobwire-bench"})
                except jobwire.JobwireError as exc:
                    failed[0] += 1
                    print(f"enqueue: {exc}", file=sys.stderr)

    start = time.monotonic()
    producers = [threading.Thread(target=offer)] if args.rate > 0 else [
        threading.Thread(target=produce, args=(p,)) for p in range(args.producers)]
    for t in producers:
        t.start()
    for t in producers:
        t.join()
    ok = failed[0] == 0 and done.wait(timeout=300)  # a failed enqueue: never all acked
    worker.stop(wait=True, timeout=30)
    if not ok:
        print(f"timed out: {state['acked']} of {args.jobs} acked", file=sys.stderr)
        return 1
    if args.rate > 0:
        lat = sorted(latencies)

        def pct(p):
            return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0.0

        print(json.dumps({
            "system": "jobwire (python client)", "jobs": args.jobs, "failed": failed[0],
            "offered_per_s": args.rate, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
            "p999_ms": pct(0.999), "max_ms": pct(1), "instrumentation_commands": 0}), flush=True)
        return 0
    seconds = state["end"] - start
    print(json.dumps({
        "system": "jobwire (python client)",
        "version": f"jobwire python client {jobwire.__version__}",
        "jobs": args.jobs, "failed": failed[0] + state["other"], "seconds": seconds,
        "jobs_per_s": args.jobs / seconds,
        "settings": (f"enqueue_batch x{args.batch} from {args.producers} producer thread(s); "
                     f"1 jobwire.Worker, concurrency {args.concurrency}; "
                     "completion counted by on_outcome ack_ok"),
        "instrumentation_commands": 0,
    }), flush=True)
    return 0 if failed[0] == 0 and state["other"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
