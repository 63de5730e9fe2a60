"""The chaos checker can fail: small doctored histories, one per rule, each
with the counts it must produce (README.md, "The checker"). Needs the
jobwire package (the project venv); no Redis, no broker.

  .venv/bin/python -m pytest tests/chaos/checker_test.py
"""
import argparse
import json
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jobwire import Job, JobState  # noqa: E402

from checker import (FAILOVER_AFTER_S, FAILOVER_BEFORE_S, VIOLATIONS, check,  # noqa: E402
                     failover_windows, producer_view)
from nemesis import FAILOVER_FAULTS, FAULTS, full_round_s, make_schedule  # noqa: E402

NOW = 1000.0


# --------------------------------------------------------------------------
# building histories

def enq(uid, job, t=1.0, calls=("ok",)):
    """Producer records of one uid: each call "ok", "unknown" or "failed"."""
    out = []
    for k, kind in enumerate(calls, 1):
        out.append({"t": t, "who": "p0", "ev": "invoke", "uid": uid, "tr": k})
        rec = {"t": t + 0.01, "who": "p0", "ev": kind, "uid": uid, "tr": k}
        if kind == "ok":
            rec.update(job=job, dup=k > 1)
        else:
            rec["code"] = "UNAVAILABLE" if kind == "unknown" else "INVALID_ARGUMENT"
        out.append(rec)
        t += 0.5
    return out


def run(uid, job, tok, t, who="w0.1", att=1, mx=10, end="ok", outcome="ack_ok", code=None,
        out=None, claimed=None):
    """Worker records of one run claimed at `claimed` (default: t) with a
    2 s lease and started at t: start, end (unless end=None: the handler was
    still running) and an outcome (unless outcome=None)."""
    exp = int(((t if claimed is None else claimed) + 2.0) * 1000)
    base = {"who": who, "uid": uid, "job": job, "att": att, "tok": tok, "exp": exp,
            "lease": 2000}
    recs = [dict(base, t=t, ev="start", max=mx)]
    if end is not None:
        recs.append(dict(base, t=t + 0.1, ev="end", ok=end == "ok"))
    if outcome is not None:
        rec = dict(base, t=t + 0.2, ev=outcome, lost=False)
        if code:
            rec["code"] = code
        if out:
            rec["out"] = out
        recs.append(rec)
    return recs


def job(jid, state, attempts=1, mx=10, error=""):
    return Job(id=jid, queue="chaos", type="chaos", payload=b"", attempt=attempts,
               max_attempts=mx, state=JobState[state], error=error)


def judge(pevents, wevents, jobs, landed=None, **kw):
    wevents = sorted(wevents, key=lambda e: e["t"])
    return check(producer_view(pevents), wevents, jobs, landed or {}, now=NOW, **kw)


def violations(res):
    return {k: v for k, v in res.items() if v}


# --------------------------------------------------------------------------
# the completion and loss rules

