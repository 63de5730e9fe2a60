#!/usr/bin/env python3
"""The shared client behaviours (docs/clients.md, "Behaviours"), checked the
same way for every language's Worker.

Starts (behaviours_harness.py) a real redis-server and the real broker
(--default_lease_ms=3000; W8 kills it and starts it again on the same port),
and one interop worker program per language (tests/interop/<lang>/worker, its
"behaviour" handler: tests/interop/README.md), each alone on a queue of its
own with no lease of its own (the broker default); W12 starts a second one
per language on two weighted queues of its own, and stops it again. For each behaviour it
enqueues the same jobs for every language, then judges each language from
what its worker logged and from GetJob, never from what the broker says
about itself alone. Prints the table behaviour x language and exits 1 when a
cell is not "ok".

  run_behaviours.py [--broker PATH] [--build-dir DIR] [--langs python,node,go,cpp]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import grpc
from jobwire.v1 import admin_pb2 as admin_pb
from jobwire.v1 import broker_pb2 as pb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from behaviours_harness import (LEASE_MS, REPO, Broker, BrokerProcess, Failed,  # noqa: E402
                                Worker, check, start_redis)

LANGS = ["python", "node", "go", "cpp"]
MAX_ERROR_BYTES = 65536   # Fail.error, the broker's limit
PENDING, COMPLETED, DEAD = pb.JOB_STATE_PENDING, pb.JOB_STATE_COMPLETED, pb.JOB_STATE_DEAD


# --- the behaviours --------------------------------------------------------
# Each is start(broker, worker) -> state, run for every language; then
# act(process, broker, workers, states), once for all languages (or None);
# then judge(broker, worker, state), which raises Failed.

def lease_start(b, w):
    return b.enqueue(w.queue, {"scenario": "lease_ms", "sleep_ms": int(LEASE_MS * 2.5)},
                     max_attempts=1)


def lease_judge(b, w, job_id):
    job = b.wait_state(w.queue, job_id, (COMPLETED, DEAD), 20)
    check(job.state == COMPLETED and job.attempts == 1,
          f"a handler running 2.5 leases: {pb.JobState.Name(job.state)} after "
          f"{job.attempts} attempt(s), error {job.error!r}")
    result = json.loads(job.result)
    check(result.get("lease_ms") == LEASE_MS,
          f"the handler saw lease_ms {result.get('lease_ms')}, the broker granted {LEASE_MS}")
    check(w.wait_line(job_id, "ack_ok", 5), "no ack_ok outcome")


UNIT, COUNT = "\u20ac", 34134  # 3 bytes each: 102402 bytes, cut mid-character


def error_text_start(b, w):
    return b.enqueue(w.queue, {"scenario": "long_error", "unit": UNIT, "count": COUNT},
                     max_attempts=1)


def error_text_judge(b, w, job_id):
    job = b.wait_state(w.queue, job_id, (DEAD,), 15)
    data = job.error.encode("utf-8")
    check(len(data) <= MAX_ERROR_BYTES, f"error text of {len(data)} bytes")
    check(len(data) > MAX_ERROR_BYTES - len(UNIT.encode()),
          f"error text cut to {len(data)} bytes, more than one character short of 64 KiB")
    head, sep, rest = job.error.partition(": ")
    check(sep and rest and rest == UNIT * len(rest),
          f"error text {job.error[:40]!r}... is not '<type>: ' and whole characters")


def retry_after_start(b, w):
    # A backoff of an hour: only retry_after can bring attempt 2 in seconds.
    return (b.enqueue(w.queue, {"scenario": "retry_after", "delay_ms": 1500},
                      max_attempts=3, backoff_base_ms=3600000, backoff_max_ms=3600000),
            time.time())


def retry_after_judge(b, w, state):
    job_id, enqueued = state
    w.wait_line(job_id, "fail_ok", 10)
    job = b.wait_state(w.queue, job_id, (COMPLETED, DEAD), 15)
    took = time.time() - enqueued
    check(job.state == COMPLETED and job.attempts == 2,
          f"{pb.JobState.Name(job.state)} after {job.attempts} attempt(s)")
    check(w.wait_line(job_id, "fail_ok", 1)[4:] == ["RETRY_SCHEDULED"], "attempt 1 not a retry")
    check(took >= 1.5, f"attempt 2 completed {took:.2f} s after enqueue, before the 1.5 s delay")


def non_retryable_start(b, w):
    return b.enqueue(w.queue, {"scenario": "non_retryable"}, max_attempts=3,
                     backoff_base_ms=100)


def non_retryable_judge(b, w, job_id):
    job = b.wait_state(w.queue, job_id, (DEAD,), 10)
    check(job.attempts == 1, f"DEAD after {job.attempts} attempts, want 1 of 3")
    check("bad input" in job.error, f"error {job.error!r} lacks the handler's message")
    check(w.wait_line(job_id, "fail_ok", 5)[4:] == ["DEAD"], "the Fail's outcome is not DEAD")


def unknown_type_start(b, w):
    # The job of the unknown type is first in the queue; the worker's own
    # job after it.
    unknown = b.enqueue(w.queue, {}, type_="no-such-type", max_attempts=2)
    known = b.enqueue(w.queue, {"scenario": "sleep", "sleep_ms": 0}, max_attempts=1)
    return unknown, known


def unknown_type_judge(b, w, state):
    unknown, known = state
    job = b.wait_state(w.queue, known, (COMPLETED, DEAD), 10)
    check(job.state == COMPLETED, f"the worker's own job is {pb.JobState.Name(job.state)}")
    w.wait_line(known, "ack_ok", 5)
    job = b.job(w.queue, unknown)
    check(job.state == PENDING and job.attempts == 0,
          f"the job of a type without handler is {pb.JobState.Name(job.state)} after "
          f"{job.attempts} attempt(s), error {job.error!r}; want PENDING, 0 attempts")
    check(not w.lines(unknown), f"the worker logged {w.lines(unknown)} for it")
    b.delete_job(w.queue, unknown)


def lease_lost_start(b, w):
    return None  # enqueued when judged: each language's handler waits alone


def lease_lost_judge(b, w, _):
    job_id = b.enqueue(w.queue, {"scenario": "wait_lease_lost", "wait_ms": 15000},
                       max_attempts=1)
    w.wait_line(job_id, "start", 10)
    deleted = time.time()
    b.delete_job(w.queue, job_id)
    w.wait_line(job_id, "lease_lost", 8)
    # Renewal runs every third of the lease: told within about one renewal,
    # and before the lease would have ended.
    took = time.time() - deleted
    check(took < LEASE_MS / 1000.0, f"the handler was told {took:.2f} s after the delete")
    outcome = w.wait_line(job_id, "ack_error", 5)
    check(outcome[4:] == ["NOT_FOUND"], f"the final Ack got {outcome[4:]}, want NOT_FOUND")


def drain_start(b, w):
    return b.enqueue(w.queue, {"scenario": "sleep", "sleep_ms": 1000}, max_attempts=1)


def drain_judge(b, w, job_id):
    w.wait_line(job_id, "start", 10)
    status = w.stop()
    check(status == 0, f"the worker exited with status {status} on SIGTERM")
    job = b.job(w.queue, job_id)
    check(job.state == COMPLETED, f"the running job is {pb.JobState.Name(job.state)} after stop")
    w.wait_line(job_id, "ack_ok", 1)
    w.start()  # for the behaviours after this one


# W8: the broker is killed (SIGKILL) while every language's handler runs and
# started again on the same port 1 s later, before the handlers' 3 s leases
# end. Each handler's Ack meets UNAVAILABLE first (connection refused) and is
# retried until it is stored.
OUTAGE_S = 1.0


def ack_retry_start(b, w):
    return b.enqueue(w.queue, {"scenario": "sleep", "sleep_ms": 500}, max_attempts=1)


def broker_outage(process, b, workers, states):
    for lang, job_id in states.items():
        workers[lang].wait_line(job_id, "start", 10)
    process.kill()
    time.sleep(OUTAGE_S)
    process.start()


def ack_retry_judge(b, w, job_id):
    job = b.wait_state(w.queue, job_id, (COMPLETED, DEAD), 15)
    check(job.state == COMPLETED and job.attempts == 1,
          f"{pb.JobState.Name(job.state)} after {job.attempts} attempt(s), error {job.error!r}")
    # The job can be stored COMPLETED before the worker hears so: an Ack the
    # broker ran just before it was killed is answered only by a retry after
    # the restart (a repeat, answered OK), and the worker logs its outcome then.
    deadline = time.time() + 15
    while True:
        outcomes = [r[0] for r in w.lines(job_id) if r[0].startswith(("ack_", "fail_"))]
        if outcomes or time.time() > deadline:
            break
        time.sleep(0.05)
    check(outcomes == ["ack_ok"], f"outcomes {outcomes}, want one ack_ok")


# W9: after W8's restart each Worker, whose Claim stream broke, has
# reconnected on its own (backoff from 100 ms to 5 s): a job enqueued now is
# run and acked.
def reconnect_start(b, w):
    return None


def reconnect_judge(b, w, _):
    job_id = b.enqueue(w.queue, {"scenario": "sleep", "sleep_ms": 0}, max_attempts=1)
    job = b.wait_state(w.queue, job_id, (COMPLETED, DEAD), 15)
    check(job.state == COMPLETED, f"{pb.JobState.Name(job.state)}, error {job.error!r}")
    w.wait_line(job_id, "ack_ok", 5)


# W10: a call the broker never answers ends at its deadline. The broker is
# frozen (SIGSTOP: its connections stay open and nothing is answered) while
# every language's handler runs: each Ack (its AckBatch) waits for the
# default 10 s deadline, and since the lease has ended meanwhile by the
# worker's own estimate it is not sent again: the outcome is ack_unknown
# DEADLINE_EXCEEDED, about 10 s after the freeze, never a hang. Then the
# broker is thawed: the job's lease expired in Redis meanwhile, so the job
# runs again and completes on attempt 2 (at-least-once), unless the Ack
# itself is settled after the thaw: a Worker whose acks travel on its Work
# stream (C++, Node, Go) has written them into the stream, and the broker
# settles what it reads, however late (broker.proto, Work); an AckBatch call
# past its deadline is cancelled instead. Either way the job is COMPLETED
# and nothing is lost, which is what ack_unknown promises.
CALL_DEADLINE_S = 10.0
FREEZE_LIMIT_S = CALL_DEADLINE_S + 6


def deadline_start(b, w):
    return b.enqueue(w.queue, {"scenario": "sleep", "sleep_ms": 300}, max_attempts=2,
                     backoff_base_ms=100, backoff_max_ms=100)


def broker_freeze(process, b, workers, states):
    for lang, job_id in states.items():
        workers[lang].wait_line(job_id, "start", 10)
    process.proc.send_signal(signal.SIGSTOP)
    frozen = time.time()
    waited = {}
    try:
        while time.time() - frozen < FREEZE_LIMIT_S and len(waited) < len(states):
            for lang, job_id in states.items():
                settled = [r for r in workers[lang].lines(job_id)
                           if r[0].startswith(("ack_", "fail_"))]
                if lang not in waited and settled:
                    waited[lang] = time.time() - frozen
            time.sleep(0.05)
    finally:
        process.proc.send_signal(signal.SIGCONT)
    for lang in list(states):
        states[lang] = (states[lang], waited.get(lang))


def deadline_judge(b, w, state):
    job_id, waited = state
    check(waited is not None,
          f"no Ack outcome {FREEZE_LIMIT_S:.0f} s after the broker froze: the call hangs")
    outcome = [r for r in w.lines(job_id) if r[0].startswith(("ack_", "fail_"))][0]
    check(outcome[0] == "ack_unknown" and outcome[4:] == ["DEADLINE_EXCEEDED"],
          f"the unanswered Ack's outcome is {outcome[0]} {outcome[4:]}, "
          f"want ack_unknown DEADLINE_EXCEEDED")
    check(CALL_DEADLINE_S - 0.5 <= waited <= CALL_DEADLINE_S + 3,
          f"the Ack ended {waited:.1f} s after the freeze, want about {CALL_DEADLINE_S:.0f} s "
          f"(its deadline)")
    job = b.wait_state(w.queue, job_id, (COMPLETED, DEAD), 20)
    check(job.state == COMPLETED and job.attempts in (1, 2),
          f"after the thaw: {pb.JobState.Name(job.state)} after {job.attempts} attempt(s), "
          f"error {job.error!r}; want COMPLETED (on attempt 2, or on attempt 1 when the "
          f"unanswered Ack was settled after the thaw)")


# W11: a handler turned away (retry-after with keep_attempt) on its first
# TURNED_AWAY_TIMES runs of a job of max_attempts 2 (two counted runs would
# make it DEAD) and an hour of backoff. Each run logs `run <job_id> <attempt>
# <lang> <n> <unix_ms>`: n counted by the handler itself in process memory,
# keyed by queue and job id, since job.attempt does not advance.
TURNED_AWAY_TIMES, TURNED_AWAY_DELAY_MS = 2, 300
# Slack for the broker's and the handlers' clocks being read in whole ms.
CLOCK_SLACK_MS = 5


def turned_away_start(b, w):
    return (b.enqueue(w.queue, {"scenario": "turned_away", "times": TURNED_AWAY_TIMES,
                                "delay_ms": TURNED_AWAY_DELAY_MS},
                      max_attempts=2, backoff_base_ms=3600000, backoff_max_ms=3600000),
            time.time())


def turned_away_judge(b, w, state):
    job_id, enqueued = state
    runs = TURNED_AWAY_TIMES + 1
    job = b.wait_state(w.queue, job_id, (COMPLETED, DEAD), 10)
    took = time.time() - enqueued
    check(job.state == COMPLETED and job.attempts == 1,
          f"{pb.JobState.Name(job.state)} after {job.attempts} attempt(s) of "
          f"{job.max_attempts}, error {job.error!r}; want COMPLETED on attempt 1")
    check(job.attempts < job.max_attempts, f"max_attempts {job.max_attempts} exhausted")
    w.wait_line(job_id, "ack_ok", 5)
    lines = w.lines(job_id)
    starts = [r for r in lines if r[0] == "start"]
    check(len(starts) == runs and all(r[2] == "1" for r in starts),
          f"start lines {[' '.join(r) for r in starts]}; want {runs}, each of attempt 1")
    run_lines = [r for r in lines if r[0] == "run"]
    check(all(len(r) == 6 and r[2] == "1" and r[5].isdigit() for r in run_lines),
          f"run lines {[' '.join(r) for r in run_lines]}, want `run <job_id> 1 <lang> <n> "
          f"<unix_ms>` each")
    check([r[4] for r in run_lines] == [str(n) for n in range(1, runs + 1)],
          f"the handler counted its runs {[r[4] for r in run_lines]}, want 1..{runs}")
    outcomes = [" ".join([r[0]] + r[4:]) for r in lines if r[0].startswith(("ack_", "fail_"))]
    want = ["fail_ok RETRY_SCHEDULED"] * TURNED_AWAY_TIMES + ["ack_ok"]
    check(outcomes == want, f"outcomes {outcomes}, want {want}")
    check(json.loads(job.result).get("runs") == runs,
          f"result {job.result!r}, want runs {runs}")
    stamps = [int(r[5]) for r in run_lines]
    gaps = [later - earlier for earlier, later in zip(stamps, stamps[1:])]
    check(all(g >= TURNED_AWAY_DELAY_MS - CLOCK_SLACK_MS for g in gaps),
          f"runs {gaps} ms apart, want at least {TURNED_AWAY_DELAY_MS} ms")
    check(took >= TURNED_AWAY_TIMES * TURNED_AWAY_DELAY_MS / 1000.0,
          f"completed {took:.2f} s after enqueue, before {TURNED_AWAY_TIMES} delays")


# W12: one extra worker per language (concurrency 4) on two queues of its
# own, heavy and light with weights 3 and 1, both holding more due jobs than
# it runs before it is stopped: among the first FAIR_FIRST jobs it started,
# heavy has about three quarters.
FAIR_WEIGHTS = {"heavy": 3, "light": 1}
FAIR_JOBS = {"heavy": 400, "light": 200}
FAIR_FIRST = 300
FAIR_WANT, FAIR_SLACK = 225, 30   # 300 * 3 / 4
FAIR_TIMEOUT_S = 25


def fair_start(b, w):
    """Enqueues the jobs before the extra worker starts (act), so that its
    first Claim finds both queues busy: the set of (queue, job id). Job ids
    are per queue, so heavy and light share them: the behaviour handler's
    `start` line names the job's queue."""
    jobs = set()
    for kind, count in FAIR_JOBS.items():
        queue = f"{w.queue}-{kind}"
        for job_id in b.enqueue_many(queue, count, {"scenario": "sleep", "sleep_ms": 0},
                                     max_attempts=1):
            jobs.add((queue, job_id))
    return jobs


