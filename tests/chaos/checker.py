"""The history checker of the chaos run (README.md, "The checker"): reads
every process' JSONL history and GetJob of every job, and judges from the
records of the processes the harness controls. A job is completed only when
a worker logged `ack_ok` for it; runs are counted from the workers' `start`
records, one per lease token; the broker's state is used only to find
contradictions (a COMPLETED job no worker Acked, a DEAD job the records do
not explain, an acknowledged job it no longer knows)."""

import collections
import json
import time

from chaos_system import KEY_PREFIX, NOT_OUTCOMES, QUEUE, redis_call
from failover_checks import (FAILOVER_AFTER_S, FAILOVER_BEFORE_S,  # noqa: F401 (re-exported)
                             failover_windows, split_reused_ids)
from fault_effects import check_faults

# The broker keeps a COMPLETED job (and an idempotency key) this long
# (--completed_retention_ms, --dedup_window_ms: 24 h by default, which the
# run does not change). Within it, NOT_FOUND for an acknowledged job is a loss.
RETENTION_S = 24 * 3600.0

# An Ack / Fail refused with one of these changed nothing. Any other error
# (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ...) leaves it unknown: the
# broker may have applied it.
DEFINITE_REFUSALS = ("FAILED_PRECONDITION", "NOT_FOUND", "INVALID_ARGUMENT")


# The violation counts, in the order they are printed; the run fails when
# any is non-zero.
VIOLATIONS = ("lost", "unexpected", "completed_twice", "stale_acks_accepted",
              "attempts_beyond_max", "idempotency_broken", "completed_without_ack",
              "ack_ok_not_durable", "dead_unexplained", "runs_without_outcome",
              "fault_kinds_without_effect")

# --------------------------------------------------------------------------
# reading

def read_history(paths, killed_paths=()):
    """(events of the history files `paths`, oldest first; torn lines). A
    line that does not parse is torn, and reported, except the unfinished
    last line (no newline) of a file in `killed_paths`: SIGKILL may cut a
    process' write short, and nothing follows it in that file."""
    events = []
    bad = 0
    for path in paths:
        with open(path) as f:
            lines = f.readlines()
        for n, line in enumerate(lines):
            try:
                events.append(json.loads(line))
            except ValueError:
                if n == len(lines) - 1 and not line.endswith("\n") and path in killed_paths:
                    continue
                bad += 1  # only possible if a write was torn; reported
    events.sort(key=lambda e: e["t"])
    return events, bad


def producer_view(pevents):
    """uid -> {"ok": [job ids], "unknown": n, "failed": n, "invoked": n,
    "dup_first": bool, "dup": n, "t": first invoke, "t_last": last record}"""
    view = collections.defaultdict(lambda: {"ok": [], "unknown": 0, "failed": 0, "invoked": 0,
                                            "dup_first": False, "dup": 0, "t": None,
                                            "t_last": None})
    for e in pevents:
        v = view[e["uid"]]
        v["t_last"] = e["t"]
        if e["ev"] == "invoke":
            v["invoked"] += 1
            if v["t"] is None:
                v["t"] = e["t"]
        elif e["ev"] == "ok":
            v["ok"].append(e["job"])
            v["dup"] += bool(e["dup"])
            if e["dup"] and e["tr"] == 1:
                v["dup_first"] = True
        elif e["ev"] == "unknown":
            v["unknown"] += 1
        elif e["ev"] == "failed":
            v["failed"] += 1
    return view


def resolve_unknown(redis_port, uids):
    """uid -> job id (or None) from the idempotency keys: did an enqueue whose
    every call ended unknown land after all? Read-only."""
    out = {}
    uids = list(uids)
    for k in range(0, len(uids), 200):
        chunk = uids[k:k + 200]
        # Layout 3: the queue's idem hash, key -> job id (an expired key may
        # linger until trimmed; the chaos run is far shorter than the window).
        idem = f"{KEY_PREFIX}:{{{QUEUE}}}:idem"
        for u, v in zip(chunk, redis_call(redis_port, "HMGET", idem, *chunk, timeout=10)):
            out[u] = v
    return out