# (name, producer records, worker records, GetJob, landed, expected non-zero
# counts, expected info figures)
CASES = [
    ("clean: enqueued, run once, acked",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2), {"j1": job("j1", "COMPLETED")}, {},
     {}, {"completed_unconfirmed": 0}),
    ("clean: first lease superseded and refused, second run acked",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2, outcome="ack_error", code="FAILED_PRECONDITION")
     + run("u1", "j1", "b.1", 5, who="w1.1", att=2),
     {"j1": job("j1", "COMPLETED", 2)}, {}, {}, {}),
    ("COMPLETED by the broker, no worker Acked it",
     enq("u1", "j1"), [], {"j1": job("j1", "COMPLETED")}, {},
     {"completed_without_ack": 1}, {}),
    ("COMPLETED by the broker, the only Ack was refused",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2, outcome="ack_error", code="FAILED_PRECONDITION"),
     {"j1": job("j1", "COMPLETED")}, {}, {"completed_without_ack": 1}, {}),
    ("COMPLETED, only ack_unknown: completed, unconfirmed (not lost)",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2, outcome="ack_unknown"),
     {"j1": job("j1", "COMPLETED")}, {}, {}, {"completed_unconfirmed": 1}),
    ("COMPLETED, the Ack given up as UNAVAILABLE: unconfirmed",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2, outcome="ack_error", code="UNAVAILABLE"),
     {"j1": job("j1", "COMPLETED")}, {}, {}, {"completed_unconfirmed": 1}),
    ("COMPLETED, worker killed between handler end and outcome: unconfirmed",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2, outcome=None),
     {"j1": job("j1", "COMPLETED")}, {}, {}, {"completed_unconfirmed": 1,
                                              "runs_interrupted_by_kill": 1}),
    ("acked enqueue, no ack_ok, broker PENDING: lost",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2, outcome="ack_unknown"),
     {"j1": job("j1", "PENDING")}, {}, {"lost": 1}, {}),
    ("acked enqueue that never ran, broker PENDING: lost",
     enq("u1", "j1"), [], {"j1": job("j1", "PENDING", 0)}, {}, {"lost": 1}, {}),
    ("acked enqueue NOT_FOUND within the retention: lost, even with an ack_ok",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2), {"j1": None}, {},
     {"lost": 1, "ack_ok_not_durable": 1}, {}),
    ("ack_ok but the broker has it PENDING: the Ack did not last",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2), {"j1": job("j1", "PENDING")}, {},
     {"ack_ok_not_durable": 1}, {}),
    ("every call unknown, landed (idempotency key), never completed: lost",
     enq("u1", None, calls=("unknown", "unknown", "unknown")), [],
     {"j9": job("j9", "PENDING", 0)}, {"u1": "j9"}, {"lost": 1},
     {"uids_only_unknown_landed": 1}),
    ("every call unknown, landed and completed: fine",
     enq("u1", None, calls=("unknown", "unknown", "unknown")), run("u1", "j9", "a.1", 2),
     {"j9": job("j9", "COMPLETED")}, {"u1": "j9"}, {}, {"uids_only_unknown_landed": 1}),
    ("every call unknown, not landed: nothing expected",
     enq("u1", None, calls=("unknown", "unknown")), [], {}, {"u1": None}, {},
     {"uids_only_unknown_not_landed": 1}),
    ("DEAD after 1 of 10 deliveries: dead, unexplained",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2, end="raised", outcome="fail_ok",
                          out="RETRY_SCHEDULED"),
     {"j1": job("j1", "DEAD", 1, error="x")}, {}, {"dead_unexplained": 1}, {}),
    ("DEAD after max_attempts recorded deliveries: explained",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2, mx=2, end="raised", outcome="fail_ok", out="RETRY_SCHEDULED")
     + run("u1", "j1", "b.1", 4, mx=2, att=2, end="raised", outcome="fail_ok", out="DEAD"),
     {"j1": job("j1", "DEAD", 2, mx=2, error="x")}, {}, {}, {"dead_exhausted": 1}),
    ("stale Ack: run a.1 acked after run b.1 of the same job started",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2, end=None, outcome=None)
     + [{"t": 6.0, "who": "w0.1", "ev": "ack_ok", "uid": "u1", "job": "j1", "att": 1,
         "tok": "a.1"}]
     + run("u1", "j1", "b.1", 5, who="w1.1", att=2, outcome="ack_error",
           code="FAILED_PRECONDITION"),
     {"j1": job("j1", "COMPLETED", 2)}, {}, {"stale_acks_accepted": 1},
     {"stale_acks_superseded_before_ack": 1}),
    ("stale Ack with the attempt number given back (release.lua): tokens tell",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2, outcome=None, end=None)
     + [{"t": 6.0, "who": "w0.1", "ev": "ack_ok", "uid": "u1", "job": "j1", "att": 1,
         "tok": "a.1"}]
     + run("u1", "j1", "b.1", 5, who="w1.1", att=1, outcome="ack_error",
           code="FAILED_PRECONDITION"),
     {"j1": job("j1", "COMPLETED", 1)}, {}, {"stale_acks_accepted": 1}, {}),
    ("clean: a delivery held in a frozen worker's stream starts after the lease "
     "that superseded it was acked; its own Ack is refused",
     enq("u1", "j1"),
     run("u1", "j1", "b.1", 4, who="w1.1", att=2)
     + run("u1", "j1", "a.1", 9, claimed=1, outcome="ack_error", code="FAILED_PRECONDITION"),
     {"j1": job("j1", "COMPLETED", 2)}, {}, {}, {"runs_started_after_lease_end": 1}),
    ("stale Ack of a run claimed first and started last",
     enq("u1", "j1"),
     run("u1", "j1", "b.1", 4, who="w1.1", att=2, outcome="ack_error",
         code="FAILED_PRECONDITION")
     + run("u1", "j1", "a.1", 9, claimed=1),
     {"j1": job("j1", "COMPLETED", 2)}, {}, {"stale_acks_accepted": 1}, {}),
    ("ran again after an accepted Ack, and acked twice",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2) + run("u1", "j1", "b.1", 5, who="w1.1", att=2),
     {"j1": job("j1", "COMPLETED", 2)}, {},
     {"stale_acks_accepted": 1, "completed_twice": 1}, {}),
    ("three deliveries of a job with max_attempts 2",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2, mx=2, outcome="ack_unknown")
     + run("u1", "j1", "b.1", 5, mx=2, att=2, outcome="ack_unknown")
     + run("u1", "j1", "c.1", 8, mx=2, att=2),
     {"j1": job("j1", "COMPLETED", 2, mx=2)}, {}, {"attempts_beyond_max": 1}, {}),
    ("a dropped delivery counts as a delivery",
     enq("u1", "j1"),
     [{"t": 2.0, "who": "w0.1", "ev": "expired_dropped", "uid": "u1", "job": "j1", "att": 1,
       "tok": "a.1"}]
     + run("u1", "j1", "b.1", 5, mx=1, att=2),
     {"j1": job("j1", "COMPLETED", 2, mx=1)}, {}, {"attempts_beyond_max": 1}, {}),
    ("a run of a uid never invoked",
     [], run("zz", "j7", "a.1", 2), {"j7": job("j7", "COMPLETED")}, {},
     {"unexpected": 1}, {}),
    ("a run of a uid whose every call failed definitely",
     enq("u1", None, calls=("failed",)), run("u1", "j7", "a.1", 2),
     {"j7": job("j7", "COMPLETED")}, {}, {"unexpected": 1}, {}),
    ("one uid run as two job ids",
     enq("u1", "j1"), run("u1", "j1", "a.1", 2) + run("u1", "j2", "b.1", 3),
     {"j1": job("j1", "COMPLETED"), "j2": job("j2", "COMPLETED")}, {},
     {"idempotency_broken": 1, "completed_twice": 1}, {}),
    ("a run without outcome in a worker that was not killed and did not list it",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2, who="w3.1", outcome=None) + run("u1", "j1", "b.1", 5),
     {"j1": job("j1", "COMPLETED", 2)}, {}, {"runs_without_outcome": 1}, {}),
    ("a run abandoned at exit is listed as unsettled: accounted for",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2, who="w3.1", end=None, outcome=None)
     + [{"t": 3.0, "who": "w3.1", "ev": "unsettled", "uid": "u1", "job": "j1", "att": 1,
         "tok": "a.1"}]
     + run("u1", "j1", "b.1", 5),
     {"j1": job("j1", "COMPLETED", 2)}, {}, {}, {"runs_unsettled_at_exit": 1}),
    ("a late outcome after SIGTERM is judged: a stale ack_ok after the stop",
     enq("u1", "j1"),
     run("u1", "j1", "b.1", 5, who="w1.1", att=2)
     + run("u1", "j1", "a.1", 2, end=None, outcome=None)
     + [{"t": 8.0, "who": "w0.1", "ev": "sigterm", "sig": 15},
        {"t": 9.0, "who": "w0.1", "ev": "ack_ok", "uid": "u1", "job": "j1", "att": 1,
         "tok": "a.1"}],
     {"j1": job("j1", "COMPLETED", 2)}, {},
     {"stale_acks_accepted": 1, "completed_twice": 1}, {"outcomes_after_sigterm": 1}),
    ("an outcome kind the checker does not know is logged, not fatal",
     enq("u1", "j1"),
     run("u1", "j1", "a.1", 2, outcome="shiny_new_kind") + run("u1", "j1", "b.1", 5),
     {"j1": job("j1", "COMPLETED", 2)}, {}, {}, {}),
]


