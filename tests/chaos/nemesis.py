"""The nemesis of the chaos run (README.md): a seeded schedule of faults, one
at a time and each bounded in time, injected into the processes of
chaos_system."""

import os
import signal
import subprocess
import threading
import time

from chaos_system import (Resp, log, open_runs, redis_blocked, redis_call,
                          redis_connections_of, wait_stopped)

# The fault kinds of --redis standalone (one Redis, killed and restarted from
# its AOF, or paused) ...
FAULTS = ["worker_kill", "worker_pause", "broker_kill", "broker_term", "broker_freeze",
          "broker_partition", "redis_kill", "redis_pause"]
# ... and of the failover modes (--redis sentinel / cluster): the master of
# the chaos queue killed and failed over instead. A redis_kill restarting the
# master in place (nothing to fail over to) and a redis_pause longer than the
# failure detection (it would be a failover with the old master coming back
# with buffered writes) do not apply there.
FAILOVER_FAULTS = ["worker_kill", "worker_pause", "broker_kill", "broker_term", "broker_freeze",
                   "broker_partition", "master_kill"]


def faults_for(mode):
    """The fault kinds of a --redis mode."""
    return FAULTS if mode in (None, "standalone") else FAILOVER_FAULTS


MIN_GAP_S = 1.0           # quiet between two faults, at least
GAP_S = (1.5, 3.0)        # and normally
TERM_EXTRA_S = 2.5        # after a broker_term (its drain)
# after a master_kill: the failover before `secs` starts (sentinel about
# 2 s, cluster 3-5 s) and the old master's resync after it
MASTER_EXTRA_S = {"sentinel": 4.0, "cluster": 7.0}


def extra_s(kind, mode):
    """Seconds a fault takes beyond its drawn duration (its gap grows by
    them): a broker_term's drain, a master_kill's failover and resync."""
    if kind == "broker_term":
        return TERM_EXTRA_S
    if kind == "master_kill":
        return MASTER_EXTRA_S.get(mode, 4.0)
    return 0.0


def fault_secs(rng, kind, lease):
    """A seeded duration of one fault (seconds)."""
    lo, hi = {
        "worker_kill": (0.2, 1.0),           # until restart
        "worker_pause": (2.0 * lease + 0.5, 2.5 * lease + 1.5),
        "broker_kill": (1.0, 3.0),           # down time
        "broker_term": (1.0, 3.0),           # down time after exit
        "broker_freeze": (2.0, 4.0),
        "broker_partition": (3.0, 5.0),
        "redis_kill": (1.0, 3.0),
        # longer than every client deadline (producer 2 s, worker 3 s)
        "redis_pause": (3.5, 5.0),
        "master_kill": (1.0, 3.0),          # after the failover, until the old master restarts
    }[kind]
    return rng.uniform(lo, hi)


def full_round_s(args):
    """Seconds from the start that always hold one fault of every kind: the
    longest durations and the shortest gaps (44 s with the defaults; 42 s
    with --redis sentinel, 45 s with --redis cluster)."""
    lease = args.lease_ms / 1000.0
    mode = getattr(args, "redis", "standalone")
    longest = {"worker_kill": 1.0, "worker_pause": 2.5 * lease + 1.5, "broker_kill": 3.0,
               "broker_term": 3.0, "broker_freeze": 4.0, "broker_partition": 5.0,
               "redis_kill": 3.0, "redis_pause": 5.0, "master_kill": 3.0}
    kinds = faults_for(mode)
    return (args.warmup + sum(longest[k] for k in kinds) + len(kinds) * MIN_GAP_S
            + sum(extra_s(k, mode) for k in kinds))


# --------------------------------------------------------------------------
# the nemesis

