#!/usr/bin/env python3
"""Chaos producer: enqueues unique jobs {"uid": ...} (idempotency key = uid)
at a steady rate until SIGTERM, recording every call in its history:

  invoke  uid try            before the call
  ok      uid job dup        acknowledged (job id, duplicate flag)
  failed  uid code           definitely not stored (INVALID_ARGUMENT, ...)
  unknown uid code           may or may not be stored (DEADLINE_EXCEEDED,
                             UNAVAILABLE, INTERNAL, ...: the call may have
                             been applied before the error)

An unknown outcome is retried (up to --tries calls per uid) with the same
idempotency key, as a real producer would; a later ok with dup=true shows
that an earlier unknown call had landed.
"""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc  # noqa: E402
from jobwire import Client, JobwireError  # noqa: E402
from histlog import History  # noqa: E402

# Codes that mean the broker did not store the job (it validates before it
# writes). Everything else, above all DEADLINE_EXCEEDED and UNAVAILABLE, is
# "unknown": the request may have been applied.
DEFINITE = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
            grpc.StatusCode.NOT_FOUND, grpc.StatusCode.ALREADY_EXISTS,
            grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED,
            grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNIMPLEMENTED}

stop = False


def on_term(signum, frame):
    global stop
    stop = True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--addr", required=True)
    p.add_argument("--history", required=True)
    p.add_argument("--name", required=True, help="uid prefix and history name")
    p.add_argument("--queue", default="chaos")
    p.add_argument("--rate", type=float, default=15.0, help="new jobs per second")
    p.add_argument("--timeout", type=float, default=2.0, help="deadline per call (s)")
    p.add_argument("--tries", type=int, default=3)
    p.add_argument("--max-attempts", type=int, default=10)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    hist = History(args.history, args.name)
    client = Client(args.addr, timeout=args.timeout)
    period = 1.0 / args.rate
    next_at = time.monotonic()
    n = 0
    while not stop:
        n += 1
        uid = "%s-%d" % (args.name, n)
        for attempt in range(1, args.tries + 1):
            hist.record("invoke", uid=uid, tr=attempt)
            try:
                r = client.enqueue(args.queue, "chaos", {"uid": uid}, idempotency_key=uid,
                                   max_attempts=args.max_attempts, backoff_base_ms=100,
                                   backoff_max_ms=1000)
            except JobwireError as e:
                kind = "failed" if e.code in DEFINITE else "unknown"
                hist.record(kind, uid=uid, tr=attempt, code=e.code.name, msg=e.message[:200])
                if kind == "failed" or stop:
                    break
                time.sleep(0.3)
                continue
            hist.record("ok", uid=uid, tr=attempt, job=r.job_id, dup=r.duplicate)
            break
        next_at += period
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            next_at = time.monotonic()  # fell behind (faults): no burst afterwards
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