@pytest.mark.parametrize("name,pev,wev,jobs,landed,want,want_info", CASES,
                         ids=[c[0] for c in CASES])
def test_rule(name, pev, wev, jobs, landed, want, want_info):
    res, info, detail = judge(pev, wev, jobs, landed, killed={"w0.1"} if "killed" in name
                              else ())
    assert violations(res) == want, dict(detail)
    for k, v in want_info.items():
        assert info[k] == v, (k, info[k])
    for k in want:
        assert len(detail[k]) == want[k]


def test_every_count_is_reported():
    res, _, _ = judge(enq("u1", "j1"), run("u1", "j1", "a.1", 2), {"j1": job("j1", "COMPLETED")})
    assert list(res) == list(VIOLATIONS)


def test_unknown_outcome_kind_is_counted():
    _, info, _ = judge(enq("u1", "j1"), run("u1", "j1", "a.1", 2, outcome="shiny_new_kind")
                       + run("u1", "j1", "b.1", 5), {"j1": job("j1", "COMPLETED", 2)})
    assert info["outcomes"] == {"shiny_new_kind": 1, "ack_ok": 1}


# --------------------------------------------------------------------------
# the fault rule

def fault(kind, effect, **ev):
    return dict(planned=1.0, kind=kind, target="x", secs=1.0, start=1.0, end=2.0,
                t_start=1.0, t_end=2.0, effect=effect, **ev)


