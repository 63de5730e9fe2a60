"""The fault rule of the chaos checker (README.md, "The checker"): every
fault kind the run requires must have taken effect at least once. The
nemesis records the evidence of each fault (nemesis.py) and sets `effect`;
a worker_pause is judged here from the workers' histories, because its
effect (a lease that expired while the worker was stopped) shows only there.
"""

import collections

# Codes with which the broker refuses an outcome for a superseded lease.
REFUSED_STALE = ("FAILED_PRECONDITION",)


def pause_effect(rec, runs, deliveries):
    """(effect, evidence) of one worker_pause. It took effect when a run it
    held at SIGSTOP (rec["held_tokens"]) got an Ack / Fail refused with
    FAILED_PRECONDITION, or was delivered again under another token before
    SIGCONT (its lease expired during the pause), or the Worker dropped it
    as expired after SIGCONT and the job was delivered again under another
    token afterwards (the retry's backoff can put that past SIGCONT). A
    pause lasts over two leases and a stopped Worker renews nothing, so a
    lease held at SIGSTOP always ends during it.

    runs: token -> Run; deliveries: job id -> [(claim time, token)]."""
    refused, redelivered, expired = [], [], []
    t_stop = rec.get("t_stopped", rec.get("t_start", 0))
    t_cont = rec.get("t_end", float("inf"))
    for tok in rec.get("held_tokens", []):
        run = runs.get(tok)
        if run is None:
            continue
        if any(o.get("code") in REFUSED_STALE for o in run.outcomes):
            refused.append(tok)
        if any(t_stop <= t <= t_cont and t2 != tok for t, t2 in deliveries.get(run.job, [])):
            redelivered.append(tok)
        if ("expired_dropped" in run.kinds()
                and any(t >= t_stop and t2 != tok for t, t2 in deliveries.get(run.job, []))):
            expired.append(tok)
    evidence = {"held": len(rec.get("held_tokens", [])), "late_outcome_refused": len(refused),
                "redelivered_during_pause": len(redelivered),
                "expired_then_redelivered": len(expired)}
    return bool(refused or redelivered or expired), evidence


def check_faults(faults, required, runs, deliveries):
    """(kinds without effect, detail lines, per-kind summary).

    faults: the executed fault records; required: the kinds the run must
    show in effect (every kind the schedule holds)."""
    by_kind = collections.defaultdict(list)
    for rec in faults:
        if rec["kind"] == "worker_pause":
            rec["effect"], rec["pause_evidence"] = pause_effect(rec, runs, deliveries)
        by_kind[rec["kind"]].append(rec)
    missing, detail, summary = [], [], collections.OrderedDict()
    for kind in required:
        recs = by_kind.get(kind, [])
        n_eff = sum(1 for r in recs if r.get("effect"))
        summary[kind] = f"{n_eff}/{len(recs)}"
        if n_eff == 0:
            missing.append(kind)
            if not recs:
                detail.append(f"{kind}: scheduled but never executed")
            for r in recs:
                ev = {k: v for k, v in r.items()
                      if k not in ("planned", "kind", "secs", "held_tokens", "t_start", "t_end")}
                detail.append(f"{kind} took no effect: {ev}")
    return missing, detail, summary
