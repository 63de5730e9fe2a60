"""The checker's rules for the failover modes (README.md, --redis sentinel /
cluster): the windows around each master kill in which an acknowledged
enqueue may be lost to asynchronous replication, and the split of job ids
a promoted master handed out again."""
import collections
import json

# The failover modes (--redis sentinel / cluster): Redis replicates
# asynchronously, so a master acknowledges a write before its replica has it,
# and a write the promoted replica never received is gone (docs/guarantees.md,
# "Sentinel failover"). An acknowledged enqueue whose job is NOT_FOUND
# counts as lost_in_failover, not lost, when its calls fall within this window
# around a master_kill: from FAILOVER_BEFORE_S before the kill to
# FAILOVER_AFTER_S after the promotion was seen. On loopback the replica is
# at most milliseconds behind; 3 s before the kill covers a producer's or a
# worker's record written late on a loaded machine.
FAILOVER_BEFORE_S = 3.0
FAILOVER_AFTER_S = 1.0


def failover_windows(faults):
    """[(from, to)] epoch seconds around every master_kill: from
    FAILOVER_BEFORE_S before the kill to FAILOVER_AFTER_S after the
    promotion was seen (its end, if it was never seen)."""
    out = []
    for r in faults:
        if r.get("kind") != "master_kill":
            continue
        t_kill = r.get("t_kill", r.get("t_start"))
        t_prom = r.get("t_promoted") or r.get("t_end")
        if t_kill is None or t_prom is None:
            continue
        out.append((t_kill - FAILOVER_BEFORE_S, t_prom + FAILOVER_AFTER_S))
    return out


def payload_uid(job):
    """The uid a Job's payload names, or None (no such payload)."""
    try:
        return json.loads(bytes(job.payload).decode())["uid"]
    except Exception:  # noqa: BLE001
        return None


def split_reused_ids(pview, wevents, jobs, landed):
    """After a failover lost an enqueue, the new master hands the lost job's
    id out again (the id counter's increment was lost too), so one job id
    may name two jobs of two uids. Such an id is kept for the uid the
    broker's job names (its payload; else the uid enqueued last) and renamed
    "<id>@<uid>" for the other uids, in their producer and worker records,
    with GetJob NOT_FOUND under the new name (the broker no longer has that
    job). Returns (pview, wevents, jobs, landed, {id: [uids]})."""
    uids_of = collections.defaultdict(set)
    last_t = {}
    for u, v in pview.items():
        for j in v["ok"]:
            uids_of[j].add(u)
            last_t[(j, u)] = v["t"] or 0
    for u, j in landed.items():
        if j:
            uids_of[j].add(u)
            last_t.setdefault((j, u), (pview.get(u) or {}).get("t") or 0)
    for e in wevents:
        if "job" in e and "uid" in e:
            uids_of[e["job"]].add(e["uid"])
            last_t.setdefault((e["job"], e["uid"]), e["t"])
    reused = {j: sorted(us) for j, us in uids_of.items() if len(us) > 1}
    if not reused:
        return pview, wevents, jobs, landed, {}
    owner = {}
    for j, us in reused.items():
        u = payload_uid(jobs[j]) if jobs.get(j) is not None else None
        owner[j] = u if u in us else max(us, key=lambda x: last_t.get((j, x), 0))
    rename = lambda j, u: j if j not in reused or owner[j] == u else f"{j}@{u}"  # noqa: E731
    pview2 = collections.defaultdict(pview.default_factory)
    for u, v in pview.items():
        pview2[u] = dict(v, ok=[rename(j, u) for j in v["ok"]])
    wevents2 = [dict(e, job=rename(e["job"], e["uid"])) if "job" in e and "uid" in e else e
                for e in wevents]
    landed2 = {u: (rename(j, u) if j else j) for u, j in landed.items()}
    jobs2 = dict(jobs)
    for j, us in reused.items():
        for u in us:
            if u != owner[j]:
                jobs2[f"{j}@{u}"] = None
    return pview2, wevents2, jobs2, landed2, reused