def get_jobs(client, job_ids):
    from jobwire import JobwireError
    import grpc
    jobs = {}
    for jid in job_ids:
        for attempt in range(5):
            try:
                jobs[jid] = client.get_job(QUEUE, jid, timeout=5)
                break
            except JobwireError as e:
                if e.code == grpc.StatusCode.NOT_FOUND:
                    jobs[jid] = None
                    break
                if attempt == 4:
                    raise
                time.sleep(0.5)
    return jobs


# --------------------------------------------------------------------------
# runs: one per lease token, from the workers' records

class Run:
    """One delivery of a job to a worker, named by its lease token."""

    def __init__(self, tok, e):
        self.tok = tok
        self.job = e["job"]
        self.uid = e["uid"]
        self.who = e["who"]
        self.att = e.get("att")
        self.max = e.get("max")
        self.t = None          # the start record (None: never started)
        self.t_first = e["t"]  # its first record of any kind
        # when it was claimed: the lease end it was delivered with, minus the
        # lease asked for (None: not recorded)
        exp, lease = e.get("exp"), e.get("lease")
        self.claimed = (exp - lease) / 1000.0 if exp and lease else None
        self.lease_end = exp / 1000.0 if exp else None
        self.end = None        # "ok" / "raised": the handler returned / raised
        self.outcomes = []     # outcome records, whatever their kind
        self.unsettled = False

    def order(self):
        """The time it was claimed, else its start, else its first record."""
        if self.claimed is not None:
            return self.claimed
        return self.t if self.t is not None else self.t_first

    def kinds(self):
        return [o["ev"] for o in self.outcomes]

    def ack_ok(self):
        return "ack_ok" in self.kinds()

    def ack_unknown(self, killed):
        """Its Ack may have been applied, but no record says so: ack_unknown,
        an ack_error that is not a definite refusal, or a handler that
        returned in a worker that was killed or gave the run up before an
        outcome was reported."""
        for o in self.outcomes:
            if o["ev"] == "ack_unknown":
                return True
            if o["ev"] == "ack_error" and o.get("code") not in DEFINITE_REFUSALS:
                return True
        return (self.end == "ok" and not any(k.startswith(("ack_", "fail_")) for k in self.kinds())
                and (self.unsettled or self.who in killed))


def runs_of(wevents):
    """token -> Run, and job id -> [(claim time, token)] of its deliveries
    (started or dropped), in claim order."""
    runs = collections.OrderedDict()
    for e in wevents:
        if e["ev"] in ("sigterm", "signal"):
            continue
        tok = e.get("tok") or f"{e['who']}/{e['job']}/{e.get('att')}"
        run = runs.get(tok)
        if run is None:
            run = runs[tok] = Run(tok, e)
        if e["ev"] == "start":
            run.t = e["t"]
            run.max = e.get("max")
        elif e["ev"] == "end":
            run.end = "ok" if e.get("ok") else "raised"
        elif e["ev"] == "unsettled":
            run.unsettled = True
        elif e["ev"] not in NOT_OUTCOMES:
            run.outcomes.append(e)
    deliveries = collections.defaultdict(list)
    for tok, run in runs.items():
        if run.t is not None or "expired_dropped" in run.kinds():
            deliveries[run.job].append((run.order(), tok))
    for d in deliveries.values():
        d.sort()
    return runs, deliveries


# --------------------------------------------------------------------------
# the checker

def state_name(job):
    return "NOT_FOUND" if job is None else job.state.name


