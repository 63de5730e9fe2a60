"""The benchmark's scale checks (bench/README.md, "Scale checks"): each runs
once against a fresh redis-server and broker, through one scenario of
jobwire_bench, and is compared with its target. run_bench.py runs them and
puts the table into its report, unless --no-scale.

jobwire_bench runs with --pause: at each phase line it prints ({"phase": ...})
it waits for a line on stdin while this driver measures the broker and Redis.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from bench_stack import Stack, cpu_seconds, metric, redis_info, rss_mib

SMALL_BACKLOG = 1000  # the claim rate with this many pending is the reference
CLAIM_ROUNDS = 5  # drains per claim-rate check; the median is compared


def add_arguments(parser):
    parser.add_argument("--scale", action=argparse.BooleanOptionalAction, default=True,
                        help="run the scale checks (--no-scale: skip them)")
    parser.add_argument("--scale-backlog", type=int, default=1_000_000,
                        help="claim rate: jobs pending behind the --jobs drained, compared with "
                             f"{SMALL_BACKLOG:,} pending; Redis memory per job is read after "
                             "loading them")
    parser.add_argument("--scale-claim-jobs", type=int, default=10_000,
                        help="claim rate: jobs enqueued ahead of the backlog and drained, per "
                             "round (a round of 5,000 lasts about half a second: too short to "
                             "compare on a shared machine)")
    parser.add_argument("--scale-due-jobs", type=int, default=100_000,
                        help="scheduled jobs that all become due at one moment")
    parser.add_argument("--scale-streams", type=int, default=10_000,
                        help="idle Claim streams held open for the broker's RSS")
    parser.add_argument("--scale-idle-workers", type=int, default=100,
                        help="idle workers for Redis commands/s and broker CPU")
    parser.add_argument("--scale-idle-seconds", type=float, default=60,
                        help="how long the idle window is measured (60: the reaper's idle-queue "
                             "check runs once a minute, so a shorter window holds it once or "
                             "not at all)")


class Staged:
    """jobwire_bench --scenario=`scenario` --pause against a fresh stack, driven
    phase by phase: start(), then next_phase() returns each phase line the
    program prints (it then waits until go_on()), and None once it has ended
    (its final JSON line is then in `result`). close() always."""

    def __init__(self, args, scenario, extra, broker_args=(), metrics=False, timeout=900):
        self._workdir = tempfile.TemporaryDirectory(prefix="jobwire-bench-")
        self.stack = Stack(args.broker, self._workdir.name, broker_args, metrics)
        self._cmd = [args.load, f"--addr=127.0.0.1:{self.stack.port}",
                     f"--scenario={scenario}", "--pause"] + extra
        self._timeout = timeout
        self._proc = self._err = self._watchdog = None
        self.result = None

    def start(self):
        self._err = open(os.path.join(self._workdir.name, "stderr"), "w+")
        self._proc = subprocess.Popen(self._cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._err, text=True)
        self._watchdog = threading.Timer(self._timeout, self._proc.kill)
        self._watchdog.start()

    def next_phase(self):
        for line in self._proc.stdout:
            line = json.loads(line)
            if "phase" in line:
                return line
            self.result = line
        self._proc.wait()
        if self._proc.returncode != 0 or self.result is None:
            self._err.seek(0)
            raise RuntimeError(f"{' '.join(self._cmd)} failed ({self._proc.returncode}): "
                               f"{json.dumps(self.result)} {self._err.read()[-2000:]}")
        return None

    def go_on(self):
        self._proc.stdin.write("\n")
        self._proc.stdin.flush()

    def close(self):
        try:
            if self._watchdog:
                self._watchdog.cancel()
            if self._proc and self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            if self._err:
                self._err.close()
        finally:
            self.stack.close()
            self._workdir.cleanup()


def staged(args, scenario, extra, on_phase=None, broker_args=(), metrics=False, timeout=900):
    """Runs a Staged program to its end. `on_phase(stack, line)` is called with
    {"phase": "start"} before the program starts and with each phase line it
    prints; what it returns is kept by phase name. Returns (the program's
    final JSON line, that dict)."""
    run = Staged(args, scenario, extra, broker_args, metrics, timeout)
    try:
        seen = {"start": on_phase(run.stack, {"phase": "start"}) if on_phase else {}}
        run.start()
        while (line := run.next_phase()) is not None:
            seen[line["phase"]] = on_phase(run.stack, line) if on_phase else {}
            run.go_on()
        return run.result, seen
    finally:
        run.close()


def claim_rates(args):
    """claim_small and claim_large: the drain rate of --scale-claim-jobs behind
    SMALL_BACKLOG and behind --scale-backlog pending jobs, each on its own
    stack, their rounds alternating (small, large, small, ...) so that both
    see the machine as it is at the time; plus Redis' used_memory before and
    after loading each."""
    backlogs = {"claim_large": args.scale_backlog, "claim_small": SMALL_BACKLOG}
    runs = {}
    try:
        memory = {}
        for name, backlog in backlogs.items():  # loaded one after the other
            run = runs[name] = Staged(args, "backlog_drain", [
                f"--jobs={args.scale_claim_jobs}", f"--backlog={backlog}",
                f"--rounds={CLAIM_ROUNDS}"])
            before = int(redis_info(run.stack.redis_port)[0]["used_memory"])
            run.start()
            if (run.next_phase() or {}).get("phase") != "loaded":
                raise RuntimeError(f"{name}: no 'loaded' phase")
            memory[name] = int(redis_info(run.stack.redis_port)[0]["used_memory"]) - before
            run.go_on()
            run.next_phase()  # waits to start round 0
        for _ in range(CLAIM_ROUNDS):
            for name in ("claim_small", "claim_large"):
                runs[name].go_on()
                runs[name].next_phase()  # the next round's line, or the end
        results = {}
        for name, run in runs.items():
            result = run.result
            if result is None:
                raise RuntimeError(f"{name}: no result after {CLAIM_ROUNDS} rounds")
            result["pending"] = args.scale_claim_jobs + backlogs[name]
            result["memory_delta"] = memory[name]
            result["bytes_per_job"] = memory[name] / result["pending"]
            results[name] = result
        return results
    finally:
        for run in runs.values():
            run.close()


def due_burst(args):
    result, _ = staged(args, "due_burst", [f"--jobs={args.scale_due_jobs}"])
    return result


def idle_streams(args):
    """The broker's RSS before and with --scale-streams idle Claim streams, the
    stream limits raised above them."""
    streams = args.scale_streams

    def on_phase(stack, line):
        out = {}
        if line["phase"] == "open":  # wait until the broker has admitted them all
            deadline = time.time() + 120
            while time.time() < deadline:
                out["gauge"] = metric(stack.metrics_port, "jobwire_claim_streams_open")
                if out["gauge"] is not None and out["gauge"] >= streams:
                    break
                time.sleep(0.2)
            time.sleep(1)
        out["rss_mib"] = rss_mib(stack.broker.pid, "VmRSS")
        return out

    limits = [f"--max_claim_streams={min(1_000_000, max(10_000, 2 * streams))}",
              f"--max_claim_streams_per_peer={min(1_000_000, max(1_000, streams))}"]
    result, seen = staged(args, "idle_streams", [f"--streams={streams}"], on_phase,
                          broker_args=limits, metrics=True)
    result.update(rss_start_mib=seen["start"]["rss_mib"],
                  rss_before_mib=seen["connected"]["rss_mib"],
                  rss_open_mib=seen["open"]["rss_mib"], broker_gauge=seen["open"]["gauge"],
                  broker_args=limits)
    return result


def idle_workers(args):
    """Redis commands/s and the broker's (and Redis') CPU while the broker and
    --scale-idle-workers warmed-up workers sit idle."""
    def on_phase(stack, line):
        if line["phase"] != "idle":
            return {}
        time.sleep(1)  # every worker's stream is open
        info0, calls0 = redis_info(stack.redis_port)
        cpu0, t0 = cpu_seconds(stack.broker.pid), time.monotonic()
        time.sleep(args.scale_idle_seconds)
        info1, calls1 = redis_info(stack.redis_port)
        cpu1, t1 = cpu_seconds(stack.broker.pid), time.monotonic()
        seconds = t1 - t0
        by_command = {k: v - calls0.get(k, 0) for k, v in calls1.items()}
        by_command["info"] = by_command.get("info", 0) - 1  # the first INFO
        by_command = {k: v for k, v in by_command.items() if v > 0}
        redis_cpu = sum(float(info1[k]) - float(info0[k])
                        for k in ("used_cpu_sys", "used_cpu_user"))
        return {"seconds": seconds, "commands": sum(by_command.values()),
                "commands_per_s": sum(by_command.values()) / seconds,
                "by_command": dict(sorted(by_command.items(), key=lambda kv: -kv[1])),
                "broker_cpu_percent": (cpu1 - cpu0) / seconds * 100,
                "redis_cpu_percent": redis_cpu / seconds * 100}

    result, seen = staged(args, "idle_workers",
                          [f"--workers={args.scale_idle_workers}", "--concurrency=1"], on_phase)
    result.update(seen["idle"])
    return result


# (names, check): a check of one name returns its result, one of several
# names a dict of results by name.
CHECKS = [
    (("claim_small", "claim_large"), claim_rates),
    (("due_burst",), due_burst),
    (("idle_streams",), idle_streams),
    (("idle_workers",), idle_workers),
]


def run(args):
    """Runs every check; returns ({name: result or None}, {name: error})."""
    results, errors = {}, {}
    for names, check in CHECKS:
        try:
            out = check(args)
            for name in names:
                results[name] = out[name] if len(names) > 1 else out
                print(json.dumps({"scale_check": name, "result": results[name]}), flush=True)
        except (RuntimeError, ValueError, OSError) as exc:
            for name in names:
                results[name] = None
                errors[name] = str(exc)
            print(f"scale check {', '.join(names)}: failed: {exc}", file=sys.stderr, flush=True)
    return results, errors


def yes_no(ok):
    return "yes" if ok else "**no**"


def report(args, results, errors):
    """The report's "Scale checks" section, as markdown lines."""
    rows, notes = [], []

    def failed(*names):
        bad = [n for n in names if results.get(n) is None]
        for n in bad:
            notes.append(f"- `{n}` failed: {errors.get(n, '')[:300]}")
        return bad

    small, large = results.get("claim_small"), results.get("claim_large")
    if not failed("claim_small", "claim_large"):
        ratio = large["jobs_per_s"] / small["jobs_per_s"]
        rows.append((f"Claim + ack rate, {args.scale_backlog:,} jobs pending vs "
                     f"{SMALL_BACKLOG:,}",
                     f"does not drop (ratio of medians of {CLAIM_ROUNDS} drains ≥ 0.90)",
                     f"{large['jobs_per_s']:,.0f} ({large['min_jobs_per_s']:,.0f}–"
                     f"{large['max_jobs_per_s']:,.0f}) vs {small['jobs_per_s']:,.0f} "
                     f"({small['min_jobs_per_s']:,.0f}–{small['max_jobs_per_s']:,.0f}) jobs/s "
                     f"(ratio {ratio:.2f})", yes_no(ratio >= 0.9)))
        rows.append(("Redis memory per pending job (~64-byte JSON payload)", "< 250 bytes",
                     f"{large['bytes_per_job']:,.0f} bytes (used_memory "
                     f"+{large['memory_delta'] / 2**20:,.1f} MiB for {large['pending']:,} jobs)",
                     yes_no(large["bytes_per_job"] < 250)))
        notes.append(
            f"- Claim rate: the backlog enqueued, then {args.scale_claim_jobs:,} jobs at "
            f"priority 1 ahead of it (EnqueueBatch of 100 from 4 threads; "
            f"{large['load_jobs_per_s']:,.0f} jobs/s, {large['load_seconds']:.1f} s for "
            f"{large['pending']:,}); then 2 Workers x 64 claim and ack those "
            f"{args.scale_claim_jobs:,} while the backlog stays pending; {CLAIM_ROUNDS} such "
            f"drains, each after enqueueing its {args.scale_claim_jobs:,}, taking turns with "
            f"those of the {SMALL_BACKLOG:,}-job backlog (its own Redis and broker). With "
            f"{SMALL_BACKLOG:,} pending Redis held {small['bytes_per_job']:,.0f} bytes per job.")
    burst = results.get("due_burst")
    if not failed("due_burst"):
        rows.append((f"{burst['jobs']:,} scheduled jobs due at once",
                     "drains; the broker stays responsive",
                     f"due → last ack {burst['seconds']:.2f} s ({burst['jobs_per_s']:,.0f} "
                     f"jobs/s); GetJob probe p99 {burst['probe_burst_p99_ms']:.1f} ms "
                     f"(idle: {burst['probe_idle_p99_ms']:.1f} ms)",
                     yes_no(burst["probe_errors"] == 0 and burst["acked"] >= burst["jobs"])))
        notes.append(
            f"- Due burst: 2 idle Workers x 64; {burst['jobs']:,} jobs enqueued in "
            f"{burst['enqueue_seconds']:.1f} s with one run_at {burst['due_in_ms']:,} ms after "
            f"the enqueue began. First handler {burst['first_start_ms']:.1f} ms after the due "
            f"moment, handler start p50 {burst['start_p50_ms']:,.0f} ms / p99 "
            f"{burst['start_p99_ms']:,.0f} ms after it. GetJob of another job of the queue "
            f"every {burst['probe_interval_ms']} ms: during the burst "
            f"{burst['probe_burst_count']:,} probes, p50 {burst['probe_burst_p50_ms']:.1f} / "
            f"p99 {burst['probe_burst_p99_ms']:.1f} / max {burst['probe_burst_max_ms']:.1f} ms; "
            f"before it (idle) p50 {burst['probe_idle_p50_ms']:.1f} / p99 "
            f"{burst['probe_idle_p99_ms']:.1f} ms; {burst['probe_errors']} errors.")
    streams = results.get("idle_streams")
    if not failed("idle_streams"):
        per = (streams["rss_open_mib"] - streams["rss_before_mib"]) * 1024 / streams["streams"]
        rows.append((f"Broker RSS with {streams['streams']:,} open Claim streams", "< 100 MiB",
                     f"{streams['rss_open_mib']:,.1f} MiB (before: "
                     f"{streams['rss_before_mib']:,.1f} MiB; {per:,.1f} KiB per stream)",
                     yes_no(streams["rss_open_mib"] < 100)))
        notes.append(
            f"- Claim streams: raw Claim calls (max_in_flight 1, nothing to claim) over "
            f"{streams['channels']} client connections, opened in "
            f"{streams['open_seconds']:.1f} s; the broker's jobwire_claim_streams_open gauge "
            f"read {streams['broker_gauge']:,.0f}; broker run with "
            f"{' '.join('`' + a + '`' for a in streams['broker_args'])}. VmRSS of the broker: "
            f"{streams['rss_start_mib']:,.1f} MiB fresh, {streams['rss_before_mib']:,.1f} MiB "
            f"with the connections open, {streams['rss_open_mib']:,.1f} MiB with the streams.")
    idle = results.get("idle_workers")
    if not failed("idle_workers"):
        rows.append((f"Redis commands while idle ({idle['workers']} idle workers, one queue)",
                     "< 5/s per queue", f"{idle['commands_per_s']:.1f}/s",
                     yes_no(idle["commands_per_s"] < 5)))
        rows.append(("Broker CPU, same window", "< 1%",
                     f"{idle['broker_cpu_percent']:.2f}%", yes_no(idle["broker_cpu_percent"] < 1)))
        top = ", ".join(f"{k} {v}" for k, v in idle["by_command"].items())
        notes.append(
            f"- Idle: {idle['workers']} Workers (concurrency 1), warmed up with one job; "
            f"{idle['commands']} Redis commands in {idle['seconds']:.1f} s ({top}; commandstats "
            f"counts the commands scripts run); Redis CPU {idle['redis_cpu_percent']:.2f}%.")
    return [
        "## Scale checks",
        "",
        "Each check ran once, against a fresh redis-server and broker on loopback; the "
        "targets are the performance issue's. What each does: bench/README.md.",
        "",
        "| check | target | measured | meets target |",
        "|---|---|---|---|",
    ] + [f"| {' | '.join(row)} |" for row in rows] + [""] + notes + [""]