def fair_workers(process, b, workers, states):
    """Starts the extra workers, waits until each logged FAIR_FIRST ack_ok
    lines (or FAIR_TIMEOUT_S), stops them (SIGTERM), and hands each judge
    (its jobs, the extra worker, its exit status)."""
    extra = {}
    try:
        for lang in states:
            w = workers[lang]
            queues = [f"{w.queue}-{kind}" for kind in FAIR_WEIGHTS]
            extra[lang] = Worker(lang, os.path.dirname(w.log), w.env, name="fair",
                                 queues=queues,
                                 weights={f"{w.queue}-{k}": v for k, v in FAIR_WEIGHTS.items()})
        deadline = time.time() + FAIR_TIMEOUT_S
        waiting = set(extra)
        while waiting and time.time() < deadline:
            for lang in list(waiting):
                acked = sum(1 for r in extra[lang].all_lines() if r[0] == "ack_ok")
                if acked >= FAIR_FIRST or extra[lang].proc.poll() is not None:
                    waiting.discard(lang)
            time.sleep(0.1)
    finally:
        statuses = {lang: w.stop(timeout=10) for lang, w in extra.items()}
    for lang in list(states):
        states[lang] = (states[lang], extra.get(lang), statuses.get(lang))


def fair_judge(b, w, state):
    jobs, extra, status = state
    check(extra is not None, "the extra worker was not started")
    lines = extra.all_lines()
    acked = sum(1 for r in lines if r[0] == "ack_ok")
    check(acked >= FAIR_FIRST, f"{acked} jobs acked in {FAIR_TIMEOUT_S} s, want {FAIR_FIRST}")
    starts = [(r[4], r[1]) for r in lines if r[0] == "start" and len(r) >= 5]
    check(len(starts) == sum(1 for r in lines if r[0] == "start"),
          "a start line without the job's queue")
    unknown = [s for s in starts if s not in jobs]
    check(not unknown, f"the worker ran jobs it was not given: {unknown[:3]}")
    check(len(set(starts)) == len(starts), "a job started twice")
    heavy = sum(1 for queue, _ in starts[:FAIR_FIRST] if queue == f"{w.queue}-heavy")
    check(abs(heavy - FAIR_WANT) <= FAIR_SLACK,
          f"{heavy} of the first {FAIR_FIRST} jobs started from heavy (weight 3 of 4), "
          f"want {FAIR_WANT} +- {FAIR_SLACK}")
    check(status == 0, f"the extra worker exited with status {status} on SIGTERM")


