#!/usr/bin/env python3
"""Chaos worker: a jobwire.Worker whose handler records its start, works for
a short random time (about 5% of first attempts raise, to exercise Fail), and
returns {"uid": ...}. Every run is named by its lease token (tok), so the
checker counts runs and matches outcomes to runs without the broker's attempt
counter, and ordered by when they were claimed (exp - lease: the lease end
the delivery carried, minus the lease the worker asks for):

  start   uid job att max tok exp lease
                                   the handler starts
  end     uid job att tok ... ok   the handler returns (ok) or raises
  <kind>  uid job att tok ...      every outcome the Worker reports, whatever
                                   its kind: ack_ok, ack_error(code),
                                   ack_unknown, fail_ok(out), fail_error(code),
                                   fail_unknown, expired_dropped, ...
  sigterm                          SIGTERM arrived (outcomes after it are late)
  unsettled uid job att tok end    at exit: a run with no outcome (abandoned
                                   after the grace, or its report was cut)

SIGTERM stops it gracefully (the Worker's own signal handling); outcomes
reported after it, even after the Worker closed, are still recorded.

The lease token is not part of the public Job: ChaosWorker reads it where
the Worker hands it to its private _process(job, run, ...) (run.token) and sets
job._lease_token (and job._delivered_exp_ms, the lease end as delivered,
before any renewal), which the handler and on_outcome (same Job object) read.
The worker refuses to start if that seam is not there."""
import argparse
import inspect
import json
import logging
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jobwire import Worker  # noqa: E402
from histlog import History  # noqa: E402


class ChaosWorker(Worker):
    """Worker that exposes each delivery's lease token and records every
    outcome, also those the Worker would drop after it closed."""

    record_signal = None  # callable, set by main

    def _process(self, job, run, *rest):
        job._lease_token = run.token
        job._delivered_exp_ms = job.lease_expires_at_ms
        super()._process(job, run, *rest)

    def _report(self, outcome):
        if self.on_outcome is None:
            return
        try:
            self.on_outcome(outcome)
        except Exception:  # noqa: BLE001 - as the Worker does
            logging.exception("chaos worker: on_outcome raised")

    def _on_signal(self, signum, frame):
        if self.record_signal is not None:
            self.record_signal(signum)
        super()._on_signal(signum, frame)


def check_seam():
    params = list(inspect.signature(Worker._process).parameters)
    if params[:3] != ["self", "job", "run"]:
        sys.exit("chaos worker: jobwire.Worker._process(job, run, ...) not found "
                 f"(got {params}); the run needs the lease token of every delivery "
                 "(run.token)")
    for name in ("_report", "_on_signal"):
        if not callable(getattr(Worker, name, None)):
            sys.exit(f"chaos worker: jobwire.Worker.{name} not found")


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
    check_seam()
    lo, hi = (int(x) for x in args.work_ms.split(","))
    hist = History(args.history, args.name)
    rng = random.Random()
    lock = threading.Lock()
    open_runs = {}  # tok -> fields of a run with no outcome yet (and "end")

    def uid_of(job):
        try:
            return json.loads(job.payload.decode())["uid"]
        except Exception:  # noqa: BLE001 - recorded, the checker flags it
            return "<bad payload %r>" % job.payload[:60]

    def run_fields(job):
        return {"uid": uid_of(job), "job": job.id, "att": job.attempt,
                "tok": getattr(job, "_lease_token", None),
                "exp": getattr(job, "_delivered_exp_ms", 0), "lease": args.lease_ms}

    def handle(job):
        f = run_fields(job)
        with lock:
            open_runs[f["tok"]] = dict(f)
        hist.record("start", max=job.max_attempts, **f)
        ok = False
        try:
            time.sleep(rng.uniform(lo, hi) / 1000.0)
            if job.attempt == 1 and rng.random() * 100 < args.fail_pct:
                raise RuntimeError("injected handler failure")
            ok = True
            return {"uid": f["uid"]}
        finally:
            with lock:
                if f["tok"] in open_runs:
                    open_runs[f["tok"]]["end"] = "ok" if ok else "raised"
            hist.record("end", ok=ok, **f)

    def on_outcome(o):
        fields = run_fields(o.job)
        fields["lost"] = bool(getattr(o, "lease_lost", False))
        code = getattr(o, "code", None)
        if code is not None:
            fields["code"] = getattr(code, "name", str(code))
        if getattr(o, "fail_outcome", None):
            fields["out"] = o.fail_outcome
        with lock:
            open_runs.pop(fields["tok"], None)
        hist.record(str(o.kind), **fields)

    w = ChaosWorker(args.addr, queues=[args.queue], concurrency=args.concurrency,
                    lease_ms=args.lease_ms, worker_id=args.name, grace=args.grace,
                    on_outcome=on_outcome, timeout=args.timeout)
    w.record_signal = lambda signum: hist.record(
        "sigterm" if signum == signal.SIGTERM else "signal", sig=signum)
    w.register("chaos", handle)
    w.run()
    # Runs the Worker gave up (after the grace, or whose Ack / Fail call was
    # cut when it closed): recorded, so that every run is accounted for.
    with lock:
        left = list(open_runs.values())
    for f in left:
        hist.record("unsettled", **f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
