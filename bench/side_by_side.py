"""The side-by-side runs of the benchmark (bench/README.md, "Side by side"):
every system as one producer process and one worker process of its own
ecosystem, speaking the program protocol of bench/side_protocol.md, against a
fresh redis-server (and a fresh jobwire broker for jobwire's clients) per
run; and the two ceilings, run the same way between them. run_bench.py
decides what runs in which order and writes the report.

A run's figures come from the programs' own records (their "done" lines) and
from /proc and Redis INFO read around the measured window: from the
producer's "go" to the worker's last completion."""

import json
import os
import queue
import subprocess
import tempfile
import threading
import time

from bench_stack import Stack, redis_info

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("JOBWIRE_BUILD_DIR", os.path.join(REPO, "build"))
VENV_PY = os.path.join(os.environ.get("JOBWIRE_VENV", os.path.join(REPO, ".venv")), "bin",
                       "python")

# name -> (needs a broker, command before the protocol flags)
SYSTEMS = {
    "jobwire-cpp": (True, [os.path.join(BUILD, "bench", "jobwire_side")]),
    "jobwire-node": (True, ["node", os.path.join(REPO, "bench", "clients", "side.mjs")]),
    "bullmq": (False, ["node", os.path.join(REPO, "bench", "peers", "bullmq", "side.mjs")]),
    "jobwire-python": (True, [VENV_PY, os.path.join(REPO, "bench", "clients", "side.py")]),
    "celery": (False, [VENV_PY, os.path.join(REPO, "bench", "peers", "celery_side.py")]),
    "rq": (False, [VENV_PY, os.path.join(REPO, "bench", "peers", "rq_side.py")]),
    "jobwire-go": (True, [os.path.join(BUILD, "bench-peers", "jobwire-go-bench")]),
    "asynq": (False, [os.path.join(BUILD, "bench-peers", "asynq-bench")]),
}
CEILINGS = {
    "redis-raw": [os.path.join(BUILD, "bench", "redis_raw_ceiling")],
    "jobwire-scripts": [os.path.join(BUILD, "bench", "redis_ceiling")],
}
CLK_TCK = os.sysconf("SC_CLK_TCK")


# A jobwire client program built from the tree: the file the run uses, the
# sources it is built from, and the command that rebuilds it.
NODE_CLIENT = os.environ.get("JOBWIRE_NODE_CLIENT", os.path.join(REPO, "client", "node"))
BUILT_CLIENTS = {
    "jobwire-go": (os.path.join(BUILD, "bench-peers", "jobwire-go-bench"),
                   [os.path.join(REPO, "client", "go"), os.path.join(REPO, "bench", "clients", "go")],
                   (".go", "go.mod", "go.sum"), os.path.join(REPO, "bench", "clients", "go", "build.sh")),
    "jobwire-node": (os.path.join(NODE_CLIENT, "dist", "index.js"),
                     [os.path.join(NODE_CLIENT, "src")], (".ts",),
                     os.path.join(NODE_CLIENT, "build.sh")),
}


def stale(name):
    """Why the built program of jobwire client `name` is older than the
    client's sources (a run would measure old code), or None."""
    if name not in BUILT_CLIENTS:
        return None
    built, roots, suffixes, rebuild = BUILT_CLIENTS[name]
    if not os.path.exists(built):
        return None  # missing() says so
    built_at = os.path.getmtime(built)
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "generated", "dist")]
            for f in files:
                path = os.path.join(folder, f)
                if f.endswith(suffixes) and os.path.getmtime(path) > built_at:
                    return f"{built} is older than {path} (rebuild: {rebuild})"
    return None


def missing(name):
    """Why `name` cannot run here (not built, or built from older sources), or
    None."""
    _, cmd = SYSTEMS[name] if name in SYSTEMS else (False, CEILINGS[name])
    for part in cmd:
        if os.path.isabs(part) and not os.path.exists(part):
            return f"{part} not found (scripts/build.sh, bench/peers/setup.sh)"
    return stale(name)


# --- /proc -----------------------------------------------------------------