def check(pview, wevents, jobs, landed, faults=(), required_faults=(), killed=(), now=None,
          failover_windows=(), allow_failover_loss=False):
    """The counts. pview: producer_view(); wevents: every worker record;
    jobs: job id -> Job (or None: NOT_FOUND) from GetJob after the drain;
    landed: uid -> job id or None (resolve_unknown of the uids whose every
    call ended unknown); faults: the nemesis' executed records;
    required_faults: the kinds that must have taken effect; killed: names of
    the worker incarnations ended by SIGKILL; failover_windows: [(from, to)]
    epoch seconds around each master kill (failover_windows()); with
    allow_failover_loss (the failover modes), an acknowledged (or landed)
    enqueue whose job is NOT_FOUND and whose calls fall in such a window is
    counted as lost_in_failover (reported, not a violation), and so is an
    ack_ok of that job within the window; outside every window, or without
    allow_failover_loss, it is lost. Returns (counts, info, detail)."""
    now = time.time() if now is None else now
    killed = set(killed)
    windows = list(failover_windows) if allow_failover_loss else []
    pview, wevents, jobs, landed, reused = split_reused_ids(pview, wevents, jobs, landed)

    def in_window(t0, t1=None):
        t1 = t0 if t1 is None else t1
        return t0 is not None and any(a <= t1 and t0 <= b for a, b in windows)

    def enqueue_in_window(u):
        v = pview.get(u)
        return v is not None and in_window(v["t"], v["t_last"])
    runs, deliveries = runs_of(wevents)
    by_job = collections.defaultdict(list)
    by_uid = collections.defaultdict(list)
    for run in runs.values():
        by_job[run.job].append(run)
        by_uid[run.uid].append(run)
    res = collections.OrderedDict((k, 0) for k in VIOLATIONS)
    info = collections.OrderedDict()
    detail = collections.defaultdict(list)

    def violation(kind, line):
        res[kind] += 1
        detail[kind].append(line)

    # The enqueues that must end completed or dead: acknowledged, or whose
    # every call ended unknown but which landed (by the idempotency key, or
    # because a worker ran them).
    expected = {}
    for u, v in pview.items():
        jids = set(v["ok"])
        if not jids and v["unknown"]:
            jids = {landed[u]} if landed.get(u) else set()
            jids |= {r.job for r in by_uid.get(u, [])}
        if jids:
            expected[u] = jids

    # Per job: what the records say, against what the broker says.
    verdict = {}
    acks_lost_in_failover = []
    for jid, job in jobs.items():
        jruns = by_job.get(jid, [])
        state = state_name(job)
        if any(r.ack_ok() for r in jruns):
            verdict[jid] = "completed"
            ack_ts = [o["t"] for r in jruns for o in r.outcomes if o["ev"] == "ack_ok"]
            if (job is None and windows and all(in_window(t) for t in ack_ts)
                    and all(enqueue_in_window(r.uid) for r in jruns)):
                # the job and its Ack both went with the master's last writes
                acks_lost_in_failover.append(jid)
            elif state != "COMPLETED":
                violation("ack_ok_not_durable", f"job {jid}: ack_ok by "
                          f"{[r.who for r in jruns if r.ack_ok()]} but the broker says {state}")
        elif state == "COMPLETED":
            if any(r.ack_unknown(killed) for r in jruns):
                verdict[jid] = "completed_unconfirmed"
            else:
                verdict[jid] = "completed_without_ack"
                violation("completed_without_ack", f"job {jid}: COMPLETED, runs "
                          f"{[(r.who, r.att, r.end, r.kinds()) for r in jruns]}")
        elif state == "DEAD":
            maxa = next((r.max for r in jruns if r.max), None) or job.max_attempts
            n = len(deliveries.get(jid, []))
            if n >= maxa:
                verdict[jid] = "dead_exhausted"
            else:
                verdict[jid] = "dead_unexplained"
                violation("dead_unexplained", f"job {jid}: DEAD ({job.error[:80]!r}) after "
                          f"{n} recorded deliveries of {maxa}: "
                          f"{[(r.who, r.att, r.end, r.kinds()) for r in jruns]}")
        else:
            verdict[jid] = state

    # lost: an expected enqueue that no worker completed and that the broker
    # neither has COMPLETED (with an unknown Ack) nor DEAD; NOT_FOUND within
    # the retention window is a loss whatever the histories say.
    settled = ("completed", "completed_unconfirmed", "completed_without_ack", "dead_exhausted",
               "dead_unexplained")
    lost_in_failover = []
    for u, jids in sorted(expected.items()):
        v = pview[u]
        within = v["t"] is None or now - v["t"] < RETENTION_S
        gone = [j for j in jids if j in jobs and jobs[j] is None]
        if gone and within and enqueue_in_window(u):
            # asynchronous replication: acknowledged by the master just
            # before it was killed, never received by the promoted replica
            lost_in_failover.append(f"{u} job {sorted(jids)}: NOT_FOUND, enqueued "
                                    f"{v['t']:.3f}-{v['t_last']:.3f}, within a failover window")
        elif gone and within:
            violation("lost", f"{u} job {sorted(jids)}: NOT_FOUND within the retention window"
                      + (" (outside every failover window)" if windows else ""))
        elif not any(verdict.get(j) in settled for j in jids):
            how = "acknowledged" if v["ok"] else "landed (every call unknown)"
            violation("lost", f"{u} job {sorted(jids)} {how}: broker "
                      f"{[(state_name(jobs.get(j)), getattr(jobs.get(j), 'attempts', None)) for j in jids]}"
                      f", runs {[(r.who, r.att, r.kinds()) for j in jids for r in by_job.get(j, [])]}")

    # unexpected: a run or a completion of a uid never invoked, or whose
    # every call failed definitely (an unknown call may have landed)
    for u, uruns in by_uid.items():
        v = pview.get(u)
        if v is not None and (v["ok"] or v["unknown"]):
            continue
        why = "never invoked" if v is None else "every call failed definitely"
        violation("unexpected", f"{u} ({why}): runs "
                  f"{[(r.who, r.job, r.att, r.kinds()) for r in uruns]}")

    # completed twice: more than one accepted Ack for one uid
    for u, uruns in by_uid.items():
        oks = [(r.job, r.att, r.who) for r in uruns if r.ack_ok()]
        if len(oks) > 1:
            violation("completed_twice", f"{u}: {oks}")

    # stale acks accepted: an ack_ok for a run of a job that was claimed
    # again (another lease token) after it: the Ack was accepted for a
    # superseded lease, or the job ran again after an accepted Ack. Claim
    # order, not start order: a delivery can sit in a frozen worker's stream
    # and start after the lease that superseded it.
    superseded_before_ack = 0
    for jid, jruns in by_job.items():
        for r in jruns:
            if not r.ack_ok():
                continue
            t0 = r.order()
            ack_t = next(o["t"] for o in r.outcomes if o["ev"] == "ack_ok")
            later = [(t, tok) for t, tok in deliveries.get(jid, []) if tok != r.tok and t > t0]
            if later:
                before = any(t < ack_t for t, _ in later)
                superseded_before_ack += before
                violation("stale_acks_accepted", (
                    f"job {jid} uid {r.uid}: ack_ok of run {r.tok} (att {r.att}) by {r.who} "
                    f"at {ack_t:.3f}, claimed {t0:.3f}; claimed later "
                    f"{[(runs[tok].who, runs[tok].att, round(t, 3)) for t, tok in later]} "
                    + ("(superseded before the Ack)" if before else
                       "(ran again after the accepted Ack)")))

    # attempts beyond max: more deliveries (lease tokens) than max_attempts,
    # or a run numbered beyond it
    for jid, d in deliveries.items():
        jruns = by_job[jid]
        maxa = next((r.max for r in jruns if r.max), None)
        if maxa is None and jobs.get(jid) is not None:
            maxa = jobs[jid].max_attempts
        over = [r for r in jruns if r.att and r.max and r.att > r.max]
        if (maxa and len(d) > maxa) or over:
            violation("attempts_beyond_max", f"job {jid}: {len(d)} deliveries, max {maxa}, "
                      f"runs {[(r.who, r.att) for r in jruns]}")

    # idempotency: two different job ids for one uid (acknowledged, landed,
    # or run)
    for u, v in pview.items():
        ids = set(v["ok"]) | ({landed[u]} if landed.get(u) else set())
        ids |= {r.job for r in by_uid.get(u, [])}
        if len(ids) > 1:
            violation("idempotency_broken", f"{u}: acknowledged {v['ok']}, landed "
                      f"{landed.get(u)}, run as {sorted({r.job for r in by_uid.get(u, [])})}")

    # runs without an outcome, where no record explains why (the worker was
    # not killed and did not list it as unsettled at exit): the records are
    # incomplete, so nothing above can be trusted for that run
    for r in runs.values():
        if r.t is not None and not r.outcomes and not r.unsettled and r.who not in killed:
            violation("runs_without_outcome", f"run {r.tok} of job {r.job} by {r.who} "
                      f"(att {r.att}, handler {r.end or 'running'})")

    # every required fault kind took effect at least once
    missing, fdetail, fsummary = check_faults(faults, required_faults, runs, deliveries)
    res["fault_kinds_without_effect"] = len(missing)
    detail["fault_kinds_without_effect"] = fdetail

    # ---- figures (not violations)
    sigterm_at = {e["who"]: e["t"] for e in wevents if e["ev"] == "sigterm"}
    verdicts = collections.Counter(verdict.get(j) for js in expected.values() for j in js)
    info["enqueues_acknowledged"] = sum(1 for v in pview.values() if v["ok"])
    info["uids_invoked"] = len(pview)
    info["enqueue_calls_unknown"] = sum(v["unknown"] for v in pview.values())
    info["enqueue_calls_failed"] = sum(v["failed"] for v in pview.values())
    only_unknown = [u for u, v in pview.items() if not v["ok"] and v["unknown"]]
    info["uids_only_unknown"] = len(only_unknown)
    info["uids_only_unknown_landed"] = sum(1 for u in only_unknown if u in expected)
    info["uids_only_unknown_not_landed"] = len(only_unknown) - info["uids_only_unknown_landed"]
    # an unknown call that had landed, shown by the retry's duplicate = true
    info["retry_answered_duplicate"] = sum(1 for v in pview.values() if v["dup"])
    info["duplicate_on_first_call"] = sum(1 for v in pview.values() if v["dup_first"])
    info["verdicts_of_expected_jobs"] = dict(verdicts)
    # COMPLETED per the broker, no ack_ok, but a run whose Ack is unknown
    # (ack_unknown, an Ack given up as UNAVAILABLE, or a worker killed
    # between its handler's return and the Ack's outcome): not lost, not
    # counted as completed either
    info["completed_unconfirmed"] = sum(1 for x in verdict.values()
                                        if x == "completed_unconfirmed")
    info["dead_exhausted"] = sum(1 for x in verdict.values() if x == "dead_exhausted")
    info["final_states"] = dict(collections.Counter(state_name(j) for j in jobs.values()))
    info["runs_started"] = sum(1 for r in runs.values() if r.t is not None)
    info["outcomes"] = dict(collections.Counter(k for r in runs.values() for k in r.kinds()))
    info["acks_refused"] = dict(collections.Counter(
        o.get("code") for r in runs.values() for o in r.outcomes if o["ev"] == "ack_error"))
    info["fails_refused"] = dict(collections.Counter(
        o.get("code") for r in runs.values() for o in r.outcomes if o["ev"] == "fail_error"))
    info["fail_ok"] = dict(collections.Counter(
        o.get("out") for r in runs.values() for o in r.outcomes if o["ev"] == "fail_ok"))
    # started after the lease they were delivered with had ended (local
    # clock): a delivery held in a frozen worker's stream
    info["runs_started_after_lease_end"] = sum(
        1 for r in runs.values() if r.t is not None and r.lease_end is not None
        and r.t > r.lease_end)
    info["runs_interrupted_by_kill"] = sum(1 for r in runs.values() if r.t is not None
                                           and not r.outcomes and r.who in killed)
    info["runs_unsettled_at_exit"] = sum(1 for r in runs.values() if r.unsettled)
    info["outcomes_after_sigterm"] = sum(
        1 for r in runs.values() for o in r.outcomes
        if r.who in sigterm_at and o["t"] >= sigterm_at[r.who])
    info["stale_acks_superseded_before_ack"] = superseded_before_ack
    info["faults_in_effect"] = dict(fsummary)
    # the failover modes: what asynchronous replication lost (not violations)
    info["lost_in_failover"] = len(lost_in_failover)
    info["ack_ok_lost_in_failover"] = len(acks_lost_in_failover)
    info["job_ids_reused"] = len(reused)
    detail["lost_in_failover"] = lost_in_failover
    detail["ack_ok_lost_in_failover"] = acks_lost_in_failover
    detail["job_ids_reused"] = [f"{j}: {us}" for j, us in sorted(reused.items())]
    return res, info, detail