# W13: a queue's max_active_per_key (1 here) holds with every language's
# Worker: the broker hands out one job of a key at a time and a Worker runs
# what it is given, so no two runs of a key overlap in the worker's own log
# (key_start .. key_end lines, written in order by one process), while the
# other key's jobs run beside them; each handler sees its job's key.
KEYED_JOBS = {"k1": 4, "k2": 4}
KEYED_SLEEP_MS = 300


def keyed_start(b, w):
    """Limits the worker's queue to one active job per key, then enqueues
    each key's jobs: job id -> key."""
    b.admin.UpdateQueue(admin_pb.UpdateQueueRequest(queue=w.queue, max_active_per_key=1),
                        timeout=10)
    jobs = {}
    for key, count in KEYED_JOBS.items():
        for job_id in b.enqueue_many(w.queue, count,
                                     {"scenario": "keyed", "sleep_ms": KEYED_SLEEP_MS},
                                     max_attempts=1, concurrency_key=key):
            jobs[job_id] = key
    return jobs


def keyed_judge(b, w, jobs):
    try:
        for job_id in jobs:
            b.wait_state(w.queue, job_id, (COMPLETED,), 20)
        running, most, side_by_side = {}, {}, False
        runs = 0
        for r in w.all_lines():
            if r[0] not in ("key_start", "key_end") or r[1] not in jobs:
                continue
            key = r[4] if len(r) >= 5 else ""
            check(key == jobs[r[1]], f"job {r[1]}'s handler saw the key {key!r}, "
                                     f"want {jobs[r[1]]!r}")
            if r[0] == "key_start":
                runs += 1
            running[key] = running.get(key, 0) + (1 if r[0] == "key_start" else -1)
            most[key] = max(most.get(key, 0), running[key])
            side_by_side |= sum(1 for n in running.values() if n > 0) >= 2
        check(runs == len(jobs), f"{runs} runs logged for {len(jobs)} jobs")
        over = {k: n for k, n in most.items() if n > 1}
        check(not over, f"runs of one key overlapped (most at once per key: {over}), limit 1")
        check(side_by_side, "no job of one key ran beside a job of the other: a key at its "
                            "limit held the other key's jobs back")
    finally:
        b.admin.UpdateQueue(admin_pb.UpdateQueueRequest(queue=w.queue, max_active_per_key=0),
                            timeout=10)