def _stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def tree_pids(pid):
    """`pid` and every live descendant."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(_stat_fields(entry)[1])
        except (OSError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def tree_cpu_seconds(pid):
    """User + system CPU of `pid` and its live descendants, plus what their
    reaped children used (cutime, cstime)."""
    total = 0
    for p in tree_pids(pid):
        try:
            f = _stat_fields(p)
        except OSError:
            continue
        total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    return total / CLK_TCK


def task_ids(pid):
    """The thread ids of `pid` (/proc/<pid>/task); none once it has ended."""
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def context_switches(pid):
    """Voluntary + involuntary context switches of the threads of `pid`, by
    thread name (/proc/<pid>/task/*/comm: the broker names its event loop
    jw-loop; gRPC's threads carry gRPC's names, cut to 15 characters). A
    thread that ended before the read is not counted."""
    by_name = {}
    for tid in task_ids(pid):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        by_name[name] = by_name.get(name, 0) + int(line.split()[1])
        except OSError:
            pass
    return by_name


def tree_run_wait(pid):
    """{thread id: ns} the threads of `pid` and its live descendants spent
    runnable but waiting for a CPU (/proc/<pid>/task/*/schedstat, second
    field): on this 2-core machine, what the other processes of a run cost
    this one in delay."""
    waits = {}
    for p in tree_pids(pid):
        for tid in task_ids(p):
            try:
                with open(f"/proc/{p}/task/{tid}/schedstat") as f:
                    waits[int(tid)] = int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return waits


def run_wait_seconds(before, after):
    """The wait between two tree_run_wait readings: of the threads alive at
    the second (a thread that ended in between is not counted)."""
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9


def cpu_times():
    """(total jiffies, steal jiffies) of the machine (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields[:8]), fields[7]


def load_average():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# --- one run ---------------------------------------------------------------

class Program:
    """A protocol program: its JSON event lines queued by a reader thread."""

    def __init__(self, cmd, log, stdin=False):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=log, text=True)
        self.events = queue.Queue()
        self.info = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                self.events.put(event)
        self.events.put({"event": "exit"})

    def wait(self, name, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                event = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"no '{name}' within {timeout:.0f} s") from None
            if event.get("event") == "info":
                self.info = event
            if event.get("event") == name:
                return event
            if event.get("event") == "exit":
                raise RuntimeError(f"exited ({self.proc.wait()}) before '{name}'")

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Snapshot:
    """What is read at each end of the measured window."""

    def __init__(self, stack, pids):
        self.wall = time.monotonic()
        self.cpu = {name: tree_cpu_seconds(pid) for name, pid in pids.items()}
        self.run_wait = {name: tree_run_wait(pid)
                         for name, pid in dict(pids, redis=stack.redis.pid).items()}
        self.switches = context_switches(stack.broker.pid) if stack.broker else {}
        self.total_jiffies, self.steal_jiffies = cpu_times()
        self.info, self.calls = redis_info(stack.redis_port)


def measure(stack, pids, jobs, before, after):
    """The per-job costs of a run between two snapshots."""
    redis_cpu = (float(after.info["used_cpu_sys"]) + float(after.info["used_cpu_user"]) -
                 float(before.info["used_cpu_sys"]) - float(before.info["used_cpu_user"]))
    commands = sum(after.calls.values()) - sum(before.calls.values())
    jiffies = max(1, after.total_jiffies - before.total_jiffies)
    out = {
        "redis_commands_per_job": commands / jobs,
        "redis_cpu_us_per_job": redis_cpu / jobs * 1e6,
        "cpu_us_per_job": {name: (after.cpu[name] - before.cpu[name]) / jobs * 1e6
                           for name in pids},
        "run_wait_us_per_job": {
            name: run_wait_seconds(before.run_wait[name], after.run_wait[name]) / jobs * 1e6
            for name in after.run_wait},
        "steal_percent": 100.0 * (after.steal_jiffies - before.steal_jiffies) / jiffies,
        "redis_used_memory": int(after.info["used_memory"]),
    }
    if stack.broker:
        by_thread = {name: (n - before.switches.get(name, 0)) / jobs
                     for name, n in after.switches.items()}
        out["broker_switches_per_job"] = (sum(after.switches.values()) -
                                          sum(before.switches.values())) / jobs
        out["broker_switches_by_thread"] = {k: v for k, v in by_thread.items() if v > 0}
    return out