BASE = (enq("u1", "j1"), run("u1", "j1", "a.1", 2), {"j1": job("j1", "COMPLETED")})


@pytest.mark.parametrize("faults,required,missing", [
    ([fault("broker_partition", True, connections_killed=3)], ["broker_partition"], 0),
    ([fault("broker_partition", False, connections_killed=0)], ["broker_partition"], 1),
    ([fault("worker_kill", False, status=-9, runs_interrupted=0),
      fault("worker_kill", True, status=-9, runs_interrupted=1)], ["worker_kill"], 0),
    ([fault("redis_kill", True)], ["redis_kill", "redis_pause"], 1),  # never executed
    ([fault("broker_kill", False, alive_before=False)], FAULTS[2:3], 1),
], ids=["partition cut", "partition cut nothing", "one kill of two interrupted a run",
        "a required kind never executed", "kill of a dead broker"])
def test_fault_effect(faults, required, missing):
    res, _, detail = judge(*BASE, faults=faults, required_faults=required)
    assert res["fault_kinds_without_effect"] == missing, detail
    assert violations(res) == ({"fault_kinds_without_effect": missing} if missing else {})


def pause(held, t_stopped=3.0, t_end=8.0):
    return dict(fault("worker_pause", None), target="w0.1", t_start=t_stopped,
                t_stopped=t_stopped, t_end=t_end, held_tokens=held)