# W14: job dependencies reach every language's handler. A small graph per
# worker queue: two parents, a child of both (fan-in), a grandchild of the
# child (chain), and, under a parent that fails, a child that must end DEAD
# without a run and one enqueued with run_after_failed_dependency that runs.
# Each handler logs the dependency results it saw (`dep` lines, hex); each
# must be the parent's result as stored, which names the parent.
DEPS = {"scenario": "deps"}


def deps_start(b, w):
    g = {"p1": b.enqueue(w.queue, DEPS, max_attempts=1),
         "p2": b.enqueue(w.queue, DEPS, max_attempts=1),
         "bad": b.enqueue(w.queue, {"scenario": "non_retryable"}, max_attempts=1)}
    g["child"] = b.enqueue(w.queue, DEPS, max_attempts=1, depends_on=[g["p1"], g["p2"]])
    g["grandchild"] = b.enqueue(w.queue, DEPS, max_attempts=1, depends_on=[g["child"]])
    g["failed"] = b.enqueue(w.queue, DEPS, max_attempts=1, depends_on=[g["bad"], g["p1"]])
    g["anyway"] = b.enqueue(w.queue, DEPS, max_attempts=1, depends_on=[g["bad"]],
                            run_after_failed_dependency=True)
    return g


def deps_seen(w, job_id, want_parents):
    """Checks the `deps` and `dep` lines of `job_id`'s run against the
    stored results of `want_parents`; returns the parents it saw."""
    w.wait_line(job_id, "ack_ok", 10)
    counts = [r for r in w.lines(job_id) if r[0] == "deps"]
    check(len(counts) == 1, f"job {job_id}: {len(counts)} runs logged, want 1")
    seen = {r[4]: (r[5] if len(r) > 5 else "") for r in w.lines(job_id) if r[0] == "dep"}
    check(int(counts[0][4]) == len(seen) and set(seen) == set(want_parents),
          f"job {job_id}'s handler saw results of {sorted(seen)} (count "
          f"{counts[0][4]}), want {sorted(want_parents)}")
    for parent, stored in want_parents.items():
        check(seen[parent] == stored.hex(),
              f"job {job_id}'s handler saw parent {parent}'s result as {seen[parent]}, "
              f"stored {stored.hex()}")
        check(json.loads(stored).get("job") == parent,
              f"parent {parent}'s result {stored!r} does not name it")
    return seen


