"""The nemesis of the chaos run (README.md): a seeded schedule of faults, one
at a time and each bounded in time, injected into the processes of
chaos_system."""

import os
import signal
import subprocess
import threading
import time

from chaos_system import Resp, log, redis_call

FAULTS = ["worker_kill", "worker_pause", "broker_kill", "broker_term", "broker_freeze",
          "broker_partition", "redis_kill", "redis_pause"]

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

