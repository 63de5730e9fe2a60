#!/usr/bin/env python3
"""The jobwire benchmark: the one command (bench/README.md).

Runs every system side by side (bench/side_by_side.py): jobwire through its
C++, Node.js, Python and Go clients and its peers BullMQ, Celery, RQ (with
--rq) and asynq, each as one producer process and one worker process of its
ecosystem, in rounds that alternate the systems (A B C ... A B C ...), plus
the two ceilings in the same rounds; then latency rounds (one enqueue per
job, open loop) and idle pickup rounds; then the scale checks
(bench/scale_checks.py). Writes the report, its targets table and a chart.

  .venv/bin/python bench/run_bench.py --out docs/performance.md
  .venv/bin/python bench/run_bench.py --quick          # development
"""

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

import scale_checks
import side_by_side
from side_by_side import SYSTEMS

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

BULK_SYSTEMS = ["jobwire-cpp", "jobwire-node", "bullmq", "jobwire-python", "celery",
                "jobwire-go", "asynq"]
LATENCY_SYSTEMS = ["jobwire-cpp", "jobwire-node", "bullmq"]
# (name, numerator, denominator, goal): ratios of jobs/s within one round.
PAIRS = [
    ("jobwire Node client / BullMQ", "jobwire-node", "bullmq", 2.0),
    ("jobwire C++ load generator / BullMQ", "jobwire-cpp", "bullmq", 3.0),
    ("jobwire C++ load generator / raw Redis ceiling", "jobwire-cpp", "redis-raw", 0.5),
    ("jobwire Python client / Celery", "jobwire-python", "celery", 5.0),
    ("jobwire Go client / asynq", "jobwire-go", "asynq", 2.0),
]
NOTES = os.path.join(HERE, "performance_notes.md")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default=os.path.join(side_by_side.BUILD, "broker",
                                                         "jobwire-broker"))
    parser.add_argument("--load", default=os.path.join(side_by_side.BUILD, "bench",
                                                       "jobwire_bench"),
                        help="jobwire_bench, for the scale checks")
    parser.add_argument("--jobs", type=int, default=50_000, help="jobs per bulk run")
    parser.add_argument("--chunk", type=int, default=1000, help="jobs per bulk enqueue call")
    parser.add_argument("--concurrency", type=int, default=50, help="jobs in flight per worker")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--systems", default=",".join(BULK_SYSTEMS),
                        help="bulk rounds, in this order; known: " + ", ".join(SYSTEMS))
    parser.add_argument("--rq", action="store_true", help="add RQ to the bulk rounds "
                        "(about 4 minutes per round at 50,000 jobs)")
    parser.add_argument("--latency-systems", default=",".join(LATENCY_SYSTEMS))
    parser.add_argument("--latency-rate", type=float, default=1000)
    parser.add_argument("--latency-jobs", type=int, default=5000)
    parser.add_argument("--pickup-rate", type=float, default=20,
                        help="idle pickup: jobs/s offered one at a time to an idle worker")
    parser.add_argument("--pickup-jobs", type=int, default=100)
    parser.add_argument("--quick", action="store_true",
                        help="development: 10,000 jobs, 1 round, short latency runs, "
                             "no scale checks")
    scale_checks.add_arguments(parser)
    parser.add_argument("--out", default="", help="markdown report (default: stdout only)")
    parser.add_argument("--chart", default="", help="PNG chart (default: performance.png "
                        "next to --out)")
    args = parser.parse_args()
    if args.quick:
        args.jobs, args.rounds, args.latency_jobs, args.pickup_jobs = 10_000, 1, 2000, 40
        args.scale = False
    args.systems = args.systems.split(",") + (["rq"] if args.rq else [])
    args.latency_systems = [s for s in args.latency_systems.split(",") if s]
    return args


