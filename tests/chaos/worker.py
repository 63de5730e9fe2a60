#!/usr/bin/env python3
"""Chaos worker: a jobwire.Worker whose handler records its start, works for
a short random time (about 5% of first attempts raise, to exercise Fail), and
returns {"uid": ...}. Every final outcome is recorded through on_outcome:

  start   uid job att max
  ack_ok / ack_error(code) / fail_ok(out) / fail_error(code)   uid job att
  ack_unknown(code) / fail_unknown(code) / expired_dropped     uid job att

SIGTERM stops it gracefully (the Worker's own signal handling)."""
import argparse
import json
import logging
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jobwire import Worker  # noqa: E402
from histlog import History  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--addr", required=True)
    p.add_argument("--history", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--queue", default="chaos")
    p.add_argument("--concurrency", type=int, default=3)
    p.add_argument("--lease-ms", type=int, default=2000)
    p.add_argument("--timeout", type=float, default=3.0)
    p.add_argument("--grace", type=float, default=5.0)
    p.add_argument("--work-ms", default="20,200")
    p.add_argument("--fail-pct", type=float, default=5.0)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    lo, hi = (int(x) for x in args.work_ms.split(","))
    hist = History(args.history, args.name)
    rng = random.Random()

    def uid_of(job):
        try:
            return json.loads(job.payload.decode())["uid"]
        except Exception:  # noqa: BLE001 - recorded, the checker flags it
            return "<bad payload %r>" % job.payload[:60]

    def handle(job):
        uid = uid_of(job)
        hist.record("start", uid=uid, job=job.id, att=job.attempt, max=job.max_attempts)
        time.sleep(rng.uniform(lo, hi) / 1000.0)
        if job.attempt == 1 and rng.random() * 100 < args.fail_pct:
            raise RuntimeError("injected handler failure")
        return {"uid": uid}

    def on_outcome(o):
        fields = {"uid": uid_of(o.job), "job": o.job.id, "att": o.job.attempt,
                  "lost": bool(o.lease_lost)}
        if o.code is not None:
            fields["code"] = o.code.name
        if o.fail_outcome:
            fields["out"] = o.fail_outcome
        hist.record(o.kind, **fields)

    w = Worker(args.addr, queues=[args.queue], concurrency=args.concurrency,
               lease_ms=args.lease_ms, worker_id=args.name, grace=args.grace,
               on_outcome=on_outcome, timeout=args.timeout)
    w.register("chaos", handle)
    w.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
