#!/usr/bin/env python3
"""jobwire fault-injection ("chaos") test (tests/chaos/README.md).

A load of Python producers and workers (the jobwire client) runs against two
or more broker replicas sharing one Redis with AOF, while a seeded nemesis
injects, one at a time and each for a bounded time:

  worker_kill       kill -9 of a worker process that is mid-job (restarted)
  worker_pause      SIGSTOP of a worker mid-job for longer than its lease,
                    then SIGCONT: its late Ack must be refused
  broker_kill       kill -9 of a broker replica, restarted after a while
  broker_term       SIGTERM (drain) of a replica, restarted after a while
  broker_freeze     SIGSTOP / SIGCONT of a replica
  broker_partition  a replica cut off from Redis: every connection it has to
                    Redis is killed (CLIENT KILL LADDR) every 100 ms
  redis_kill        kill -9 of Redis, restarted from its AOF
  redis_pause       Redis frozen (SIGSTOP, or CLIENT PAUSE ALL) for longer
                    than the clients' deadlines

Every operation goes to a history (one JSONL file per process). After the
faults the producers stop, everything heals, the workers drain the queue, and
the checker reads the histories and GetJob of every job:

  lost                 acknowledged enqueue, never completed nor dead
  unexpected           completion of a job never (successfully) enqueued
  completed twice      more than one accepted Ack for one uid
  stale acks accepted  an accepted Ack for attempt k of a job that later ran
                       attempt > k (its lease had been superseded, or the
                       accepted Ack did not survive)
  attempts beyond max  a run with attempt > max_attempts

Exit status 0 when all of them are zero (and no process misbehaved),
otherwise 1. Only loopback is used (127.0.0.x); every loop is bounded.
"""

import argparse
import collections
import glob
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable
QUEUE = "chaos"
KEY_PREFIX = "jw"

FAULTS = ["worker_kill", "worker_pause", "broker_kill", "broker_term", "broker_freeze",
          "broker_partition", "redis_kill", "redis_pause"]


