"""The history checker of the chaos run (README.md): reads every process'
JSONL history and GetJob of every job, and counts lost, unexpected, completed
twice, stale acks accepted and attempts beyond max."""

import collections
import json
import time

from chaos_system import KEY_PREFIX, QUEUE, redis_call

# --------------------------------------------------------------------------
# histories and the checker

def read_history(paths):
    events = []
    bad = 0
    for path in paths:
        with open(path) as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    bad += 1  # only possible if a write was torn; reported
    events.sort(key=lambda e: e["t"])
    return events, bad


def producer_view(pevents):
    """uid -> {"ok": [job ids], "unknown": n, "failed": n, "invoked": n, "dup_first": bool}"""
    view = collections.defaultdict(lambda: {"ok": [], "unknown": 0, "failed": 0,
                                            "invoked": 0, "dup_first": False, "dup": 0})
    for e in pevents:
        v = view[e["uid"]]
        if e["ev"] == "invoke":
            v["invoked"] += 1
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
        keys = [f"{KEY_PREFIX}:{{{QUEUE}}}:idem:{u}" for u in chunk]
        for u, v in zip(chunk, redis_call(redis_port, "MGET", *keys, timeout=10)):
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


def check(pview, wevents, jobs, landed):
    """The counts. jobs: job id -> Job or None (NOT_FOUND)."""
    from jobwire import JobState
    final = (JobState.COMPLETED, JobState.DEAD)
    acked = {u: v for u, v in pview.items() if v["ok"]}
    known_good = set(acked) | {u for u, j in landed.items() if j}
    by_uid = collections.defaultdict(list)
    by_job = collections.defaultdict(list)
    for e in wevents:
        by_uid[e["uid"]].append(e)
        by_job[e["job"]].append(e)

    res = collections.OrderedDict()
    detail = collections.defaultdict(list)

    # lost: acknowledged, no accepted Ack in any history, and the broker does
    # not have it COMPLETED or DEAD (NOT_FOUND included)
    lost = 0
    missing = 0
    for u, v in acked.items():
        jids = set(v["ok"])
        done_hist = any(e["ev"] == "ack_ok" for e in by_uid.get(u, []))
        states = [jobs.get(j) for j in jids]
        if any(j is None for j in states):
            missing += 1
            detail["missing_in_broker"].append(f"{u} job {sorted(jids)}")
        done_broker = any(j is not None and j.state in final for j in states)
        if not done_hist and not done_broker:
            lost += 1
            detail["lost"].append(
                f"{u} job {sorted(jids)} broker "
                f"{[(j.state.name, j.attempts, j.error) if j else 'NOT_FOUND' for j in states]}")
    res["lost"] = lost

    # unexpected: a completion (or any run) of a uid never invoked, or whose
    # every call failed definitely
    unexpected = 0
    for u, evs in by_uid.items():
        if u in known_good:
            continue
        v = pview.get(u)
        if v is not None and v["unknown"] > 0:
            continue  # an unknown enqueue that landed (resolved below)
        if any(e["ev"] == "ack_ok" for e in evs):
            unexpected += 1
            detail["unexpected"].append(f"{u}: {evs[:3]}")
    res["unexpected"] = unexpected

    # completed twice: more than one accepted Ack for one uid
    twice = 0
    for u, evs in by_uid.items():
        oks = [(e["job"], e["att"]) for e in evs if e["ev"] == "ack_ok"]
        if len(oks) > 1:
            twice += 1
            detail["completed_twice"].append(f"{u}: {oks}")
    res["completed_twice"] = twice

    # stale Acks accepted: an accepted Ack for attempt k of a job that ran (or
    # per the broker, was claimed for) an attempt > k afterwards
    stale = 0
    superseded_before_ack = 0
    for jid, evs in by_job.items():
        job = jobs.get(jid)
        for e in evs:
            if e["ev"] != "ack_ok":
                continue
            k = e["att"]
            later = [x for x in evs if x["ev"] == "start" and x["att"] > k]
            broker_later = job is not None and job.attempts > k
            if later or broker_later:
                stale += 1
                if any(x["t"] < e["t"] for x in later):
                    superseded_before_ack += 1
                detail["stale_acks_accepted"].append(
                    f"job {jid} uid {e['uid']}: ack_ok of attempt {k} by {e['who']} at "
                    f"{e['t']:.3f}; later runs "
                    f"{[(x['att'], x['who'], round(x['t'], 3)) for x in later]}; broker "
                    f"{(job.state.name, job.attempts) if job else 'NOT_FOUND'}")
    res["stale_acks_accepted"] = stale

    beyond = 0
    for jid, evs in by_job.items():
        job = jobs.get(jid)
        bad = [e for e in evs if e["ev"] == "start" and e["att"] > e["max"]]
        if bad or (job is not None and job.attempts > job.max_attempts):
            beyond += 1
            detail["attempts_beyond_max"].append(f"job {jid}: {bad[:2]} broker "
                                                 f"{job.attempts if job else None}")
    res["attempts_beyond_max"] = beyond

    # idempotency: two different job ids for one uid
    dedup = sum(1 for v in acked.values() if len(set(v["ok"])) > 1)
    for u, v in acked.items():
        if len(set(v["ok"])) > 1:
            detail["idempotency_broken"].append(f"{u}: {v['ok']}")
    run_jobs = collections.defaultdict(set)
    for e in wevents:
        run_jobs[e["uid"]].add(e["job"])
    for u, js in run_jobs.items():
        if len(js) > 1:
            dedup += 1
            detail["idempotency_broken"].append(f"{u} ran as jobs {sorted(js)}")
    res["idempotency_broken"] = dedup

    info = collections.OrderedDict()
    info["enqueues_acknowledged"] = len(acked)
    info["uids_invoked"] = len(pview)
    info["enqueue_calls_unknown"] = sum(v["unknown"] for v in pview.values())
    info["enqueue_calls_failed"] = sum(v["failed"] for v in pview.values())
    unresolved = [u for u, v in pview.items() if not v["ok"] and v["unknown"]]
    info["uids_only_unknown"] = len(unresolved)
    info["uids_only_unknown_landed"] = sum(1 for u in unresolved if landed.get(u)
                                           or u in by_uid)
    info["uids_only_unknown_not_landed"] = info["uids_only_unknown"] - info[
        "uids_only_unknown_landed"]
    # an unknown call that had landed, shown by the retry's duplicate = true
    info["retry_answered_duplicate"] = sum(1 for v in pview.values() if v["dup"])
    info["duplicate_on_first_call"] = sum(1 for v in pview.values() if v["dup_first"])
    ack_ok_jobs = {e["job"] for e in wevents if e["ev"] == "ack_ok"}
    # COMPLETED without an ack_ok line: the worker was killed between the Ack
    # and its history line, or its Ack ended UNAVAILABLE / DEADLINE_EXCEEDED
    # (given up at the lease end) although the broker had applied it
    info["completed_without_ack_ok_line"] = sum(
        1 for j, job in jobs.items()
        if job is not None and job.state == JobState.COMPLETED and j not in ack_ok_jobs)
    info["acked_missing_in_broker"] = missing
    states = collections.Counter()
    for u, v in acked.items():
        j = jobs.get(v["ok"][0])
        states[j.state.name if j else "NOT_FOUND"] += 1
    info["final_states_of_acked"] = dict(states)
    info["runs_started"] = sum(1 for e in wevents if e["ev"] == "start")
    info["ack_ok"] = sum(1 for e in wevents if e["ev"] == "ack_ok")
    info["acks_refused"] = dict(collections.Counter(
        e.get("code") for e in wevents if e["ev"] == "ack_error"))
    info["fails_refused"] = dict(collections.Counter(
        e.get("code") for e in wevents if e["ev"] == "fail_error"))
    info["fail_ok"] = dict(collections.Counter(e.get("out") for e in wevents
                                               if e["ev"] == "fail_ok"))
    info["stale_acks_superseded_before_ack"] = superseded_before_ack
    return res, info, detail