def run_system(name, broker, jobs, chunk=1000, concurrency=50, rate=0.0, timeout=600,
               observers=None, extra_flags=()):
    """One run of system `name`: returns its figures (see measure(), plus
    jobs_per_s and the worker's latency_ms), or raises RuntimeError.
    `observers(address)`, when given, is called once the worker and the
    producer are ready and returns processes (subprocess.Popen) that watch
    the broker at `address` during the measured window (observer_cost.py);
    they are ended with the run, and `observers_ended` in the figures lists
    the command lines of those that had ended before it. `extra_flags` go to
    both of the system's programs (limits_cost.py: jobwire_side's
    --concurrency_keys)."""
    needs_broker, cmd = SYSTEMS[name]
    with tempfile.TemporaryDirectory(prefix="jobwire-side-") as workdir, \
            open(os.path.join(workdir, "programs.log"), "w+") as log:
        stack = Stack(broker if needs_broker else "", workdir)
        worker = producer = None
        watching = []
        try:
            target = (["--addr", f"127.0.0.1:{stack.port}"] if needs_broker else
                      ["--redis-url", f"redis://127.0.0.1:{stack.redis_port}"])
            flags = target + ["--queue", "bench", "--jobs", str(jobs), "--chunk", str(chunk),
                              "--concurrency", str(concurrency), "--rate", f"{rate:g}"]
            flags += list(extra_flags)
            worker = Program(cmd + ["--role", "worker"] + flags, log)
            worker.wait("ready", 60)
            producer = Program(cmd + ["--role", "producer"] + flags, log, stdin=True)
            producer.wait("ready", 60)
            pids = {"producer": producer.proc.pid, "worker": worker.proc.pid}
            if stack.broker:
                pids["broker"] = stack.broker.pid
            if observers:
                watching = observers(f"127.0.0.1:{stack.port}")
            load = load_average()
            before = Snapshot(stack, pids)
            producer.go()
            produced = producer.wait("done", timeout)
            done = worker.wait("done", timeout)
            after = Snapshot(stack, pids)
            observers_ended = [p.args for p in watching if p.poll() is not None]
        except RuntimeError as exc:
            log.seek(0)
            raise RuntimeError(f"{name}: {exc}; its output: {log.read()[-1500:]}") from None
        finally:
            for program in (producer, worker):
                if program:
                    program.stop()
            for proc in watching:
                proc.kill()
                proc.wait()
            stack.close()
    if done.get("completed", 0) < jobs or produced.get("enqueued", 0) < jobs:
        raise RuntimeError(f"{name}: enqueued {produced.get('enqueued')}, completed "
                           f"{done.get('completed')} of {jobs}")
    seconds = (done["last_done_ms"] - produced["start_ms"]) / 1000
    out = {"system": name, "jobs": jobs, "seconds": seconds, "jobs_per_s": jobs / seconds,
           "sent_per_s": jobs / max(1e-9, (produced["end_ms"] - produced["start_ms"]) / 1000),
           "latency_ms": done.get("latency_ms", {}), "load_average": load,
           "version": worker.info.get("version", ""),
           "settings": "producer: " + producer.info.get("settings", "") + "; worker: " +
                       worker.info.get("settings", "")}
    out.update(measure(stack, pids, jobs, before, after))
    if observers:
        out["observers_ended"] = observers_ended
    return out


def run_ceiling(name, jobs):
    """One run of ceiling `name` against a fresh redis-server."""
    cmd = CEILINGS[name]
    with tempfile.TemporaryDirectory(prefix="jobwire-side-") as workdir:
        stack = Stack("", workdir)
        try:
            flags = ([f"--port={stack.redis_port}"] if name == "redis-raw" else
                     [f"--redis_url=redis://127.0.0.1:{stack.redis_port}", "--enqueue_batch=1000",
                      "--claim_batch=50"])
            load = load_average()
            start_info, start_calls = redis_info(stack.redis_port)
            proc = subprocess.run(cmd + flags + [f"--jobs={jobs}"], capture_output=True,
                                  text=True, timeout=600)
            info, calls = redis_info(stack.redis_port)
        finally:
            stack.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: exit {proc.returncode}: {proc.stdout[-500:]}"
                           f"{proc.stderr[-500:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    redis_cpu = (float(info["used_cpu_sys"]) + float(info["used_cpu_user"]) -
                 float(start_info["used_cpu_sys"]) - float(start_info["used_cpu_user"]))
    return {"system": name, "jobs": jobs, "jobs_per_s": result["jobs_per_s"],
            "load_average": load,
            "redis_commands_per_job": (sum(calls.values()) - sum(start_calls.values())) / jobs,
            "redis_cpu_us_per_job": redis_cpu / jobs * 1e6}