def deps_judge(b, w, g):
    done = {k: b.wait_state(w.queue, g[k], (COMPLETED, DEAD), 20)
            for k in ("p1", "p2", "child", "grandchild", "anyway")}
    for k, job in done.items():
        check(job.state == COMPLETED, f"{k} ({g[k]}) is {pb.JobState.Name(job.state)}: "
                                      f"{job.error!r}")
    result = {k: done[k].result for k in ("p1", "p2", "child")}
    deps_seen(w, g["p1"], {})
    deps_seen(w, g["child"], {g["p1"]: result["p1"], g["p2"]: result["p2"]})
    deps_seen(w, g["grandchild"], {g["child"]: result["child"]})
    deps_seen(w, g["anyway"], {})
    failed = b.wait_state(w.queue, g["failed"], (DEAD,), 20)
    check(failed.attempts == 0 and f"dependency failed: {g['bad']}" in failed.error,
          f"the child of a dead parent is DEAD after {failed.attempts} attempts with "
          f"error {failed.error!r}; want 0 attempts, 'dependency failed: {g['bad']}'")
    check(not w.lines(g["failed"]), f"the worker logged {w.lines(g['failed'])} for the "
                                    "child of a dead parent")


# (number, name, start, act, judge), in the order of docs/clients.md.
BEHAVIOURS = [
    ("W1", "lease length from the broker", lease_start, None, lease_judge),
    ("W2", "error text cut to 64 KiB", error_text_start, None, error_text_judge),
    ("W3", "retry after from a handler", retry_after_start, None, retry_after_judge),
    ("W4", "non-retryable error", non_retryable_start, None, non_retryable_judge),
    ("W5", "unknown job type", unknown_type_start, None, unknown_type_judge),
    ("W6", "lost lease told to the handler", lease_lost_start, None, lease_lost_judge),
    ("W7", "stop drains running handlers", drain_start, None, drain_judge),
    ("W8", "ack retried after UNAVAILABLE", ack_retry_start, broker_outage, ack_retry_judge),
    ("W9", "reconnect after a broker restart", reconnect_start, None, reconnect_judge),
    ("W10", "a call never answered ends at its deadline", deadline_start, broker_freeze,
     deadline_judge),
    ("W11", "retry after without an attempt", turned_away_start, None, turned_away_judge),
    ("W12", "weighted fair claiming", fair_start, fair_workers, fair_judge),
    ("W13", "concurrency per key", keyed_start, None, keyed_judge),
    ("W14", "job dependencies", deps_start, None, deps_judge),
]


