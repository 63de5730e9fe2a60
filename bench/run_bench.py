#!/usr/bin/env python3
"""The jobwire benchmark driver (bench/README.md).

Starts a redis-server and the broker on loopback, runs each scenario of
bench/jobwire_bench (the C++ load generator) --runs times, and measures around
every run, from Redis' INFO: commands per job (commandstats delta) and Redis
CPU seconds per 1,000 jobs (used_cpu_sys + used_cpu_user delta); plus the
broker's peak RSS. Writes a markdown report with the median of the runs and
their range, the machine and the command line. Then the scale checks
(bench/scale_checks.py; --no-scale skips them) and, with --peers, the peers.

  .venv/bin/python bench/run_bench.py --out docs/performance.md
"""

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import scale_checks
from bench_stack import Stack, redis_info, rss_mib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def measured(broker, make_cmd, timeout=600):
    """Runs the command `make_cmd(stack)` once against a fresh Redis (and
    broker, unless `broker` is empty) and returns its JSON line plus what
    Redis' INFO says around it: commands per job (less the program's own
    `instrumentation_commands`, if it reports any) and CPU s per 1,000 jobs."""
    with tempfile.TemporaryDirectory(prefix="jobwire-bench-") as workdir:
        stack = Stack(broker, workdir)
        try:
            info0, calls0 = redis_info(stack.redis_port)
            cmd = make_cmd(stack)
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            if out.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): "
                                   f"{out.stdout[-2000:]}{out.stderr[-2000:]}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            info1, calls1 = redis_info(stack.redis_port)
            jobs = result["jobs"]
            commands = sum(calls1.values()) - sum(calls0.values()) - 1  # minus our INFO
            commands -= result.get("instrumentation_commands", 0)
            cpu = sum(float(info1[k]) - float(info0[k]) for k in ("used_cpu_sys", "used_cpu_user"))
            result["redis_commands_per_job"] = commands / jobs
            result["redis_cpu_s_per_1000_jobs"] = cpu / jobs * 1000
            result["broker_peak_rss_mib"] = rss_mib(stack.broker.pid) if stack.broker else 0.0
            return result
        finally:
            stack.close()


def run_once(args, scenario, extra):
    if scenario == "ceiling":
        return measured("", lambda stack: [
            args.ceiling, f"--redis_url=redis://127.0.0.1:{stack.redis_port}"] + extra)
    return measured(args.broker, lambda stack: [
        args.load, f"--addr=127.0.0.1:{stack.port}", f"--scenario={scenario}"] + extra)


def median_range(values):
    return statistics.median(values), min(values), max(values)


def fmt(values, digits=0):
    med, lo, hi = median_range(values)
    return f"{med:,.{digits}f} ({lo:,.{digits}f}–{hi:,.{digits}f})"


PEERS_DIR = os.path.join(HERE, "peers")
CLIENTS_DIR = os.path.join(HERE, "clients")