def run_rounds(args):
    """Every round: the ceilings and the bulk systems, then the latency and
    the idle pickup runs. Returns {kind: {system: [result or None per
    round]}} and the errors seen."""
    kinds = {"bulk": {}, "latency": {}, "pickup": {}}
    errors = {}
    runnable = {}
    for name in set(args.systems + args.latency_systems + list(side_by_side.CEILINGS)):
        runnable[name] = side_by_side.missing(name)
        if runnable[name]:
            errors[name] = runnable[name]

    def attempt(kind, name, run):
        if runnable[name]:
            kinds[kind].setdefault(name, []).append(None)
            return
        try:
            result = run()
        except (RuntimeError, subprocess.TimeoutExpired, ValueError, OSError) as exc:
            errors[f"{kind} {name}"] = str(exc)[:600]
            print(f"{kind} {name}: failed: {exc}", file=sys.stderr, flush=True)
            result = None
        kinds[kind].setdefault(name, []).append(result)
        print(json.dumps({"kind": kind, "result": result}), flush=True)

    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds}", file=sys.stderr, flush=True)
        for name in side_by_side.CEILINGS:
            attempt("bulk", name, lambda n=name: side_by_side.run_ceiling(n, args.jobs))
        for name in args.systems:
            attempt("bulk", name, lambda n=name: side_by_side.run_system(
                n, args.broker, args.jobs, args.chunk, args.concurrency))
        for name in args.latency_systems:
            attempt("latency", name, lambda n=name: side_by_side.run_system(
                n, args.broker, args.latency_jobs, 1, args.concurrency, args.latency_rate))
        for name in args.latency_systems:
            attempt("pickup", name, lambda n=name: side_by_side.run_system(
                n, args.broker, args.pickup_jobs, 1, args.concurrency, args.pickup_rate))
    return kinds, errors


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(values, digits=0):
    """'median (min–max)' of the values that exist."""
    values = [v for v in values if v is not None]
    if not values:
        return "not measured"
    m = statistics.median(values)
    if len(values) == 1:
        return f"{m:,.{digits}f}"
    return f"{m:,.{digits}f} ({min(values):,.{digits}f}–{max(values):,.{digits}f})"


def field(results, *path):
    out = []
    for r in results:
        for key in path:
            r = r.get(key) if isinstance(r, dict) else None
        out.append(r)
    return out


def round_ratios(bulk, num, den):
    """jobs/s of `num` over `den`, per round where both ran."""
    out = []
    for a, b in zip(bulk.get(num, []), bulk.get(den, [])):
        if a and b:
            out.append(a["jobs_per_s"] / b["jobs_per_s"])
    return out


def cost_cells(results):
    """Redis commands and CPU per job; CPU per job of the producer, worker
    and broker and the broker's switches ("–" where a system has none)."""
    def cell(values, digits):
        return fmt(values, digits) if any(v is not None for v in values) else "–"

    cpu = [cell(field(results, "cpu_us_per_job", who), 1)
           for who in ("producer", "worker", "broker")]
    return [fmt(field(results, "redis_commands_per_job"), 2),
            fmt(field(results, "redis_cpu_us_per_job"), 1), *cpu,
            cell(field(results, "broker_switches_per_job"), 2)]


