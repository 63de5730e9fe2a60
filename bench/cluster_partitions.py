#!/usr/bin/env python3
"""A partitioned queue on a local Redis Cluster against one partition
(bench/README.md, "Partitioned queues on a Redis Cluster").

Starts a Redis Cluster of --masters masters on loopback (no replicas, no
persistence) once; then, round by round, for each partition count P of
--partitions in turn: FLUSHALL on every master, a fresh broker in cluster
mode, `jobwire create-queue QUEUE --partitions P`, and one
`jobwire_bench --scenario=e2e` run with the same settings for every P.
Around the load generator it reads, per master, INFO cpu (used_cpu_sys +
used_cpu_user) and INFO commandstats (fcall calls), and the broker's
utime + stime from /proc. Prints (or with --out writes) a markdown report:
medians of the rounds with their range, and which master holds which
partition (CLUSTER KEYSLOT of each hash tag against CLUSTER NODES, checked
against the keys found on each master after the run).

  .venv/bin/python bench/cluster_partitions.py                 # after scripts/build.sh
  .venv/bin/python bench/cluster_partitions.py --bin-dir DIR --out report.md
"""

import argparse
import json
import os
import platform
import re
import resource
import secrets
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from bench_stack import cpu_seconds, free_port, redis_info, wait_listening

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BUILD = os.environ.get("JOBWIRE_BUILD_DIR", os.path.join(REPO, "build"))


def find_binary(bin_dir, sub, name):
    """`name` in `bin_dir`/`sub` (a build tree) or straight in `bin_dir`."""
    for path in (os.path.join(bin_dir, sub, name), os.path.join(bin_dir, name)):
        if os.access(path, os.X_OK):
            return path
    raise SystemExit(f"{name} not found in {bin_dir} (or {bin_dir}/{sub}): run scripts/build.sh "
                     "or pass --bin-dir")


def cli(port, *argv):
    return subprocess.run(["redis-cli", "-p", str(port), *argv], capture_output=True, text=True,
                          check=True, timeout=30).stdout


