#!/usr/bin/env python3
"""The jobwire benchmark driver (bench/README.md).

Starts a redis-server and the broker on loopback, runs each scenario of
bench/jobwire_bench (the C++ load generator) --runs times, and measures around
every run, from Redis' INFO: commands per job (commandstats delta) and Redis
CPU seconds per 1,000 jobs (used_cpu_sys + used_cpu_user delta); plus the
broker's peak RSS. Writes a markdown report with the median of the runs and
their range, the machine and the command line.

  .venv/bin/python bench/run_bench.py --out docs/performance.md
"""

import argparse
import json
import os
import platform
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early ({proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} not listening on {port}")


def redis_info(port):
    """INFO as a dict; commandstats as {cmd: calls}."""
    out = subprocess.run(["redis-cli", "-p", str(port), "INFO", "all"], capture_output=True,
                         text=True, check=True).stdout
    info, calls = {}, {}
    for line in out.splitlines():
        if ":" not in line or line.startswith("#"):
            continue
        key, value = line.split(":", 1)
        if key.startswith("cmdstat_"):
            fields = dict(f.split("=") for f in value.split(","))
            calls[key[len("cmdstat_"):]] = int(fields["calls"])
        else:
            info[key] = value
    return info, calls


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):  # peak resident set
                return int(line.split()[1]) / 1024
    return 0.0


class Stack:
    """redis-server + broker (none when `broker` is empty), fresh for each
    run so that every run starts empty."""

    def __init__(self, broker, workdir):
        self.redis_port = free_port()
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.redis_port, self.redis, "redis-server")
        self.broker = None
        if not broker:
            return
        self.port = free_port()
        self.broker = subprocess.Popen(
            [broker, f"--listen=127.0.0.1:{self.port}",
             f"--redis_url=redis://127.0.0.1:{self.redis_port}", "--log_level=warning",
             "--metrics_listen="],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.port, self.broker, "broker")

    def close(self):
        for proc in (self.broker, self.redis):
            if proc is None:
                continue
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def run_once(args, scenario, extra):
    with tempfile.TemporaryDirectory(prefix="jobwire-bench-") as workdir:
        ceiling = scenario == "ceiling"
        stack = Stack("" if ceiling else args.broker, workdir)
        try:
            info0, calls0 = redis_info(stack.redis_port)
            if ceiling:
                cmd = [args.ceiling, f"--redis_url=redis://127.0.0.1:{stack.redis_port}"] + extra
            else:
                cmd = [args.load, f"--addr=127.0.0.1:{stack.port}", f"--scenario={scenario}"] + extra
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if out.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} failed: {out.stdout}{out.stderr}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            info1, calls1 = redis_info(stack.redis_port)
            jobs = result["jobs"]
            commands = sum(calls1.values()) - sum(calls0.values()) - 1  # minus our INFO
            cpu = sum(float(info1[k]) - float(info0[k]) for k in ("used_cpu_sys", "used_cpu_user"))
            result["redis_commands_per_job"] = commands / jobs
            result["redis_cpu_s_per_1000_jobs"] = cpu / jobs * 1000
            result["broker_peak_rss_mib"] = 0.0 if ceiling else rss_mib(stack.broker.pid)
            return result
        finally:
            stack.close()


def median_range(values):
    return statistics.median(values), min(values), max(values)


def fmt(values, digits=0):
    med, lo, hi = median_range(values)
    return f"{med:,.{digits}f} ({lo:,.{digits}f}–{hi:,.{digits}f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default=os.path.join(REPO, "build", "broker", "jobwire-broker"))
    parser.add_argument("--load", default=os.path.join(REPO, "build", "bench", "jobwire_bench"))
    parser.add_argument("--ceiling", default=os.path.join(REPO, "build", "bench", "redis_ceiling"))
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="", help="markdown report (default: stdout only)")
    args = parser.parse_args()

    jobs = [f"--jobs={args.jobs}"]
    scenarios = [
        ("enqueue, one job per call (4 producers)", "enqueue", jobs),
        ("enqueue, batches of 100 (4 producers)", "enqueue_batch", jobs),
        ("drain (2 workers x 64)", "drain", jobs),
        ("end to end (4 producers, 2 workers x 64)", "e2e", jobs),
        ("Redis ceiling: the same scripts over hiredis, no broker", "ceiling", jobs),
    ]
    rows = []
    throughput = {}
    for title, scenario, extra in scenarios:
        results = [run_once(args, scenario, extra) for _ in range(args.runs)]
        print(json.dumps({"scenario": scenario, "runs": results}), flush=True)
        throughput[scenario] = statistics.median(r["jobs_per_s"] for r in results)
        rows.append((title, fmt([r["jobs_per_s"] for r in results]),
                     fmt([r["redis_commands_per_job"] for r in results], 2),
                     fmt([r["redis_cpu_s_per_1000_jobs"] for r in results], 3),
                     fmt([r["broker_peak_rss_mib"] for r in results], 1)))

    share = throughput["e2e"] / throughput["ceiling"]
    # Latency at 25% and 50% of the measured end-to-end maximum, open loop.
    latency_rows = []
    for share in (0.25, 0.5):
        rate = max(100, int(throughput["e2e"] * share))
        extra = [f"--rate={rate}", "--seconds=5"]
        results = [run_once(args, "latency", extra) for _ in range(args.runs)]
        print(json.dumps({"scenario": "latency", "rate": rate, "runs": results}), flush=True)
        latency_rows.append((f"{int(share * 100)}% of max ({rate:,} jobs/s)",
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
        f"End to end through the broker reaches {share:.0%} of the Redis ceiling (medians; the "
        "ceiling enqueues all jobs, then claims them 64 at a time and acks each).",
        "",
        "Enqueue-to-handler latency (ms), open loop for 5 s:",
        "",
        "| offered load | p50 | p99 | p99.9 |",
        "|---|---|---|---|",
    ] + [f"| {' | '.join(row)} |" for row in latency_rows] + [
        "",
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