def bulk_section(args, bulk):
    lines = [
        "## Side by side: throughput",
        "",
        f"{args.jobs:,} no-op jobs with a 64-byte JSON payload per run; one producer process "
        f"(the system's bulk API, {args.chunk:,} jobs per call) and one worker process "
        f"({args.concurrency} jobs in flight) of the system's own ecosystem, against a fresh "
        "redis-server (no persistence) on loopback, and a fresh broker for jobwire. "
        f"{args.rounds} rounds, each running every system in turn (the order of the rows). "
        "jobs/s: jobs over the time from the producer's start to the last completion the "
        "worker logged; completion as each system confirms it (settings below). Costs per "
        "job over the same window: Redis commands (INFO commandstats, which counts the "
        "commands scripts run) and Redis CPU; CPU of the producer, worker and broker "
        "processes (/proc, children included); the broker's context switches (every "
        "thread). Median (range) over the rounds.",
        "",
        "| system | jobs/s | Redis commands/job | Redis CPU µs/job | producer CPU µs/job | "
        "worker CPU µs/job | broker CPU µs/job | broker switches/job |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, results in bulk.items():
        lines.append(f"| {name} | {fmt(field(results, 'jobs_per_s'))} | "
                     + " | ".join(cost_cells(results)) + " |")
    lines += ["", "Ratios within a round (the two systems ran minutes apart at most, in "
              "the same round):", "",
              "| ratio | per round | median | target | met |", "|---|---|---|---|---|"]
    for title, num, den, goal in PAIRS:
        ratios = round_ratios(bulk, num, den)
        m = med(ratios)
        lines.append(f"| {title} | {', '.join(f'{x:.2f}' for x in ratios) or '–'} | "
                     f"{'–' if m is None else f'{m:.2f}'} | ≥ {goal:g} | "
                     f"{'–' if m is None else ('yes' if m >= goal else '**no**')} |")
    lines += ["", "Ceilings: `redis-raw` is the least a job queue asks of Redis "
              "(bench/redis_raw_ceiling.cc: three small scripts, enqueue INCR/HSET/ZADD, claim "
              "ZPOPMIN/ZADD/HSET/HGET, ack ZREM/DEL, pipelined 64 deep over 4 hiredis "
              "connections); `jobwire-scripts` is jobwire's own enqueue.lua / claim.lua / "
              "ack.lua through the broker's store layer, no broker and no gRPC "
              f"(bench/redis_ceiling.cc: {args.chunk:,} jobs per enqueue.lua, claims of "
              f"{args.concurrency}, one ack.lua per claimed batch).", "",
              "Versions and settings:", ""]
    for name, results in bulk.items():
        first = next((r for r in results if r), None)
        if first and first.get("settings"):
            lines.append(f"- {name} ({first.get('version', '')}): {first['settings']}.")
    return lines + [""]


def latency_section(args, title, results_by_system, rate):
    lines = [
        f"## Side by side: {title}",
        "",
        f"One enqueue call per job at {rate:g} jobs/s offered, open loop (each call sent at "
        "its scheduled time whether or not earlier ones have answered), to one idle worker "
        f"process ({args.concurrency} in flight). Latency: from the job's scheduled send "
        "time to its handler starting, from the worker's own clock readings (the same "
        "machine's wall clock); a late send counts. Median (range) over the rounds.",
        "",
        "| system | sent jobs/s | mean ms | p50 ms | p99 ms | Redis commands/job | "
        "Redis CPU µs/job | producer CPU µs/job | worker CPU µs/job | broker CPU µs/job | "
        "broker switches/job |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, results in results_by_system.items():
        lines.append(
            f"| {name} | {fmt(field(results, 'sent_per_s'))} | "
            f"{fmt(field(results, 'latency_ms', 'mean'), 2)} | "
            f"{fmt(field(results, 'latency_ms', 'p50'), 2)} | "
            f"{fmt(field(results, 'latency_ms', 'p99'), 2)} | " + " | ".join(cost_cells(results))
            + " |")
    return lines + [""]


def switches_section(args, kinds):
    """Where the broker's context switches are: per job, by thread name,
    for the C++ load generator at full load, at the latency rate and at idle
    pickup (medians over the rounds)."""
    runs = [("full load", kinds["bulk"].get("jobwire-cpp", [])),
            (f"{args.latency_rate:g} jobs/s", kinds["latency"].get("jobwire-cpp", [])),
            (f"{args.pickup_rate:g} jobs/s", kinds["pickup"].get("jobwire-cpp", []))]
    names = sorted({n for _, rs in runs for r in rs if r
                    for n in r.get("broker_switches_by_thread", {})})
    if not names:
        return []
    lines = ["## Where the broker's context switches are", "",
             "The broker's context switches per job by thread (/proc/<pid>/task/*/comm and "
             "status), jobwire-cpp runs, median over the rounds. `jw-loop` is the broker's "
             "event loop (Redis I/O and the job lifecycle); `jw-grpc-cq` polls the gRPC "
             "server's completion queue and runs every call event; `default-executo` and "
             "the other names are gRPC's own threads (its executor and timers).", "",
             "| thread | " + " | ".join(t for t, _ in runs) + " |",
             "|---|" + "---|" * len(runs)]

    def cell(rs, name):
        values = [r.get("broker_switches_by_thread", {}).get(name, 0.0) for r in rs if r]
        return f"{statistics.median(values):.2f}" if values else "–"

    totals = {name: sum(float(cell(rs, name)) if cell(rs, name) != "–" else 0 for _, rs in runs)
              for name in names}
    for name in sorted(names, key=lambda n: -totals[n]):
        lines.append(f"| {name} | " + " | ".join(cell(rs, name) for _, rs in runs) + " |")
    return lines + [""]


def run_wait_section(args, kinds):
    """Waiting for a CPU: per job, the time each process of a run spent
    runnable but not running (schedstat), medians over the rounds, for the
    systems of the latency runs at full load, the latency rate and idle
    pickup."""
    roles = ["producer", "worker", "broker", "redis"]
    loads = [("full load", "bulk"), (f"{args.latency_rate:g} jobs/s", "latency"),
             (f"{args.pickup_rate:g} jobs/s", "pickup")]
    rows = []
    for name in args.latency_systems:
        for label, kind in loads:
            rs = [r for r in kinds[kind].get(name, []) if r and "run_wait_us_per_job" in r]
            if not rs:
                continue
            cells = []
            for role in roles:
                values = [r["run_wait_us_per_job"][role] for r in rs
                          if role in r["run_wait_us_per_job"]]
                cells.append(fmt(values, 1) if values else "–")
            total = [sum(r["run_wait_us_per_job"].values()) for r in rs]
            rows.append(f"| {name} | {label} | " + " | ".join(cells) + f" | {fmt(total, 1)} |")
    if not rows:
        return []
    return ["## Waiting for a CPU", "",
            "Per job, the time each process's threads spent runnable but not running "
            "(/proc/<pid>/task/*/schedstat: waiting for one of the machine's cores, including "
            "the time an idle core takes to start a thread woken on it; children included; Redis: "
            "redis-server), over the same window as the costs above; threads that ended within "
            "the window are not counted. Every process of a run "
            "shares the 2 cores, so a process that wakes often or burns CPU delays the "
            "others: this is how much. Median (range) over the rounds.", "",
            "| system | load | producer µs/job | worker µs/job | broker µs/job | "
            "Redis µs/job | all µs/job |",
            "|---|---|---|---|---|---|---|"] + rows + [""]


def machine_line(kinds):
    loads = [r["load_average"] for k in kinds.values() for rs in k.values() for r in rs
             if r and "load_average" in r]
    steal = [r["steal_percent"] for k in kinds.values() for rs in k.values() for r in rs
             if r and "steal_percent" in r]
    return (f"Load average (1 min) at the start of the runs: {fmt(loads, 2)}; CPU steal during "
            f"the measured windows: {fmt(steal, 2)}%.")


def targets(args, kinds, scale, minutes):
    """(target, goal, measured, met) rows from this run, which took
    `minutes` so far."""
    bulk, lat, pickup = kinds["bulk"], kinds["latency"], kinds["pickup"]
    rows = []

    def row(name, goal, value, ok, unit=""):
        rows.append((name, goal, "not measured" if value is None else f"{value}{unit}",
                     "–" if value is None else ("yes" if ok else "**no**")))

    for title, num, den, goal in PAIRS:
        m = med(round_ratios(bulk, num, den))
        row(title, f"≥ {goal:g}", None if m is None else f"{m:.2f}", m is not None and m >= goal)
    node, bull = lat.get("jobwire-node", []), lat.get("bullmq", [])
    for q in ("p50", "p99"):
        a, b = med(field(node, "latency_ms", q)), med(field(bull, "latency_ms", q))
        row(f"Latency {q} at {args.latency_rate:g} jobs/s, Node client vs BullMQ",
            "no worse than BullMQ", None if a is None or b is None else
            f"{a:.2f} vs {b:.2f} ms", a is not None and b is not None and a <= b)
    p = med(field(pickup.get("jobwire-cpp", []), "latency_ms", "mean"))
    row("Idle pickup mean (C++ client)", "< 1 ms", None if p is None else f"{p:.2f}", p is not None
        and p < 1, " ms")
    cpp = bulk.get("jobwire-cpp", [])
    raw = med(field(bulk.get("redis-raw", []), "redis_cpu_us_per_job"))
    red = med(field(cpp, "redis_cpu_us_per_job"))
    row("Redis CPU per job at full load vs the raw ceiling's", "≤ 1.5x",
        None if raw is None or red is None else f"{red / raw:.2f}x ({red:.1f} vs {raw:.1f} µs)",
        raw is not None and red is not None and red <= 1.5 * raw)
    for title, results, goal_us, goal_sw in (
            ("full load", cpp, 25, 0.3),
            (f"{args.latency_rate:g} jobs/s", lat.get("jobwire-cpp", []), 60, 4)):
        cpu = med(field(results, "cpu_us_per_job", "broker"))
        sw = med(field(results, "broker_switches_per_job"))
        row(f"Broker CPU per job, {title}", f"≤ {goal_us} µs",
            None if cpu is None else f"{cpu:.1f}", cpu is not None and cpu <= goal_us, " µs")
        row(f"Broker context switches per job, {title}", f"≤ {goal_sw:g}",
            None if sw is None else f"{sw:.2f}", sw is not None and sw <= goal_sw)
    large, streams = scale.get("claim_large"), scale.get("idle_streams")
    row("Redis memory per pending 64-byte job", "< 250 bytes",
        None if not large else f"{large['bytes_per_job']:,.0f}",
        bool(large) and large["bytes_per_job"] < 250, " bytes")
    row("Broker RSS with 10,000 idle Claim streams", "< 100 MiB",
        None if not streams else f"{streams['rss_open_mib']:,.1f}",
        bool(streams) and streams["rss_open_mib"] < 100, " MiB")
    row("Benchmark run time (default run)", "< 10 min", f"{minutes:.1f}", minutes < 10, " min")
    return rows


def write_chart(path, bulk, lat, rate):
    """Throughput per system (median, range as error bar) and p99 latency at
    `rate` jobs/s offered."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 0.5 * max(len(bulk), 4) + 1.8))
    for ax, data, xlabel, title in (
            (ax1, {n: field(r, "jobs_per_s") for n, r in bulk.items()},
             "jobs/s (median, bar = range over rounds)", "Throughput, one producer and one "
             "worker process"),
            (ax2, {n: field(r, "latency_ms", "p99") for n, r in lat.items()},
             "p99 ms enqueue to handler (median, bar = range)", f"p99 latency at {rate:g} "
             "jobs/s offered")):
        names = list(data)[::-1]
        values = [[v for v in data[n] if v is not None] for n in names]
        meds = [statistics.median(v) if v else 0 for v in values]
        errs = [[m - min(v) if v else 0 for m, v in zip(meds, values)],
                [max(v) - m if v else 0 for m, v in zip(meds, values)]]
        colors = ["#1f77b4" if n.startswith("jobwire") else "#999999" for n in names]
        ax.barh(names, meds, xerr=errs, color=colors, capsize=3)
        for y, m in enumerate(meds):
            ax.text(m, y, f" {m:,.1f}" if m < 100 else f" {m:,.0f}", va="center", fontsize=8)
        ax.set_xlim(0, max(meds + [1]) * 1.3)
        ax.set_xlabel(xlabel)
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    args = parse_args()
    started = time.monotonic()
    # The Go client's benchmark program lives in the build folder only: build
    # it again when client/go or its own sources are newer (the Node client's
    # dist/ and the Python client's install are shared with the tests, so a
    # stale one is reported as not measured instead).
    if "jobwire-go" in args.systems and side_by_side.stale("jobwire-go"):
        subprocess.run([side_by_side.BUILT_CLIENTS["jobwire-go"][3]], check=False,
                       stdout=sys.stderr)
    kinds, errors = run_rounds(args)
    scale, scale_errors = ({}, {})
    if args.scale:
        scale, scale_errors = scale_checks.run(args)
    lines = ["# Performance", "",
             "Written by `bench/run_bench.py` (bench/README.md); the command line, machine "
             "and time are at the end.", ""]
    lines += bulk_section(args, kinds["bulk"])
    lines += latency_section(args, f"latency at {args.latency_rate:g} jobs/s", kinds["latency"],
                             args.latency_rate)
    lines += latency_section(args, f"idle pickup ({args.pickup_rate:g} jobs/s)",
                             kinds["pickup"], args.pickup_rate)
    lines += switches_section(args, kinds)
    lines += run_wait_section(args, kinds)
    if args.scale:
        lines += scale_checks.report(args, scale, scale_errors)
    rows = targets(args, kinds, scale, (time.monotonic() - started) / 60)
    lines += ["## Targets", "", "The performance issue's targets against this run.", "",
              "| target | goal | measured | met |", "|---|---|---|---|"]
    lines += [f"| {' | '.join(r)} |" for r in rows] + [""]
    if os.path.exists(NOTES):
        with open(NOTES) as f:
            lines += [f.read().rstrip(), ""]
    lines += ["Partitioned queues on a Redis Cluster are measured by "
              "`bench/cluster_partitions.py`: [performance-cluster.md](performance-cluster.md).",
              "",
              "What WaitJob and Subscribe cost a queue with and without waiters or subscribers "
              "is measured by `bench/observer_cost.py`: "
              "[performance-observers.md](performance-observers.md).",
              "",
              "What rate limits and max_active cost a queue, with and without them, is "
              "measured by `bench/limits_cost.py`: "
              "[performance-limits.md](performance-limits.md).",
              ""]
    if errors:
        lines += ["## Runs that failed", ""] + [f"- {k}: {v}" for k, v in errors.items()] + [""]
    chart = args.chart or (os.path.join(os.path.dirname(os.path.abspath(args.out)),
                                        "performance.png") if args.out else "")
    if chart:
        write_chart(chart, kinds["bulk"], kinds["latency"], args.latency_rate)
        rel = os.path.relpath(chart, os.path.dirname(os.path.abspath(args.out or ".")))
        lines += [f"![throughput and p99 latency per system]({rel})", ""]
    lines += [machine_line(kinds), "",
              f"Machine: {os.cpu_count()} cores, {platform.platform()}. Command: "
              f"`{' '.join(shlex.quote(a) for a in sys.argv)}`, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{(time.monotonic() - started) / 60:.1f} min.", ""]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    return 1 if errors or scale_errors else 0


if __name__ == "__main__":
    sys.exit(main())