def make_schedule(rng, duration, args):
    """[(planned start s, fault, target, seconds)], one fault at a time:
    every kind once per round in a seeded order, rounds until `duration`.
    The first round always fits when duration >= full_round_s(args): its
    gaps shrink (to MIN_GAP_S at least) if the drawn ones would not fit."""
    lease = args.lease_ms / 1000.0
    mode = getattr(args, "redis", "standalone")
    sched = []
    t = args.warmup
    first = True
    while True:
        kinds = list(faults_for(mode))
        rng.shuffle(kinds)
        faults = []
        for kind in kinds:
            if kind.startswith("worker"):
                target = f"w{rng.randrange(args.workers)}"
            elif kind.startswith("broker"):
                target = f"b{rng.randrange(args.brokers)}"
            elif kind == "master_kill":
                target = "master"  # the chaos queue's master when it runs
            else:
                target = "redis"
                if kind == "redis_pause":
                    target = rng.choice(["redis:sigstop", "redis:client_pause"])
            secs = fault_secs(rng, kind, lease)
            gap = rng.uniform(*GAP_S) + extra_s(kind, mode)
            faults.append([kind, target, secs, gap])
        if first:
            # the gaps before the last fault of the round must fit
            busy = sum(f[2] for f in faults)
            gaps = sum(f[3] for f in faults[:-1])
            room = duration - t - busy
            if gaps > room > 0:
                for f in faults[:-1]:
                    f[3] = max(MIN_GAP_S + extra_s(f[0], mode), f[3] * room / gaps)
            first = False
        for kind, target, secs, gap in faults:
            if t + secs > duration:
                return sched
            sched.append((round(t, 1), kind, target, round(secs, 1)))
            # the next fault starts after this one plus a quiet gap
            t += secs + gap