def has_module(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None


def other_programs(args):
    """The peers (bench/peers/) and jobwire's Python and Node.js clients
    (bench/clients/) end to end: (system, needs the broker, argv for a Stack,
    why it cannot run or None). Each program prints one JSON line; with
    --rate R --seconds S appended it runs open loop and reports latency."""
    py = sys.executable

    def url(stack):
        return f"redis://127.0.0.1:{stack.redis_port}/0"

    setup = "run bench/peers/setup.sh"
    return [
        ("jobwire (python client)", True,
         lambda st: [py, os.path.join(CLIENTS_DIR, "e2e.py"), f"--addr=127.0.0.1:{st.port}"],
         None if has_module("jobwire") else "jobwire not installed: run client/python/setup.sh"),
        ("jobwire (node client)", True,
         lambda st: ["node", os.path.join(CLIENTS_DIR, "e2e.mjs"), f"--addr=127.0.0.1:{st.port}"],
         None if os.path.exists(os.path.join(REPO, "client", "node", "dist", "index.js"))
         else "client/node/dist missing: run client/node/build.sh"),
        ("BullMQ", False,
         lambda st: ["node", os.path.join(PEERS_DIR, "bullmq", "bench.mjs"), f"--redis-url={url(st)}"],
         None if os.path.isdir(os.path.join(PEERS_DIR, "bullmq", "node_modules", "bullmq"))
         else setup),
        ("asynq", False,
         lambda st: [args.asynq, f"--redis-url={url(st)}"],
         None if os.access(args.asynq, os.X_OK) else f"{args.asynq} missing: {setup}"),
        # asynq's fetcher sleeps TaskCheckInterval (default 1 s) whenever the
        # queue is empty: its documented knob, at a cost in idle polling.
        ("asynq (TaskCheckInterval 10ms)", False,
         lambda st: [args.asynq, f"--redis-url={url(st)}", "--task-check-interval=10ms"],
         None if os.access(args.asynq, os.X_OK) else f"{args.asynq} missing: {setup}"),
        ("Celery", False,
         lambda st: [py, os.path.join(PEERS_DIR, "celery_bench.py"), f"--redis-url={url(st)}"],
         None if has_module("celery") else setup),
        ("RQ", False,
         lambda st: [py, os.path.join(PEERS_DIR, "rq_bench.py"), f"--redis-url={url(st)}"],
         None if has_module("rq") else setup),
    ]


def write_chart(path, systems, rate):
    """Per system, throughput end to end (median, range as error bar) and
    p99 enqueue-to-handler latency at `rate` jobs/s offered, open loop.
    `systems` is [(name, [jobs/s per run], [p99 ms per run] or [])]."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = systems[::-1]  # barh draws bottom-up
    fig, (ax1, ax2) = plt.subplots(1, 2, sharey=True,
                                   figsize=(12, 0.55 * max(len(rows), 4) + 1.8))
    names = [name for name, _, _ in rows]
    colors = ["#1f77b4" if n.startswith("jobwire") else "#999999" for n in names]

    def bars(ax, values, fmt_value):
        meds = [statistics.median(v) if v else 0.0 for v in values]
        errs = [[m - min(v) if v else 0 for m, v in zip(meds, values)],
                [max(v) - m if v else 0 for m, v in zip(meds, values)]]
        ax.barh(names, meds, xerr=errs, color=colors, capsize=3)
        for y, (m, v) in enumerate(zip(meds, values)):
            ax.text(m, y, f" {fmt_value(m)}" if v else " not measured", va="center", fontsize=8)
        return meds

    meds = bars(ax1, [v for _, v, _ in rows], lambda m: f"{m:,.0f}")
    ax1.set_xlim(0, max(meds + [1]) * 1.3)
    ax1.set_xlabel("jobs/s, producers and workers at once (median, bar = range)")
    ax1.set_title("Throughput end to end")
    lat = [v for _, _, v in rows]
    bars(ax2, lat, lambda m: f"{m:,.1f} ms")
    ax2.set_xscale("log")
    measured_lat = [x for v in lat for x in v]
    if measured_lat:
        ax2.set_xlim(min(measured_lat) / 2, max(measured_lat) * 8)
    ax2.set_xlabel("p99 enqueue-to-handler ms, log scale (median, bar = range)")
    ax2.set_title(f"p99 latency at {rate:,.0f} jobs/s offered, open loop")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# Why a target is missed and what would close it, from profiles and the
# measurements above (perf record of the broker under e2e; docs/redis-layout.md).
# Printed only for the targets a run misses.
MISSED_WHY = {
    "bullmq": (
        "Throughput against BullMQ and the Redis ceiling: on 2 cores the load generator, "
        "the broker and Redis share the CPU. Per job, around 40,000-job `e2e` runs "
        "(/proc CPU times, 2026-12-01, after the Worker stopped waiting for its acks' "
        "answers): the load generator (4 producer threads, 2 Workers x 64 handler threads) "
        "~39 µs (~66 µs before), the broker ~47 µs, Redis ~69 µs, so ~155 µs of CPU per "
        "job, about 12,900 jobs/s with both cores busy all the time; those runs made "
        "8,000-10,000 jobs/s, so part of the time the 128 jobs in flight wait on round "
        "trips (claim.lua, the stream message, the handler, the AckBatch call, ack.lua) "
        "rather than on the CPU. perf puts ~20% of the broker's CPU in finish_task_switch: "
        "each RPC hops from a gRPC thread to the broker's Redis event loop thread and back. "
        "The gRPC side is already batched: producers send EnqueueBatch (one enqueue.lua per "
        "batch), Workers coalesce acks into AckBatch (one ack.lua per batch), and a Claim "
        "stream message carries every job claimed since the previous one. Redis' share is "
        "the scripts: about 10.5 commands per job, and commandstats show the Lua calls "
        "costing about as much again as the commands they run (the job hash is written "
        "with 13 fields and read back whole for the claim). In this run the ceiling for "
        "the same scripts is {ceiling_vs_bullmq:.1f}x BullMQ, so 3x BullMQ would need most "
        "of the ceiling. What would close the gap further: a compact job hash "
        "(default-valued fields omitted, short names: fewer fields to write and to "
        "convert, see the memory item), and Redis I/O from the broker's gRPC threads (no "
        "hand-off per RPC)."),
    "ceiling": None,  # same cause as "bullmq"
    "p99": (
        "p99 latency at 50% load: the load is one Enqueue call per job, open loop, at half "
        "of the one-job-per-call end-to-end maximum (`e2e_single`). Every job takes the idle "
        "path described below (about 2 ms of hops between sleeping threads), and at this "
        "rate the 2 cores are shared by the producer's and the Workers' threads, the "
        "broker's gRPC and Redis threads and Redis, so a job that arrives while they are "
        "busy waits its turn at each hop: the tail is queueing for the CPU. What would close "
        "it is what closes the idle pickup, fewer hops, plus less CPU per job (about 155 µs "
        "in 40,000-job `e2e` runs on 2026-12-01: the load generator ~39 µs, the broker "
        "~47 µs, Redis ~69 µs)."),
    "pickup": (
        "Idle pickup: where an idle job's time goes, measured 2026-12-01 (60 jobs at 20/s, "
        "Redis MONITOR timestamps against the handler's wall clock; MONITOR slows each "
        "Redis step a little): from the Enqueue call to enqueue.lua starting in Redis "
        "~1.1 ms (the producer's gRPC call, the broker's gRPC thread, the hand-off to the "
        "broker's Redis event loop thread, Redis), enqueue.lua to its PUBLISH ~0.2 ms, "
        "PUBLISH to claim.lua starting ~0.45 ms (the broker's event loop wakes on the "
        "notification and sends the claim), claim.lua to the handler starting ~0.5 ms (the "
        "Claim stream message, the Worker's stream reader, a handler thread). Each step "
        "wakes a sleeping thread; on this VM a Redis round trip alone takes 0.13 ms "
        "(redis-benchmark -c 1 PING) and one sequential Enqueue 0.58 ms. What would close "
        "it: Redis I/O from the gRPC threads (no hand-off to the event loop thread), a claim "
        "sent right behind the enqueue when this broker has a waiting stream (saves the "
        "PUBLISH round trip; the notification it makes redundant must then be told apart "
        "from other brokers', and a script that falls back from EVALSHA to EVAL must not "
        "let the claim overtake it), and a Worker that runs short handlers on the thread "
        "that reads the stream."),
    "memory": (
        "Redis memory per job: MEMORY USAGE of a pending job's key with this payload is "
        "328 bytes (its name, and a listpack of 13 fields with long names and the "
        "defaults written out: priority 0, an empty idempotency key, the default "
        "backoff); the other ~126 bytes are the job's member in the ready zset (skiplist "
        "node and dict entry). With default-valued fields omitted the key measures 200 "
        "bytes with today's names (type, payload, created_at), 184 with one-letter names "
        "and the state kept, 168 with the state implied: a job of about 326, 310 or 294 "
        "bytes. Only the last is under 300, barely; it is a new key layout "
        "(docs/redis-layout.md, version 2) and a change to every script. Well under 300 "
        "needs no key per job at all (the jobs of a queue as fields of one hash), a "
        "different layout again. This payload (~60 bytes) stays under Redis' default "
        "hash-max-listpack-value of 64; a longer one turns the job hash into a hashtable "
        "(1,352 bytes for a 200-byte payload) unless Redis runs with 1024, as the embedded "
        "and the Helm chart's Redis do (496 bytes; docs/redis-layout.md)."),
    "rss": (
        "Broker RSS with idle Claim streams: about 19 KiB per stream. jemalloc's heap "
        "profile of the broker (jeprof, 10,000 streams) puts ~10.5 KiB per stream in the "
        "call arena gRPC core creates for each incoming stream "
        "(grpc_core::Arena::CreateWithAlloc from FilterStackCall::Create: the HTTP/2 "
        "stream, every filter's call data, the metadata batches), ~2.3 KiB in arena "
        "growth and ~1.4 KiB in the broker's own reactor and session; the rest is "
        "allocator overhead. gRPC 1.51 has no channel argument that shrinks the call "
        "arena. Closing it needs fewer streams (a worker process needs one stream for "
        "all its queues and all its concurrency; the API allows it) or a lighter "
        "transport than a gRPC call per stream."),
    "runtime": (
        "Benchmark run time: the peers dominate (Celery and RQ process a few hundred jobs/s "
        "on this machine, so 3 runs of each take minutes, plus a 3 s latency run per run "
        "and system); --no-peers or fewer --jobs shortens it."),
}


def targets_section(throughput, ceiling_share, p99_at, peer_medians, scale, seconds):
    """The report's "Targets" section: each target, measured, met; why for misses."""
    rows, missed = [], []

    def add(name, target, measured, ok, key):
        rows.append((name, target, measured, "yes" if ok else "**no**"))
        if not ok and MISSED_WHY.get(key) and key not in missed:
            missed.append(key)

    e2e = throughput["e2e"]
    if "BullMQ" in peer_medians:
        ratio = e2e / peer_medians["BullMQ"]
        add("End-to-end throughput vs BullMQ", "≥ 3×", f"{ratio:.2f}× ({e2e:,.0f} vs "
            f"{peer_medians['BullMQ']:,.0f} jobs/s; {3 * peer_medians['BullMQ'] - e2e:,.0f} "
            "jobs/s short)" if ratio < 3 else f"{ratio:.2f}×", ratio >= 3, "bullmq")
    if peer_medians:
        best = max(peer_medians, key=peer_medians.get)
        add("Ahead of every peer", f"> {best}", f"{e2e:,.0f} vs {peer_medians[best]:,.0f} "
            "jobs/s", e2e > peer_medians[best], "bullmq")
    add("Share of the Redis ceiling", "≥ 50%", f"{ceiling_share:.0%}", ceiling_share >= 0.5,
        "bullmq")
    if 0.5 in p99_at:
        add("p99 enqueue-to-handler at 50% of max", "< 2 ms", f"{p99_at[0.5]:.2f} ms",
            p99_at[0.5] < 2, "p99")
    pickup = scale.get("idle_pickup")
    if pickup:
        add("Idle worker receives a job", "mean < 1 ms", f"{pickup['mean_ms']:.2f} ms",
            pickup["mean_ms"] < 1, "pickup")
    idle = scale.get("idle_workers")
    if idle:
        add("Idle Redis commands per queue", "< 5/s", f"{idle['commands_per_s']:.1f}/s",
            idle["commands_per_s"] < 5, "idle")
        add("Idle broker CPU", "< 1%", f"{idle['broker_cpu_percent']:.2f}%",
            idle["broker_cpu_percent"] < 1, "idle")
    large = scale.get("claim_large")
    if large:
        add("Redis memory per pending 64-byte job", "< 300 bytes",
            f"{large['bytes_per_job']:,.0f} bytes", large["bytes_per_job"] < 300, "memory")
    streams = scale.get("idle_streams")
    if streams:
        add(f"Broker RSS with {streams['streams']:,} Claim streams", "< 100 MiB",
            f"{streams['rss_open_mib']:,.1f} MiB", streams["rss_open_mib"] < 100, "rss")
    add("Benchmark run time", "< 10 min", f"{seconds / 60:.1f} min (to this line)",
        seconds < 600, "runtime")
    lines = [
        "## Targets",
        "",
        "The performance issue's targets against this run's medians (scale checks: one run).",
        "",
        "| target | goal | measured | met |",
        "|---|---|---|---|",
    ] + [f"| {' | '.join(r)} |" for r in rows] + [""]
    if missed:
        bullmq = peer_medians.get("BullMQ")
        values = {"ceiling_vs_bullmq": throughput["ceiling"] / bullmq if bullmq else 0.0}
        lines += ["Why the missed ones are missed, and what would close them:", ""]
        lines += [f"- {MISSED_WHY[k].format(**values)}" for k in missed] + [""]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default=os.path.join(REPO, "build", "broker", "jobwire-broker"))
    parser.add_argument("--load", default=os.path.join(REPO, "build", "bench", "jobwire_bench"))
    parser.add_argument("--ceiling", default=os.path.join(REPO, "build", "bench", "redis_ceiling"))
    build_dir = os.environ.get("JOBWIRE_BUILD_DIR", os.path.join(REPO, "build"))
    parser.add_argument("--asynq", default=os.path.join(build_dir, "bench-peers", "asynq-bench"),
                        help="the asynq peer (bench/peers/setup.sh builds it)")
    parser.add_argument("--jobs", type=int, default=5000,
                        help="jobs per run, the same for every system (5,000 keeps the whole "
                             "benchmark under 10 minutes on 2 shared cores)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True,
                        help="also run the peers (bench/peers/) and the Python and Node.js "
                             "clients end to end (--no-peers: jobwire_bench only)")
    parser.add_argument("--peer-rate", type=float, default=200,
                        help="with --peers: the offered jobs/s, the same for every system, of the "
                             "open-loop latency runs (0: none)")
    parser.add_argument("--peer-seconds", type=float, default=3,
                        help="with --peers: how long each latency run offers load")
    scale_checks.add_arguments(parser)
    parser.add_argument("--out", default="", help="markdown report (default: stdout only)")
    parser.add_argument("--chart", default="",
                        help="PNG chart (default: performance.png next to --out; none without "
                             "--out); needs --peers and matplotlib")
    args = parser.parse_args()
    started = time.monotonic()

    jobs = [f"--jobs={args.jobs}"]
    scenarios = [
        ("enqueue, one job per call (4 producers)", "enqueue", jobs),
        ("enqueue, batches of 100 (4 producers)", "enqueue_batch", jobs),
        ("drain (2 workers x 64)", "drain", jobs),
        ("end to end (4 producers, 2 workers x 64)", "e2e", jobs),
        ("end to end, one job per Enqueue call (16 producers, 2 workers x 64)", "e2e_single",
         jobs + ["--producers=16"]),
        ("Redis ceiling: the same scripts over hiredis, no broker", "ceiling", jobs),
    ]
    rows = []
    throughput = {}
    runs_of = {}
    for title, scenario, extra in scenarios:
        results = [run_once(args, scenario, extra) for _ in range(args.runs)]
        print(json.dumps({"scenario": scenario, "runs": results}), flush=True)
        runs_of[scenario] = results
        throughput[scenario] = statistics.median(r["jobs_per_s"] for r in results)
        rows.append((title, fmt([r["jobs_per_s"] for r in results]),
                     fmt([r["redis_commands_per_job"] for r in results], 2),
                     fmt([r["redis_cpu_s_per_1000_jobs"] for r in results], 3),
                     fmt([r["broker_peak_rss_mib"] for r in results], 1)))

    ceiling_share = throughput["e2e"] / throughput["ceiling"]
    # Latency at 25% and 50% of the measured end-to-end maximum for the same
    # kind of load (one job per Enqueue call), open loop.
    latency_rows = []
    p99_at = {}
    for share in (0.25, 0.5):
        rate = max(100, int(throughput["e2e_single"] * share))
        extra = [f"--rate={rate}", "--seconds=5"]
        results = [run_once(args, "latency", extra) for _ in range(args.runs)]
        print(json.dumps({"scenario": "latency", "rate": rate, "runs": results}), flush=True)
        p99_at[share] = statistics.median(r["p99_ms"] for r in results)
        latency_rows.append((f"{int(share * 100)}% of max ({rate:,} jobs/s; sent "
                             f"{fmt([r['sent_per_s'] for r in results])})",
                             fmt([r["p50_ms"] for r in results], 2),
                             fmt([r["p99_ms"] for r in results], 2),
                             fmt([r["p999_ms"] for r in results], 2)))

    lines = [
        "## jobwire scenarios",
        "",
        f"Median of {args.runs} runs (range in brackets), {args.jobs:,} no-op jobs with a "
        "~64-byte JSON payload per run, one redis-server (no persistence) and one broker on "
        "loopback, a fresh Redis and broker for every run.",
        "",
        "| scenario | jobs/s | Redis commands/job | Redis CPU s / 1,000 jobs | broker peak RSS MiB |",
        "|---|---|---|---|---|",
    ] + [f"| {' | '.join(row)} |" for row in rows] + [
        "",
        f"End to end through the broker reaches {ceiling_share:.0%} of the Redis ceiling (medians; "
        "the ceiling enqueues all jobs, 100 per enqueue.lua call like the producers' "
        "EnqueueBatch, then claims them 64 at a time and acks each claimed batch with one "
        "ack.lua call).",
        "",
        "Enqueue-to-handler latency (ms) at 25% and 50% of the one-job-per-call end-to-end "
        "maximum above: for 5 s one Enqueue call per job starts at its scheduled time on the "
        "C++ async stub, whether or not earlier calls have answered (open loop); a job's "
        "latency runs from its call's scheduled start to its handler, so a late start counts. "
        "Sent: the calls started per second.",
        "",
        "| offered load | p50 | p99 | p99.9 |",
        "|---|---|---|---|",
    ] + [f"| {' | '.join(row)} |" for row in latency_rows] + [""]

    status = 0
    scale_results = {}
    peer_medians = {}
    if args.scale:
        scale_results, errors = scale_checks.run(args)
        lines += scale_checks.report(args, scale_results, errors)
        status = 1 if errors else 0
    if args.peers:
        base = throughput["e2e"]
        rate = args.peer_rate
        lat_args = [f"--rate={rate:g}", f"--seconds={args.peer_seconds:g}"]

        def lat_cell(results):
            if not results:
                return "not measured"
            return (f"{fmt([r['p50_ms'] for r in results], 2)} / "
                    f"{fmt([r['p99_ms'] for r in results], 2)}")

        e2e = runs_of["e2e"]
        lat = []
        if rate > 0:
            lat = [run_once(args, "latency", lat_args) for _ in range(args.runs)]
            print(json.dumps({"system": "jobwire (C++ client)", "latency_runs": lat}), flush=True)
        peer_rows = [("jobwire (C++ client, `e2e` above)", "jobwire_bench",
                      fmt([r["jobs_per_s"] for r in e2e]), "1.00×",
                      fmt([r["redis_commands_per_job"] for r in e2e], 2),
                      fmt([r["redis_cpu_s_per_1000_jobs"] for r in e2e], 3), lat_cell(lat),
                      "EnqueueBatch x100 from 4 producer threads; 2 Workers x concurrency 64")]
        chart = [("jobwire (C++ client)", [r["jobs_per_s"] for r in e2e],
                  [r["p99_ms"] for r in lat])]
        for system, needs_broker, make_cmd, missing in other_programs(args):
            if missing:
                print(f"{system}: not run: {missing}", file=sys.stderr, flush=True)
                peer_rows.append((system, "", f"not run: {missing}", "", "", "", "", ""))
                continue
            broker = args.broker if needs_broker else ""
            try:
                results = [measured(broker, lambda st: make_cmd(st) + [f"--jobs={args.jobs}"])
                           for _ in range(args.runs)]
                lat = [measured(broker, lambda st: make_cmd(st) + lat_args)
                       for _ in range(args.runs if rate > 0 else 0)]
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                print(f"{system}: failed: {exc}", file=sys.stderr, flush=True)
                peer_rows.append((system, "", "failed: " + str(exc).splitlines()[0][:120],
                                  "", "", "", "", ""))
                status = 1
                continue
            print(json.dumps({"system": system, "runs": results, "latency_runs": lat}), flush=True)
            rates = [r["jobs_per_s"] for r in results]
            if not system.startswith("jobwire"):
                peer_medians[system] = statistics.median(rates)
            chart.append((system, rates, [r["p99_ms"] for r in lat]))
            peer_rows.append((system, results[0].get("version", ""), fmt(rates),
                              f"{statistics.median(rates) / base:.2f}×",
                              fmt([r["redis_commands_per_job"] for r in results], 2),
                              fmt([r["redis_cpu_s_per_1000_jobs"] for r in results], 3),
                              lat_cell(lat), results[0].get("settings", "")))
        lat_head = f"p50 / p99 ms at {rate:,.0f} jobs/s" if rate > 0 else "p50 / p99 ms"
        lines += [
            "## jobwire, its clients and its peers end to end",
            "",
            f"Producers and workers at once, jobs/s from the first enqueue to the last job done, "
            f"{args.jobs:,} no-op jobs with a ~64-byte JSON payload, median of {args.runs} runs "
            "(range in brackets), each run against a fresh redis-server on loopback (and a fresh "
            "broker for jobwire). Redis commands and CPU are INFO commandstats / cpu deltas "
            "around the whole program, start-up and shut-down included. × jobwire: median "
            "jobs/s over jobwire's `e2e` median. Latency: enqueue-to-handler, one producer "
            f"offering the same {rate:,.0f} jobs/s to every system for {args.peer_seconds:g} s, "
            "one enqueue per job, open loop. Settings, versions and how completion is counted: "
            "bench/README.md.",
            "",
            f"| system | version | jobs/s | × jobwire | Redis commands/job | "
            f"Redis CPU s / 1,000 jobs | {lat_head} | settings |",
            "|---|---|---|---|---|---|---|---|",
        ] + [f"| {' | '.join(row)} |" for row in peer_rows] + [""]
        chart_path = args.chart or (
            os.path.join(os.path.dirname(os.path.abspath(args.out)), "performance.png")
            if args.out else "")
        if chart_path:
            write_chart(chart_path, chart, rate)
            rel = os.path.relpath(chart_path, os.path.dirname(os.path.abspath(args.out or ".")))
            lines += [f"![throughput and p99 latency per system]({rel})", ""]
            print(f"chart: {chart_path}", file=sys.stderr)

    lines += targets_section(throughput, ceiling_share, p99_at, peer_medians, scale_results,
                             time.monotonic() - started)
    lines += [
        f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}. "
        f"Command: `{' '.join(shlex.quote(a) for a in sys.argv)}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    return status


if __name__ == "__main__":
    sys.exit(main())