class Cluster:
    """`masters` redis-server processes with cluster-enabled, joined by
    `redis-cli --cluster create` with no replicas (as tests/redis_cluster.cc
    does, which also picks the bus ports). The nodes require a password made
    up for the run (every redis-cli here gets it from REDISCLI_AUTH): a
    client of some other program that reconnects to a port one of them took
    over (a killed node of another test's cluster, say) is refused instead
    of adding to the counts; INFO errorstats counts its NOAUTH refusals."""

    def __init__(self, masters, workdir):
        self.procs, self.ports = [], []
        self.password = secrets.token_hex(16)
        os.environ["REDISCLI_AUTH"] = self.password
        try:
            for i in range(masters):
                port, bus = free_port(), free_port()
                d = os.path.join(workdir, f"node-{i}")
                os.makedirs(d)
                proc = subprocess.Popen(
                    ["redis-server", "--port", str(port), "--cluster-port", str(bus),
                     "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                     "--requirepass", self.password, "--masterauth", self.password,
                     "--cluster-config-file", os.path.join(d, "nodes.conf"),
                     "--save", "", "--appendonly", "no", "--dir", d, "--loglevel", "warning",
                     "--logfile", os.path.join(d, "redis.log")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                self.procs.append(proc)
                self.ports.append(port)
                wait_listening(port, proc, "redis-server (cluster node)")
            subprocess.run(["redis-cli", "--cluster", "create",
                            *[f"127.0.0.1:{p}" for p in self.ports],
                            "--cluster-replicas", "0", "--cluster-yes"],
                           capture_output=True, text=True, check=True, timeout=60)
            self.wait_ok()
        except BaseException:
            self.close()
            raise

    def wait_ok(self, timeout=60.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            infos = [cli(p, "CLUSTER", "INFO") for p in self.ports]
            if all("cluster_state:ok" in i and "cluster_slots_ok:16384" in i for i in infos):
                return
            time.sleep(0.1)
        raise RuntimeError("cluster never reached cluster_state:ok")

    def masters(self):
        """[(port, [(first, last) slot ranges])] of the masters, by first slot."""
        out = []
        for line in cli(self.ports[0], "CLUSTER", "NODES").splitlines():
            fields = line.split()
            if len(fields) < 8 or "master" not in fields[2].split(","):
                continue
            port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
            ranges = []
            for r in fields[8:]:
                if r.startswith("["):  # a slot being migrated
                    continue
                first, _, last = r.partition("-")
                ranges.append((int(first), int(last or first)))
            out.append((port, sorted(ranges)))
        return sorted(out, key=lambda m: m[1][0] if m[1] else 16384)

    def url(self):
        return f"redis://:{self.password}@" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def close(self):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def partition_tags(queue, partitions):
    """The hash tags of a queue of `partitions` partitions (docs/redis-layout.md)."""
    return [queue] + [f"{queue}#{i}" for i in range(1, partitions)]


def master_of_slot(masters, slot):
    for port, ranges in masters:
        if any(first <= slot <= last for first, last in ranges):
            return port
    raise RuntimeError(f"slot {slot} has no master")


def tags_on(port):
    """The hash tags of the keys stored on the node at `port`."""
    out = subprocess.run(["redis-cli", "-p", str(port), "--scan"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return {m.group(1) for m in re.finditer(r"\{([^}]*)\}", out)}


def cpu(info):
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def refused(info):
    """Commands this node refused for want of the password (INFO errorstats)."""
    value = info.get("errorstat_NOAUTH", "count=0")
    return int(dict(f.split("=") for f in value.split(",")).get("count", 0))


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_run(args, bins, cluster, masters, partitions, workdir, label):
    """FLUSHALL, a fresh broker, the queue created with `partitions`, one e2e
    run; what was measured around it."""
    for port, _ in masters:
        cli(port, "FLUSHALL")
    listen = free_port()
    log_path = os.path.join(workdir, f"broker-{label}.log")
    log = open(log_path, "w")
    broker = subprocess.Popen(
        [bins["broker"], f"--listen=127.0.0.1:{listen}", "--redis_mode=cluster",
         f"--redis_url={cluster.url()}", f"--log_level={args.broker_log_level}",
         "--metrics_listen="],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_listening(listen, broker, "broker")
        addr = f"127.0.0.1:{listen}"
        subprocess.run([bins["cli"], "--addr", addr, "create-queue", args.queue,
                        "--partitions", str(partitions)],
                       capture_output=True, text=True, check=True, timeout=30)
        before = {port: redis_info(port) for port, _ in masters}
        broker0, load0 = cpu_seconds(broker.pid), children_cpu()
        cmd = [bins["load"], f"--addr={addr}", "--scenario=e2e", f"--queue={args.queue}",
               f"--jobs={args.jobs}", f"--producers={args.producers}", f"--batch={args.batch}",
               f"--workers={args.workers}", f"--concurrency={args.concurrency}"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        broker1, load1 = cpu_seconds(broker.pid), children_cpu()
        after = {port: redis_info(port) for port, _ in masters}
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): "
                               f"{out.stdout[-2000:]}{out.stderr[-2000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
        if broker.poll() is not None:
            raise RuntimeError(f"broker exited during the run ({broker.returncode}); {log_path}")
        jobs = result["jobs"]
        result["partitions"] = partitions
        result["broker_cpu_us_per_job"] = (broker1 - broker0) / jobs * 1e6
        result["load_cpu_us_per_job"] = (load1 - load0) / jobs * 1e6
        per_master = {}
        for port, _ in masters:
            (i0, c0), (i1, c1) = before[port], after[port]
            per_master[port] = {
                "redis_cpu_s": cpu(i1) - cpu(i0),
                "fcall": c1.get("fcall", 0) - c0.get("fcall", 0),
                "loads": c1.get("function|load", 0) - c0.get("function|load", 0),
                # not our redis-cli's AUTH and INFO
                "commands": sum(n - c0.get(name, 0) for name, n in c1.items()
                                if name not in ("auth", "info")),
                "tags_found": sorted(tags_on(port)),
                "refused_noauth": refused(i1) - refused(i0),
            }
        result["masters"] = per_master
    finally:
        broker.terminate()
        try:
            broker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait()
        log.close()
    result["broker_exit"] = broker.returncode
    result["broker_log"] = notable_log_lines(log_path)
    return result


def notable_log_lines(path):
    """The broker's log lines at warning or error, and any that are not its
    JSON lines (gRPC's or abseil's own, a crash)."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            try:
                level = json.loads(line).get("level", "")
            except ValueError:
                level = ""
            if level not in ("debug", "info"):
                out.append(line)
    return out


def fmt(values, digits=0, pct=False):
    scale = 100 if pct else 1
    med, lo, hi = (statistics.median(values) * scale, min(values) * scale, max(values) * scale)
    unit = "%" if pct else ""
    return f"{med:,.{digits}f}{unit} ({lo:,.{digits}f}–{hi:,.{digits}f})"


def report(args, masters, runs, seconds):
    names = {port: chr(ord("A") + i) for i, (port, _) in enumerate(masters)}
    slots = {port: ", ".join(f"{a}-{b}" for a, b in ranges) for port, ranges in masters}
    summary, detail, notes = [], [], []
    for p in args.partitions:
        rs = [r for r in runs if r["partitions"] == p]
        tags = partition_tags(args.queue, p)
        home = {t: master_of_slot(masters, int(cli(masters[0][0], "CLUSTER", "KEYSLOT",
                                                       "{" + t + "}").strip())) for t in tags}
        on = {port: [t for t in tags if home[t] == port] for port, _ in masters}
        for r in rs:  # the keys were where CLUSTER KEYSLOT said
            for port, _ in masters:
                found = set(r["masters"][port]["tags_found"]) & set(tags)
                if found != set(on[port]):
                    notes.append(f"P={p}: master {names[port]} held keys of {sorted(found)}, "
                                 f"expected {on[port]}")
        per_job = lambda key: [sum(m[key] for m in r["masters"].values()) / r["jobs"] for r in rs]
        cpu_share = lambda r, port: r["masters"][port]["redis_cpu_s"] / max(
            1e-9, sum(m["redis_cpu_s"] for m in r["masters"].values()))
        ev_share = lambda r, port: r["masters"][port]["fcall"] / max(
            1, sum(m["fcall"] for m in r["masters"].values()))
        spread = " / ".join(str(len(on[port])) for port, _ in masters)
        cpu_shares = " / ".join(f"{statistics.median(cpu_share(r, port) for r in rs):.0%}"
                                for port, _ in masters)
        ev_shares = " / ".join(f"{statistics.median(ev_share(r, port) for r in rs):.0%}"
                               for port, _ in masters)
        base = {r["round"]: r["broker_cpu_us_per_job"] for r in runs
                if r["partitions"] == args.partitions[0]}
        summary.append((str(p), fmt([r["jobs_per_s"] for r in rs]),
                        fmt([r["broker_cpu_us_per_job"] for r in rs]),
                        fmt([r["broker_cpu_us_per_job"] / base[r["round"]] for r in rs], 2),
                        fmt([r["load_cpu_us_per_job"] for r in rs]),
                        fmt([x * 1000 for x in per_job("redis_cpu_s")], 3),
                        fmt(per_job("fcall"), 2), fmt(per_job("commands"), 2),
                        spread, cpu_shares, ev_shares))
        for port, _ in masters:
            detail.append((str(p), f"{names[port]} ({slots[port]})",
                           f"{len(on[port])}: " + (", ".join(f"`{{{t}}}`" for t in on[port])
                                                   if on[port] else "none"),
                           f"{len(on[port]) / p:.0%}",
                           fmt([r["masters"][port]["redis_cpu_s"] / r["jobs"] * 1000 for r in rs],
                               3),
                           fmt([cpu_share(r, port) for r in rs], 0, pct=True),
                           fmt([ev_share(r, port) for r in rs], 0, pct=True)))
        loads = [sum(m["loads"] for m in r["masters"].values()) for r in rs]
        if any(loads):
            notes.append(f"P={p}: FUNCTION LOAD calls per run, round by round: {loads} (an "
                         "FCALL found no function library on its node, and the broker loaded "
                         "it there; FLUSHALL keeps libraries, so only a node's first run "
                         "loads)")
        for r in rs:
            foreign = sum(m["refused_noauth"] for m in r["masters"].values())
            if foreign:
                notes.append(f"P={p}, round {r['round'] + 1}: {foreign} command(s) from a "
                             "client without the password refused during the run (not counted)")
            if r["broker_log"]:
                notes.append(f"P={p}, round {r['round'] + 1}: the broker logged "
                             f"{len(r['broker_log'])} warning / error line(s), first: "
                             f"`{r['broker_log'][0][:300]}`")
            if r["broker_exit"] not in (0, -15):
                notes.append(f"P={p}: the broker exited {r['broker_exit']} on SIGTERM")
    m = len(masters)
    lines = [
        "## Partitioned queues on a Redis Cluster",
        "",
        f"A local Redis Cluster of {m} masters and **no replicas** (redis-server "
        f"{redis_version()}, no persistence, loopback, a password made up for the run), one "
        "broker in cluster mode (`--redis_mode=cluster`), fresh for every run, as is the data "
        f"(FLUSHALL on every master before it). Per run: `jobwire create-queue {args.queue} --partitions P`, then "
        f"`jobwire_bench --scenario=e2e` with {args.jobs:,} no-op jobs, {args.producers} "
        f"producers (EnqueueBatch of {args.batch}), {args.workers} Workers x concurrency "
        f"{args.concurrency}, the same for every P. {args.rounds} round(s), each running every P "
        f"in turn ({', '.join(map(str, args.partitions))}); median of the rounds (range in "
        "brackets). Measured around the load generator only (not the broker's start or the "
        "create-queue): the broker's utime + stime (/proc) and the load generator's (rusage) "
        "per job (and, since how busy the machine is moves it, its ratio to the first P's in the "
        "same round); per master, INFO used_cpu_sys + used_cpu_user and INFO commandstats "
        "(fcall calls; \"commands\" also counts the commands scripts run, and leaves out "
        "AUTH and INFO). The load generator, the broker and the Redis nodes share the "
        "machine's cores.",
        "",
        f"| P | jobs/s | broker CPU µs/job | broker CPU / job over P={args.partitions[0]}'s, "
        "same round | load generator CPU µs/job | Redis CPU s / 1,000 "
        "jobs (all masters) | fcall calls/job | Redis commands/job | partitions on "
        f"{' / '.join(names[p] for p, _ in masters)} | share of Redis CPU "
        f"{' / '.join(names[p] for p, _ in masters)} | share of fcall "
        f"{' / '.join(names[p] for p, _ in masters)} |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ] + [f"| {' | '.join(row)} |" for row in summary] + [
        "",
        "Per master: the partitions whose hash tag (`CLUSTER KEYSLOT`) falls in its slots "
        "(`CLUSTER NODES`), checked against the keys found on it after every run; "
        "\"even share\" is that count over P, the share each master would get if every "
        "partition cost the same. A master's Redis CPU includes its own background work "
        "(serverCron, the cluster bus), which is all an idle master shows.",
        "",
        "| P | master (slots) | partitions on it | even share | Redis CPU s / 1,000 jobs | "
        "share of Redis CPU | share of fcall calls |",
        "|---|---|---|---|---|---|---|",
    ] + [f"| {' | '.join(row)} |" for row in detail] + [""]
    if notes:
        lines += ["Notes from the runs:", ""] + [f"- {n}" for n in notes] + [""]
    else:
        lines += ["Every run: the keys were on the masters CLUSTER KEYSLOT said, no "
                  "library loads, no warning or error in the broker's log, clean exit on SIGTERM, "
                  "no command refused for want of the password.", ""]
    lines += [
        f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}, load "
        f"average before the runs {args.load_before}, after them {load_average()}. Command: "
        f"`{' '.join(shlex.quote(a) for a in sys.argv)}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds / 60:.1f} min.",
        "",
    ]
    return "\n".join(lines)


def load_average():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def redis_version():
    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"v=(\S+)", out)
    return m.group(1) if m else "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", default=BUILD,
                        help="where jobwire-broker, jobwire_bench and jobwire are: a build tree "
                             "(broker/, bench/, cli/) or one flat directory (default: "
                             "$JOBWIRE_BUILD_DIR or build/)")
    parser.add_argument("--masters", type=int, default=3)
    parser.add_argument("--partitions", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1, 3, 6, 12, 24], help="partition counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=7,
                        help="rounds; each runs every partition count once, in turn")
    parser.add_argument("--jobs", type=int, default=40000,
                        help="jobs per run (40,000: about 3 minutes in all on 2 shared cores)")
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--queue", default="bench")
    parser.add_argument("--broker-log-level", default="warning",
                        help="the broker's --log_level; the report lists its warning and "
                             "error lines either way")
    parser.add_argument("--keep", default="",
                        help="keep the broker logs and the runs' JSON in this directory")
    parser.add_argument("--out", default="", help="markdown report (default: stdout only)")
    args = parser.parse_args()
    bins = {"broker": find_binary(args.bin_dir, "broker", "jobwire-broker"),
            "load": find_binary(args.bin_dir, "bench", "jobwire_bench"),
            "cli": find_binary(args.bin_dir, "cli", "jobwire")}
    args.load_before = load_average()
    started = time.monotonic()
    runs = []
    with tempfile.TemporaryDirectory(prefix="jobwire-cluster-bench-") as workdir:
        cluster = Cluster(args.masters, workdir)
        try:
            masters = cluster.masters()
            if len(masters) != args.masters:
                raise RuntimeError(f"expected {args.masters} masters, CLUSTER NODES has {masters}")
            for rnd in range(args.rounds):
                for p in args.partitions:
                    r = one_run(args, bins, cluster, masters, p, workdir, f"r{rnd}-p{p}")
                    r["round"] = rnd
                    runs.append(r)
                    print(json.dumps(r), flush=True)
            text = report(args, masters, runs, time.monotonic() - started)
        finally:
            cluster.close()
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                for name in os.listdir(workdir):
                    if name.startswith("broker-"):
                        os.replace(os.path.join(workdir, name), os.path.join(args.keep, name))
                with open(os.path.join(args.keep, "runs.json"), "w") as f:
                    json.dump(runs, f, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