class Nemesis(threading.Thread):
    """Injects the schedule. Each executed fault is a dict in `done`: the
    plan, the actual times (start/end: seconds from t0; t_start/t_end:
    epoch), the evidence it took effect, and `effect` (True / False; None
    for worker_pause, which the checker judges from the histories: see
    fault_effects.py)."""

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
            now = time.time()
            rec = {"planned": planned, "kind": kind, "target": target, "secs": secs,
                   "start": round(now - self.t0, 1), "t_start": round(now, 3)}
            try:
                getattr(self, kind)(target, secs, rec)
            except Exception as e:  # noqa: BLE001 - recorded, the run fails
                rec["error"] = repr(e)
                rec.setdefault("effect", False)
                self.errors.append(f"{kind} {target}: {e!r}")
                log(f"nemesis: {kind} {target} failed: {e!r}")
            now = time.time()
            rec["end"] = round(now - self.t0, 1)
            rec["t_end"] = round(now, 3)
            self.done.append(rec)
            log(f"nemesis: {kind} {rec.get('target')} {secs}s done "
                f"{ {k: v for k, v in rec.items() if k not in ('planned', 'kind', 'target', 'secs', 't_start', 't_end')} }")

    # -- workers
    def _pick_busy_worker(self, preferred, rec, in_handler=False):
        """The preferred worker if it is mid-job (with in_handler: has a
        handler running), else another that is (up to 2 s of looking), else
        the preferred one. Returns with workers.lock held and the worker held
        (the caller releases both)."""
        w = self.workers
        deadline = time.time() + 2.0
        order = [preferred] + [i for i in range(w.n) if i != preferred]
        while True:
            w.lock.acquire()
            for i in order:
                n = w.in_flight(i, in_handler)
                if n > 0 or time.time() >= deadline:
                    if n == 0:
                        i = preferred
                    rec["in_flight_seen"] = n
                    w.held[i] = True
                    rec["target"] = f"w{i}.{w.incarnation[i]}"
                    return i
            w.lock.release()
            time.sleep(0.01)

    def worker_kill(self, target, secs, rec):
        """Effect: a live worker killed (status -9) with a run in flight."""
        w = self.workers
        i = self._pick_busy_worker(int(target[1:]), rec)
        try:
            p = w.procs[i]
            rec["alive_before"] = p.poll() is None
            p.kill()
            rec["status"] = p.wait()
            w.killed.add(rec["target"])
            # its history is final now: the runs the kill interrupted
            rec["runs_interrupted"] = w.in_flight(i)
        finally:
            w.lock.release()
        rec["effect"] = (rec["alive_before"] and rec["status"] == -signal.SIGKILL
                         and rec["runs_interrupted"] > 0)
        time.sleep(secs)
        with w.lock:
            w.start(i)
            w.held[i] = False

    def worker_pause(self, target, secs, rec):
        """Evidence: the runs it held when stopped (held_tokens). Effect
        (judged by the checker): one of them got a refused outcome
        (FAILED_PRECONDITION) or was run again under another token, i.e. its
        lease expired during the pause.

        A run whose handler has returned may have its Ack at the broker
        already, and then nothing expires. So the pause must stop a worker
        with a handler running: when the one it stopped has none (the
        handler returned between the look and SIGSTOP), it is resumed at
        once and picked again, for up to 2 s (`stops` counts the tries)."""
        w = self.workers
        deadline = time.time() + 2.0
        rec["stops"] = 0
        while True:
            i = self._pick_busy_worker(int(target[1:]), rec, in_handler=True)
            try:
                p = w.procs[i]
                os.kill(p.pid, signal.SIGSTOP)
                rec["stopped"] = wait_stopped(p.pid)
                rec["stops"] += 1
                if not open_runs(w.hist[i], in_handler=True) and time.time() < deadline:
                    os.kill(p.pid, signal.SIGCONT)
                    w.held[i] = False
                    continue
                rec["t_stopped"] = round(time.time(), 3)
                rec["held_tokens"] = sorted(str(t) for t in open_runs(w.hist[i]))
            finally:
                w.lock.release()
            break
        rec["effect"] = None
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
        """Effect: a live replica killed (status -9)."""
        b = self._broker(target)
        b.held = True
        try:
            rec["alive_before"] = b.alive()
            b.proc.kill()
            status = b.proc.wait()
            rec["status"] = status
            rec["effect"] = rec["alive_before"] and status == -signal.SIGKILL
            b.exits.append((status, "kill -9"))
            time.sleep(secs)
            b.start()
        finally:
            b.held = False

    def broker_term(self, target, secs, rec):
        """Effect: a live replica exited 0 on SIGTERM (its drain)."""
        b = self._broker(target)
        b.held = True
        try:
            rec["alive_before"] = b.alive()
            t = time.time()
            b.proc.terminate()
            try:
                status = b.proc.wait(timeout=b.args.shutdown_grace_ms / 1000.0 + 10)
            except subprocess.TimeoutExpired:
                b.proc.kill()
                status = "no exit after SIGTERM"
                self.errors.append(f"broker {target} did not exit within grace+10 s of SIGTERM")
            rec["drain_s"] = round(time.time() - t, 1)
            rec["status"] = status
            rec["effect"] = rec["alive_before"] and status == 0
            b.exits.append((status, "SIGTERM"))
            if status != 0:
                self.errors.append(f"broker {target} exited with {status} after SIGTERM")
            time.sleep(secs)
            b.start()
        finally:
            b.held = False

    def broker_freeze(self, target, secs, rec):
        """Effect: the replica was seen stopped (state T)."""
        b = self._broker(target)
        b.held = True
        rec["alive_before"] = b.alive()
        os.kill(b.proc.pid, signal.SIGSTOP)
        try:
            rec["stopped"] = wait_stopped(b.proc.pid)
            rec["effect"] = rec["alive_before"] and rec["stopped"]
            time.sleep(secs)
        finally:
            os.kill(b.proc.pid, signal.SIGCONT)
            b.held = False

    def broker_partition(self, target, secs, rec):
        """Cut replica `target` off from Redis: kill every connection Redis
        has on that replica's loopback address, every 100 ms, for `secs`.
        The broker reconnects (with backoff) and is cut again at once.
        Effect: CLIENT KILL closed at least one connection."""
        if self.redis.mode != "standalone":
            return self._partition_by_pid(target, secs, rec)
        b = self._broker(target)
        laddr = f"{b.redis_host}:{self.redis.port}"
        killed = 0
        rounds_with_kill = 0
        r = Resp(self.redis.port)
        try:
            end = time.time() + secs
            while time.time() < end:
                n = r.call("CLIENT", "KILL", "LADDR", laddr)
                killed += n
                rounds_with_kill += n > 0
                time.sleep(0.1)
        finally:
            r.close()
        rec["connections_killed"] = killed
        rec["kill_rounds_that_cut"] = rounds_with_kill
        rec["effect"] = killed > 0

    def _partition_by_pid(self, target, secs, rec):
        """The failover modes' broker_partition: every broker reaches the
        nodes at 127.0.0.1, so the replica's connections are found from its
        own sockets (/proc/<pid>/fd, /proc/<pid>/net/tcp) and each is killed
        on the node it goes to (`CLIENT KILL ADDR`): data nodes and, in
        sentinel mode, the sentinels. Every 100 ms, for `secs`. Effect: CLIENT
        KILL closed at least one connection."""
        b = self._broker(target)
        ports = self.redis.client_ports()
        killed = 0
        rounds_with_kill = 0
        by_port = {}
        end = time.time() + secs
        while time.time() < end:
            n_round = 0
            for addr, port in redis_connections_of(b.proc.pid, ports):
                try:
                    n = redis_call(port, "CLIENT", "KILL", "ADDR", addr, timeout=0.5)
                except (OSError, RuntimeError, ConnectionError):
                    continue  # a node that is down, or the client already gone
                n_round += n
                by_port[port] = by_port.get(port, 0) + n
            killed += n_round
            rounds_with_kill += n_round > 0
            time.sleep(0.1)
        rec["connections_killed"] = killed
        rec["kill_rounds_that_cut"] = rounds_with_kill
        rec["killed_by_node_port"] = by_port
        rec["effect"] = killed > 0

    # -- failover modes
    def master_kill(self, target, secs, rec):
        """SIGKILL of the chaos queue's master; the sentinels / the cluster
        promote its replica; `secs` after the promotion the old master is
        restarted and rejoins as a replica. Effect: a live master killed
        (-9) and the master's address changed (master_before / master_after,
        as the sentinels / every cluster node name it)."""
        self.redis.kill_master(rec, secs, self.stop_event)
        if not rec.get("rejoined_as_replica"):
            self.errors.append(f"master_kill: the old master {rec.get('master_before')} did "
                               f"not rejoin as a synced replica")

    # -- redis
    def redis_kill(self, target, secs, rec):
        """Effect: a live Redis killed (status -9)."""
        rec["alive_before"] = self.redis.alive()
        self.redis.proc.kill()
        rec["status"] = self.redis.proc.wait()
        rec["effect"] = rec["alive_before"] and rec["status"] == -signal.SIGKILL
        time.sleep(secs)
        t = time.time()
        self.redis.start()
        rec["restart_s"] = round(time.time() - t, 1)

    def redis_pause(self, target, secs, rec):
        """Effect: a PING on a new connection got no answer within 0.5 s
        (and, for SIGSTOP, Redis was seen stopped)."""
        t = time.time()
        if target.endswith("client_pause"):
            redis_call(self.redis.port, "CLIENT", "PAUSE", int(secs * 1000), "ALL")
            rec["ping_blocked"] = redis_blocked(self.redis.port)
            rec["effect"] = rec["ping_blocked"]
            time.sleep(max(0.0, secs - (time.time() - t)))
        else:
            os.kill(self.redis.proc.pid, signal.SIGSTOP)
            try:
                rec["stopped"] = wait_stopped(self.redis.proc.pid)
                rec["ping_blocked"] = redis_blocked(self.redis.port)
                rec["effect"] = rec["stopped"] and rec["ping_blocked"]
                time.sleep(max(0.0, secs - (time.time() - t)))
            finally:
                os.kill(self.redis.proc.pid, signal.SIGCONT)