# --------------------------------------------------------------------------
# small helpers

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(host, port, proc, what, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early with status {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} not listening on {host}:{port} after {timeout} s")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def signal_proc(proc, sig):
    if proc is not None and proc.poll() is None:
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            pass


class Resp:
    """A minimal Redis (RESP2) client on one socket: enough for PING,
    CLIENT KILL / PAUSE, MGET. Every call has a timeout."""

    def __init__(self, port, timeout=2.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.f = self.sock.makefile("rb")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._read()

    def _read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError("redis error: " + rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError(f"bad RESP line {line!r}")

    def close(self):
        try:
            self.f.close()
            self.sock.close()
        except OSError:
            pass


def redis_call(port, *args, timeout=2.0):
    r = Resp(port, timeout)
    try:
        return r.call(*args)
    finally:
        r.close()


# --------------------------------------------------------------------------
# processes

class Redis:
    def __init__(self, workdir, appendfsync, replicas):
        self.port = free_port()
        self.dir = os.path.join(workdir, "redis")
        os.makedirs(self.dir)
        self.appendfsync = appendfsync
        # One loopback address per broker replica: replica i connects to
        # 127.0.0.(i+2), so Redis sees its connections with that laddr and
        # CLIENT KILL LADDR cuts exactly that replica off.
        self.binds = ["127.0.0.1"] + [f"127.0.0.{i + 2}" for i in range(replicas)]
        self.proc = None
        self.starts = 0
        self.logf = open(os.path.join(workdir, "redis.log"), "ab")

    def start(self):
        self.starts += 1
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", " ".join(self.binds),
             "--save", "", "--appendonly", "yes", "--appendfsync", self.appendfsync,
             "--dir", self.dir, "--protected-mode", "no"],
            stdout=self.logf, stderr=subprocess.STDOUT)
        wait_listening("127.0.0.1", self.port, self.proc, "redis-server")
        deadline = time.time() + 30  # wait until the AOF is loaded
        while True:
            try:
                if redis_call(self.port, "PING") == "PONG":
                    return
            except (OSError, RuntimeError, ConnectionError):
                if time.time() > deadline:
                    raise
            time.sleep(0.05)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.alive():
            signal_proc(self.proc, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Broker:
    def __init__(self, index, binary, workdir, redis, args):
        self.index = index
        self.binary = binary
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.redis_host = f"127.0.0.{index + 2}"
        self.redis = redis
        self.log_path = os.path.join(workdir, f"broker-{index}.log")
        self.logf = open(self.log_path, "ab")
        self.args = args
        self.proc = None
        self.held = False      # the nemesis owns it right now
        self.starts = 0
        self.exits = []        # (status, expected)

    def start(self):
        self.starts += 1
        self.logf.write(f"--- start {self.starts} at {time.time():.3f}\n".encode())
        self.logf.flush()
        self.proc = subprocess.Popen(
            [self.binary, f"--listen={self.addr}",
             f"--redis_url=redis://{self.redis_host}:{self.redis.port}",
             f"--shutdown_grace_ms={self.args.shutdown_grace_ms}",
             "--metrics_listen=", "--log_level=warning"],
            stdout=self.logf, stderr=subprocess.STDOUT)
        wait_listening("127.0.0.1", self.port, self.proc, f"broker {self.index}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


class Workers:
    """Worker processes, each incarnation with its own history file,
    restarted by poll() when they die."""

    def __init__(self, workdir, brokers, args):
        self.workdir = workdir
        self.args = args
        self.n = args.workers
        self.addrs = []
        for i in range(self.n):
            order = [b.addr for b in brokers]
            k = i % len(order)
            order = order[k:] + order[:k]  # spread the workers over the replicas
            self.addrs.append("ipv4:" + ",".join(order))
        self.procs = [None] * self.n
        self.hist = [None] * self.n
        self.incarnation = [0] * self.n
        self.held = [False] * self.n
        self.lock = threading.Lock()
        self.unexpected_exits = []
        self.stderr = [None] * self.n

    def start(self, i):
        self.incarnation[i] += 1
        name = f"w{i}.{self.incarnation[i]}"
        hist = os.path.join(self.workdir, f"worker-{name}.jsonl")
        err = open(os.path.join(self.workdir, f"worker-{name}.stderr"), "wb")
        self.procs[i] = subprocess.Popen(
            [PY, os.path.join(HERE, "worker.py"), "--addr", self.addrs[i], "--history", hist,
             "--name", name, "--queue", QUEUE, "--concurrency", str(self.args.concurrency),
             "--lease-ms", str(self.args.lease_ms)],
            stdout=err, stderr=subprocess.STDOUT)
        self.hist[i] = hist
        self.stderr[i] = err

    def poll(self):
        with self.lock:
            for i, p in enumerate(self.procs):
                if p is None or self.held[i] or p.poll() is None:
                    continue
                self.unexpected_exits.append((f"w{i}.{self.incarnation[i]}", p.returncode))
                log(f"worker w{i}.{self.incarnation[i]} exited by itself with {p.returncode}; "
                    f"restarting")
                self.start(i)

    def in_flight(self, i):
        """Runs started and not settled in the current incarnation's history."""
        pending = set()
        try:
            with open(self.hist[i]) as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    key = (e.get("job"), e.get("att"))
                    if e["ev"] == "start":
                        pending.add(key)
                    else:
                        pending.discard(key)
        except OSError:
            pass
        return len(pending)

    def stop_all(self, timeout):
        with self.lock:
            for p in self.procs:
                signal_proc(p, signal.SIGCONT)
                signal_proc(p, signal.SIGTERM)
            for i, p in enumerate(self.procs):
                if p is None:
                    continue
                try:
                    status = p.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    p.kill()
                    status = p.wait()
                    self.unexpected_exits.append((f"w{i}.{self.incarnation[i]}",
                                                  f"killed: no exit {timeout} s after SIGTERM"))
                    continue
                if status != 0:
                    self.unexpected_exits.append((f"w{i}.{self.incarnation[i]}",
                                                  f"status {status} on SIGTERM"))
            self.procs = [None] * self.n


# --------------------------------------------------------------------------
# the nemesis

def make_schedule(rng, duration, args):
    """[(planned start s, fault, target, seconds)], one fault at a time:
    every kind once per round in a seeded order, rounds until `duration`."""
    lease = args.lease_ms / 1000.0
    sched = []
    t = args.warmup
    while True:
        kinds = list(FAULTS)
        rng.shuffle(kinds)
        for kind in kinds:
            if kind.startswith("worker"):
                target = f"w{rng.randrange(args.workers)}"
            elif kind.startswith("broker"):
                target = f"b{rng.randrange(args.brokers)}"
            else:
                target = "redis"
                if kind == "redis_pause":
                    target = rng.choice(["redis:sigstop", "redis:client_pause"])
            secs = {
                "worker_kill": rng.uniform(0.2, 1.0),          # until restart
                "worker_pause": rng.uniform(2.0 * lease + 0.5, 2.5 * lease + 1.5),
                "broker_kill": rng.uniform(1.0, 3.0),          # down time
                "broker_term": rng.uniform(1.0, 3.0),          # down time after exit
                "broker_freeze": rng.uniform(2.0, 4.0),
                "broker_partition": rng.uniform(3.0, 5.0),
                "redis_kill": rng.uniform(1.0, 3.0),
                # longer than every client deadline (producer 2 s, worker 3 s)
                "redis_pause": rng.uniform(3.5, 5.0),
            }[kind]
            if t + secs > duration:
                return sched
            sched.append((round(t, 1), kind, target, round(secs, 1)))
            # the next fault starts after this one plus a quiet gap
            t += secs + rng.uniform(1.5, 3.0) + (2.5 if kind == "broker_term" else 0)


class Nemesis(threading.Thread):
    def __init__(self, schedule, t0, redis, brokers, workers, rng, stop_event):
        super().__init__(daemon=True, name="nemesis")
        self.schedule = schedule
        self.t0 = t0
        self.redis = redis
        self.brokers = brokers
        self.workers = workers
        self.rng = rng
        self.stop_event = stop_event
        self.done = []      # executed: dict per fault
        self.errors = []

    def run(self):
        for planned, kind, target, secs in self.schedule:
            wait = self.t0 + planned - time.time()
            if wait > 0 and self.stop_event.wait(wait):
                return
            if self.stop_event.is_set():
                return
            rec = {"planned": planned, "kind": kind, "target": target, "secs": secs,
                   "start": round(time.time() - self.t0, 1)}
            try:
                getattr(self, kind)(target, secs, rec)
            except Exception as e:  # noqa: BLE001 - recorded, the run fails
                rec["error"] = repr(e)
                self.errors.append(f"{kind} {target}: {e!r}")
                log(f"nemesis: {kind} {target} failed: {e!r}")
            rec["end"] = round(time.time() - self.t0, 1)
            self.done.append(rec)
            log(f"nemesis: {kind} {rec.get('target')} {secs}s done "
                f"{ {k: v for k, v in rec.items() if k not in ('planned', 'kind', 'target', 'secs')} }")

    # -- workers
    def _pick_busy_worker(self, preferred, rec):
        """The preferred worker if it is mid-job, else another that is
        (up to 2 s of looking), else the preferred one."""
        deadline = time.time() + 2.0
        order = [preferred] + [i for i in range(self.workers.n) if i != preferred]
        while time.time() < deadline:
            for i in order:
                n = self.workers.in_flight(i)
                if n > 0:
                    rec["in_flight"] = n
                    return i
            time.sleep(0.05)
        rec["in_flight"] = 0
        return preferred

    def worker_kill(self, target, secs, rec):
        w = self.workers
        i = self._pick_busy_worker(int(target[1:]), rec)
        with w.lock:
            w.held[i] = True
            p = w.procs[i]
            rec["target"] = f"w{i}.{w.incarnation[i]}"
            p.kill()
            p.wait()
        time.sleep(secs)
        with w.lock:
            w.start(i)
            w.held[i] = False

    def worker_pause(self, target, secs, rec):
        w = self.workers
        i = self._pick_busy_worker(int(target[1:]), rec)
        with w.lock:
            w.held[i] = True
            p = w.procs[i]
            rec["target"] = f"w{i}.{w.incarnation[i]}"
            os.kill(p.pid, signal.SIGSTOP)
        try:
            time.sleep(secs)
        finally:
            os.kill(p.pid, signal.SIGCONT)
            with w.lock:
                w.held[i] = False

    # -- brokers
    def _broker(self, target):
        return self.brokers[int(target[1:])]

    def broker_kill(self, target, secs, rec):
        b = self._broker(target)
        b.held = True
        try:
            b.proc.kill()
            b.exits.append((b.proc.wait(), "kill -9"))
            time.sleep(secs)
            b.start()
        finally:
            b.held = False

    def broker_term(self, target, secs, rec):
        b = self._broker(target)
        b.held = True
        try:
            t = time.time()
            b.proc.terminate()
            try:
                status = b.proc.wait(timeout=b.args.shutdown_grace_ms / 1000.0 + 10)
            except subprocess.TimeoutExpired:
                b.proc.kill()
                status = "no exit after SIGTERM"
                self.errors.append(f"broker {target} did not exit within grace+10 s of SIGTERM")
            rec["drain_s"] = round(time.time() - t, 1)
            b.exits.append((status, "SIGTERM"))
            if status != 0:
                self.errors.append(f"broker {target} exited with {status} after SIGTERM")
            time.sleep(secs)
            b.start()
        finally:
            b.held = False

    def broker_freeze(self, target, secs, rec):
        b = self._broker(target)
        b.held = True
        os.kill(b.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(secs)
        finally:
            os.kill(b.proc.pid, signal.SIGCONT)
            b.held = False

    def broker_partition(self, target, secs, rec):
        """Cut replica `target` off from Redis: kill every connection Redis
        has on that replica's loopback address, every 100 ms, for `secs`.
        The broker reconnects (with backoff) and is cut again at once."""
        b = self._broker(target)
        laddr = f"{b.redis_host}:{self.redis.port}"
        killed = 0
        r = Resp(self.redis.port)
        try:
            end = time.time() + secs
            while time.time() < end:
                killed += r.call("CLIENT", "KILL", "LADDR", laddr)
                time.sleep(0.1)
        finally:
            r.close()
        rec["connections_killed"] = killed

    # -- redis
    def redis_kill(self, target, secs, rec):
        self.redis.proc.kill()
        self.redis.proc.wait()
        time.sleep(secs)
        t = time.time()
        self.redis.start()
        rec["restart_s"] = round(time.time() - t, 1)

    def redis_pause(self, target, secs, rec):
        if target.endswith("client_pause"):
            redis_call(self.redis.port, "CLIENT", "PAUSE", int(secs * 1000), "ALL")
            time.sleep(secs)
        else:
            os.kill(self.redis.proc.pid, signal.SIGSTOP)
            try:
                time.sleep(secs)
            finally:
                os.kill(self.redis.proc.pid, signal.SIGCONT)


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


# --------------------------------------------------------------------------

def run(args):
    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="jobwire-chaos-")
    schedule = make_schedule(rng, args.duration, args)
    print(f"jobwire chaos: seed {args.seed}, appendfsync {args.appendfsync}, "
          f"{args.brokers} brokers, {args.workers} workers x {args.concurrency}, "
          f"{args.producers} producers x {args.rate}/s, lease {args.lease_ms} ms, "
          f"faults for {args.duration:.0f} s; workdir {workdir}")
    print_schedule("planned fault schedule", [dict(planned=p, kind=k, target=t, secs=s)
                                              for p, k, t, s in schedule])
    failures = []
    redis = Redis(workdir, args.appendfsync, args.brokers)
    brokers = []
    workers = None
    producers = []
    stop_event = threading.Event()
    nemesis = None
    started = time.time()
    try:
        redis.start()
        for i in range(args.brokers):
            b = Broker(i, args.broker, workdir, redis, args)
            b.start()
            brokers.append(b)
        workers = Workers(workdir, brokers, args)
        for i in range(workers.n):
            workers.start(i)
        pnames = []
        for i in range(args.producers):
            order = [b.addr for b in brokers]
            k = i % len(order)
            addr = "ipv4:" + ",".join(order[k:] + order[:k])
            name = f"p{i}"
            pnames.append(name)
            producers.append(subprocess.Popen(
                [PY, os.path.join(HERE, "producer.py"), "--addr", addr, "--name", name,
                 "--history", os.path.join(workdir, f"producer-{name}.jsonl"),
                 "--queue", QUEUE, "--rate", str(args.rate)],
                stdout=open(os.path.join(workdir, f"producer-{name}.stderr"), "wb"),
                stderr=subprocess.STDOUT))

        # ---- fault phase
        t0 = time.time()
        nemesis = Nemesis(schedule, t0, redis, brokers, workers, rng, stop_event)
        nemesis.start()
        end = t0 + args.duration
        last_report = 0
        while time.time() < end:
            supervise(redis, brokers, workers, producers, failures)
            if time.time() - last_report > 15:
                last_report = time.time()
                log(f"t={time.time() - t0:.0f}s {progress(workdir)}")
            time.sleep(0.2)
        stop_event.set()
        nemesis.join(timeout=30)
        if nemesis.is_alive():
            failures.append("nemesis did not finish its last fault within 30 s")
        fault_end = time.time()

        # ---- stop the load, heal
        for p in producers:
            signal_proc(p, signal.SIGTERM)
        for p in producers:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                failures.append("a producer did not stop within 15 s of SIGTERM")
            if p.returncode not in (0, -9):
                failures.append(f"producer exited with {p.returncode}")
        heal(redis, brokers, workers)
        log(f"load stopped and healed; {progress(workdir)}; draining")

        # ---- drain: every acknowledged (or landed) job COMPLETED or DEAD
        from jobwire import Client, JobState
        client = Client("ipv4:" + ",".join(b.addr for b in brokers), timeout=5)
        pevents, bad_p = read_history(glob.glob(os.path.join(workdir, "producer-*.jsonl")))
        pview = producer_view(pevents)
        unresolved = [u for u, v in pview.items() if not v["ok"] and v["unknown"]]
        landed = resolve_unknown(redis.port, unresolved)
        ids = {j for v in pview.values() for j in v["ok"]} | {j for j in landed.values() if j}
        pending = set(ids)
        drain_deadline = time.time() + args.drain_timeout
        while pending and time.time() < drain_deadline:
            supervise(redis, brokers, workers, [], failures)
            jobs = get_jobs(client, pending)
            pending = {j for j, job in jobs.items()
                       if job is not None and job.state not in (JobState.COMPLETED,
                                                                JobState.DEAD)}
            if pending:
                time.sleep(1.0)
        drained = time.time()
        log(f"drain: {len(pending)} of {len(ids)} jobs not settled after "
            f"{drained - fault_end:.0f} s")
        workers.stop_all(timeout=15)
        failures += [f"worker {n} {s}" for n, s in workers.unexpected_exits]

        # ---- final state and the checker
        wevents, bad_w = read_history(glob.glob(os.path.join(workdir, "worker-*.jsonl")))
        ids |= {e["job"] for e in wevents}
        jobs = get_jobs(client, ids)
        client.close()
        if bad_p or bad_w:
            failures.append(f"{bad_p + bad_w} torn history lines")
        res, info, detail = check(pview, wevents, jobs, landed)
        failures += nemesis.errors
        for b in brokers:
            unexpected = [s for s, why in b.exits if why == "unexpected"]
            if unexpected:
                failures.append(f"broker b{b.index} exited by itself: {unexpected}")

        # ---- report
        print()
        print_schedule("executed fault schedule", nemesis.done)
        kinds = collections.Counter(r["kind"] for r in nemesis.done)
        print("faults injected: " + ", ".join(f"{k} {kinds[k]}" for k in FAULTS))
        stale_refused = info["acks_refused"].get("FAILED_PRECONDITION", 0)
        if kinds["worker_pause"] and not stale_refused:
            print("note: no late Ack was refused (no paused worker held a job long enough)")
        print(f"\ntimings: fault phase {fault_end - t0:.0f} s, drain "
              f"{drained - fault_end:.0f} s, total {time.time() - started:.0f} s")
        print("\nhistory:")
        for k, v in info.items():
            print(f"  {k:<36} {v}")
        print("\nchecker:")
        for k, v in res.items():
            print(f"  {k:<36} {v}")
            for line in detail.get(k, [])[:10]:
                print(f"      {line}")
        for k in ("missing_in_broker",):
            for line in detail.get(k, [])[:10]:
                print(f"  {k}: {line}")
        for k, v in res.items():
            if v:
                failures.append(f"{k} = {v}")
        summary = {"seed": args.seed, "appendfsync": args.appendfsync,
                   "duration": args.duration, "counts": res, "info": info,
                   "faults": nemesis.done, "failures": failures,
                   "timings": {"faults_s": round(fault_end - t0),
                               "drain_s": round(drained - fault_end),
                               "total_s": round(time.time() - started)}}
        with open(os.path.join(workdir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1, default=str)
        if args.summary:
            with open(args.summary, "w") as f:
                json.dump(summary, f, indent=1, default=str)
        return failures
    finally:
        stop_event.set()
        for p in producers:
            if p.poll() is None:
                p.kill()
        if workers is not None:
            for p in workers.procs:
                if p is not None and p.poll() is None:
                    signal_proc(p, signal.SIGCONT)
                    p.kill()
        for b in brokers:
            if b.alive():
                signal_proc(b.proc, signal.SIGCONT)
                b.proc.terminate()
                try:
                    b.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    b.proc.kill()
        redis.stop()
        if args.keep:
            print(f"logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def supervise(redis, brokers, workers, producers, failures):
    """Restart what died without the nemesis asking (and record it)."""
    for b in brokers:
        if not b.held and b.proc is not None and b.proc.poll() is not None:
            b.exits.append((b.proc.returncode, "unexpected"))
            log(f"broker b{b.index} exited by itself with {b.proc.returncode}; restarting")
            b.start()
    workers.poll()
    for p in producers:
        if p.poll() is not None and p.returncode != 0:
            failures.append(f"producer exited with {p.returncode} during the run")
            producers.remove(p)


def heal(redis, brokers, workers):
    if not redis.alive():
        redis.start()
    signal_proc(redis.proc, signal.SIGCONT)
    try:
        redis_call(redis.port, "CLIENT", "UNPAUSE")
    except Exception:  # noqa: BLE001
        pass
    for b in brokers:
        signal_proc(b.proc, signal.SIGCONT)
        b.held = False
        if not b.alive():
            b.start()
    with workers.lock:
        for i, p in enumerate(workers.procs):
            signal_proc(p, signal.SIGCONT)
            workers.held[i] = False
    workers.poll()


def progress(workdir):
    counts = collections.Counter()
    for path in glob.glob(os.path.join(workdir, "*.jsonl")):
        with open(path) as f:
            for line in f:
                try:
                    counts[json.loads(line)["ev"]] += 1
                except ValueError:
                    pass
    return ("enqueue ok %(ok)d unknown %(unknown)d failed %(failed)d; runs %(start)d "
            "ack_ok %(ack_ok)d ack_error %(ack_error)d fail_ok %(fail_ok)d" % counts)


def print_schedule(title, recs):
    print(f"{title} ({len(recs)} faults):")
    for r in recs:
        extra = {k: v for k, v in r.items() if k not in ("planned", "kind", "target", "secs")}
        print(f"  t={r['planned']:>6.1f}s  {r['kind']:<17} {r['target']:<20} {r['secs']:>4.1f}s"
              + (f"  {extra}" if extra else ""))
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default=os.path.join(REPO, "build", "broker",
                                                         "jobwire-broker"))
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds of faults (default 60, or 240 with --long)")
    parser.add_argument("--long", action="store_true", help="the long run (240 s of faults)")
    parser.add_argument("--appendfsync", choices=["always", "everysec"], default="always")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=3)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--rate", type=float, default=10.0, help="jobs/s per producer")
    parser.add_argument("--lease-ms", type=int, default=2000)
    parser.add_argument("--shutdown-grace-ms", type=int, default=2000)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--drain-timeout", type=float, default=None)
    parser.add_argument("--summary", default="", help="also write the summary JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if args.duration is None:
        args.duration = 240.0 if args.long else 60.0
    if args.drain_timeout is None:
        args.drain_timeout = 90.0 if args.long else 45.0
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 10**6)
    if args.brokers < 2:
        parser.error("--brokers must be at least 2")
    failures = run(args)
    print()
    if failures:
        print(f"FAILED (seed {args.seed}): {len(failures)} violation(s)")
        for f in failures[:50]:
            print("  " + f)
        return 1
    print(f"PASSED (seed {args.seed}): lost = unexpected = completed twice = "
          f"stale acks accepted = attempts beyond max = 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