@pytest.mark.parametrize("wev,held,missing", [
    # the held run's late Ack refused after SIGCONT
    (run("u1", "j1", "a.1", 2.9, end="ok", outcome="ack_error", code="FAILED_PRECONDITION")
     + run("u1", "j1", "b.1", 9, who="w1.1", att=2), ["a.1"], 0),
    # the held run delivered again to another worker during the pause
    (run("u1", "j1", "a.1", 2.9, outcome="ack_error", code="NOT_FOUND")
     + run("u1", "j1", "b.1", 5, who="w1.1", att=2), ["a.1"], 0),
    # its lease ended during the pause, the Worker dropped it after SIGCONT,
    # and the retry ran under another token after SIGCONT (backoff)
    (run("u1", "j1", "a.1", 2.9, outcome="expired_dropped")
     + run("u1", "j1", "b.1", 9, who="w1.1", att=2), ["a.1"], 0),
    # dropped as expired, but never delivered again: no evidence it was taken back
    (run("u1", "j1", "a.1", 2.9, outcome="expired_dropped"), ["a.1"], 1),
    # the held run finished normally after SIGCONT: no lease expired
    (run("u1", "j1", "a.1", 2.9), ["a.1"], 1),
    # nothing held
    (run("u1", "j1", "a.1", 1.0), [], 1),
], ids=["late ack refused", "redelivered during the pause", "expired, then redelivered",
        "expired, never redelivered", "no lease expired", "held nothing"])
def test_worker_pause_effect(wev, held, missing):
    jobs = {"j1": job("j1", "COMPLETED", 2)}
    res, info, detail = judge(enq("u1", "j1"), wev, jobs, faults=[pause(held)],
                              required_faults=["worker_pause"])
    assert res["fault_kinds_without_effect"] == missing, detail


# --------------------------------------------------------------------------
# the schedule: every kind in the CI run, whatever the seed

def test_ci_schedule_holds_every_kind():
    args = argparse.Namespace(lease_ms=2000, warmup=3.0, workers=4, brokers=2)
    assert full_round_s(args) <= 60
    for seed in range(300):
        kinds = {k for _, k, _, _ in make_schedule(random.Random(seed), 60.0, args)}
        assert kinds == set(FAULTS), (seed, set(FAULTS) - kinds)


def test_worker_finds_the_lease_token_seam():
    import worker
    worker.check_seam()  # exits if jobwire.Worker no longer hands it over


# --------------------------------------------------------------------------
# the failover modes (--redis sentinel / cluster): losses around a master kill

def master_kill(t_kill=10.0, t_promoted=12.0, effect=True, **ev):
    return dict(fault("master_kill", effect, **ev), target="master", t_start=t_kill,
                t_kill=t_kill, t_promoted=t_promoted, t_end=t_promoted + 2.0)


def failover_judge(pev, wev, jobs, allow=True, faults=None, landed=None):
    faults = [master_kill()] if faults is None else faults
    return judge(pev, wev, jobs, landed, failover_windows=failover_windows(faults),
                 allow_failover_loss=allow)


def pjob(jid, state, uid, attempts=1):
    """A Job whose payload names its uid, as the chaos producers' do."""
    return Job(id=jid, queue="chaos", type="chaos", payload=json.dumps({"uid": uid}).encode(),
               attempt=attempts, max_attempts=10, state=JobState[state])


def test_failover_window_is_around_the_kill():
    assert failover_windows([master_kill(10.0, 12.0), fault("broker_kill", True)]) == [
        (10.0 - FAILOVER_BEFORE_S, 12.0 + FAILOVER_AFTER_S)]