def run(args):
    langs = args.langs.split(",")
    workdir = tempfile.mkdtemp(prefix="jobwire-behaviours-")
    procs, workers = [], {}
    process = None
    table = {}
    try:
        redis, redis_port = start_redis(workdir)
        procs.append(redis)
        process = BrokerProcess(args.broker, redis_port, workdir)

        env = dict(os.environ, JOBWIRE_ADDR=process.addr)
        if args.build_dir:
            env["JOBWIRE_BUILD_DIR"] = args.build_dir
        b = Broker(process.addr)
        for lang in langs:
            workers[lang] = Worker(lang, workdir, env)
        for number, name, start, act, judge in BEHAVIOURS:
            states = {}
            for lang in langs:
                try:
                    states[lang] = start(b, workers[lang])
                except (Failed, grpc.RpcError) as e:
                    table[(number, lang)] = f"FAIL: start: {e}"
            if act is not None:
                try:
                    act(process, b, workers, states)
                except (Failed, RuntimeError) as e:
                    for lang in states:
                        table[(number, lang)] = f"FAIL: {e}"
                    states = {}
            for lang in langs:
                if lang not in states:
                    continue
                try:
                    judge(b, workers[lang], states[lang])
                    table[(number, lang)] = "ok"
                except (Failed, grpc.RpcError, ValueError) as e:
                    table[(number, lang)] = f"FAIL: {e}"
    finally:
        for w in workers.values():
            if w.proc.poll() is None:
                w.stop(timeout=10)
        if process is not None:
            process.stop()
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    failed = report(langs, table)
    if failed and not args.keep:
        print(f"logs kept in {workdir}")
    elif not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


def report(langs, table):
    print("| behaviour | " + " | ".join(langs) + " |")
    print("|---|" + "---|" * len(langs))
    failures = []
    for number, name, _, _, _ in BEHAVIOURS:
        cells = []
        for lang in langs:
            cell = table.get((number, lang), "FAIL: not run")
            cells.append("ok" if cell == "ok" else "FAIL")
            if cell != "ok":
                failures.append(f"{number} {lang}: {cell}")
        print(f"| {number} {name} | " + " | ".join(cells) + " |")
    for f in failures:
        print(f)
    print("PASSED" if not failures else f"FAILED: {len(failures)} cell(s)")
    return bool(failures)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", default=os.path.join(REPO, "build", "broker", "jobwire-broker"))
    parser.add_argument("--build-dir", default="")
    parser.add_argument("--langs", default=",".join(LANGS))
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