# (name, producer records, worker records, GetJob, allow_failover_loss,
# expected non-zero counts, expected info figures). The master_kill: killed
# at t=10, promotion seen at t=12; the window is [7, 13].
FAILOVER_CASES = [
    ("acked just before the kill, NOT_FOUND after it: lost in failover, not lost",
     enq("u1", "j1", t=9.5), [], {"j1": None}, True,
     {}, {"lost_in_failover": 1, "job_ids_reused": 0}),
    ("the same NOT_FOUND outside every failover window: lost",
     enq("u1", "j1", t=2.0), [], {"j1": None}, True,
     {"lost": 1}, {"lost_in_failover": 0}),
    ("the same NOT_FOUND after the window (the new master had taken over): lost",
     enq("u1", "j1", t=20.0), [], {"j1": None}, True,
     {"lost": 1}, {"lost_in_failover": 0}),
    ("a loss within the window, but failover losses not allowed (standalone): lost",
     enq("u1", "j1", t=9.5), [], {"j1": None}, False,
     {"lost": 1}, {"lost_in_failover": 0}),
    ("enqueued and acked in the window, both lost with the master: lost in failover",
     enq("u1", "j1", t=9.0), run("u1", "j1", "a.1", 9.3), {"j1": None}, True,
     {}, {"lost_in_failover": 1, "ack_ok_lost_in_failover": 1}),
    ("the job lost, its ack_ok long after the window: not durable, lost",
     enq("u1", "j1", t=2.0), run("u1", "j1", "a.1", 30.0), {"j1": None}, True,
     {"lost": 1, "ack_ok_not_durable": 1}, {"lost_in_failover": 0}),
    ("the lost job's id handed out again to the next uid: lost in failover, no other count",
     enq("u1", "000000000007", t=9.5) + enq("u2", "000000000007", t=14.0),
     run("u2", "000000000007", "b.1", 14.5), {"000000000007": pjob("000000000007", "COMPLETED",
                                                                  "u2")}, True,
     {}, {"lost_in_failover": 1, "job_ids_reused": 1}),
    ("an id handed out again after a loss outside the window: lost",
     enq("u1", "000000000007", t=2.0) + enq("u2", "000000000007", t=14.0),
     run("u1", "000000000007", "a.1", 2.5, end="raised", outcome="fail_ok",
         out="RETRY_SCHEDULED", who="w2.1")
     + run("u2", "000000000007", "b.1", 14.5),
     {"000000000007": pjob("000000000007", "COMPLETED", "u2")}, True,
     {"lost": 1}, {"lost_in_failover": 0, "job_ids_reused": 1}),
    ("an Ack undone by the failover (ran again after an accepted Ack): still a violation",
     enq("u1", "j1", t=8.0), run("u1", "j1", "a.1", 9.0) + run("u1", "j1", "b.1", 15.0, att=2),
     {"j1": job("j1", "COMPLETED", 2)}, True,
     {"stale_acks_accepted": 1, "completed_twice": 1}, {"lost_in_failover": 0}),
]


@pytest.mark.parametrize("name,pev,wev,jobs,allow,want,want_info", FAILOVER_CASES,
                         ids=[c[0] for c in FAILOVER_CASES])
def test_failover_rule(name, pev, wev, jobs, allow, want, want_info):
    res, info, detail = failover_judge(pev, wev, jobs, allow=allow)
    assert violations(res) == want, dict(detail)
    for k, v in want_info.items():
        assert info[k] == v, (k, info[k], dict(detail))


def test_failover_loss_needs_a_master_kill():
    # failover losses allowed, but no master_kill in the run: every loss counts
    res, info, _ = failover_judge(enq("u1", "j1", t=9.5), [], {"j1": None}, faults=[])
    assert violations(res) == {"lost": 1} and info["lost_in_failover"] == 0


@pytest.mark.parametrize("faults,missing", [
    ([master_kill(master_before=1, master_after=2, status=-9)], 0),
    ([master_kill(effect=False, master_before=1, master_after=None, status=-9)], 1),
], ids=["master changed", "no new master"])
def test_master_kill_effect(faults, missing):
    res, _, detail = judge(*BASE, faults=faults, required_faults=["master_kill"])
    assert res["fault_kinds_without_effect"] == missing, detail


@pytest.mark.parametrize("mode", ["sentinel", "cluster"])
def test_failover_schedule_holds_every_kind(mode):
    args = argparse.Namespace(lease_ms=2000, warmup=3.0, workers=4, brokers=2, redis=mode)
    assert full_round_s(args) <= 60
    for seed in range(300):
        kinds = {k for _, k, _, _ in make_schedule(random.Random(seed), 60.0, args)}
        assert kinds == set(FAILOVER_FAULTS), (seed, set(FAILOVER_FAULTS) - kinds)
