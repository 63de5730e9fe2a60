"""What WaitJob and Subscribe cost a queue: jobwire's C++ side-by-side run
(bench/README.md, "Side by side") against four brokers, alternating round by
round, and the report docs/performance-observers.md.

  base       the broker of --base, the last commit before WaitJob and queue
             events (built once into build/variant-observer-base/ from a git
             worktree: broker_builds.py)
  unchecked  the broker of HEAD with the scripts' events removed (events_open
             opens nothing: no listen mark read, no events ever;
             build/variant-observer-unchecked/): head against it is what
             the events cost a queue nobody watches
  head       this tree's broker (--broker), nobody waiting or subscribed
  elsewhere  this tree's broker with a subscriber (`jobwire watch`, every
             kind) and a waiter (`jobwire wait`) on another queue
  here       this tree's broker with a subscriber on the measured queue
             (`jobwire watch --json`, every kind, written to a file)

The question is issue 16's: does a queue with no waiters or subscribers pay
for them (head and elsewhere against unchecked, which differs from head by
the events alone: jobs/s and Redis commands per job)? base shows what
everything since the features' start costs; the "here" runs what a
subscriber costs when there is one.

  .venv/bin/python bench/observer_cost.py --out docs/performance-observers.md
"""

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time

import side_by_side
from broker_builds import build_broker
from variant_report import COMMON_COLUMNS, per_run_lines, variant_table
from side_by_side import BUILD

DEFAULT_BASE = "bfc85cc"  # the parent of 794b8f3 (WaitJob and queue events)
VARIANTS = ("base", "unchecked", "head", "elsewhere", "here")
CLI = os.path.join(BUILD, "cli", "jobwire")


# The line of lua/_lib.lua (events_open) that opens a script call's events;
# the "unchecked" build opens none, so its scripts never read the listen
# mark and never publish.
EVENTS_CHECK = ("  EVENTS = {jobs = jobs_key, channel = string.sub(jobs_key, 1, -5) .. 'events', "
                "list = {}}")
NO_EVENTS_CHECK = "  EVENTS = nil  -- observer_cost.py: the events removed"


class Observers:
    """The observer processes of one variant; after the run, what they saw."""

    def __init__(self, variant, workdir):
        self.variant = variant
        self.out = os.path.join(workdir, f"{variant}-watch.jsonl")
        self.procs = []

    def __call__(self, address):
        cli = [CLI, "--addr", address]
        if self.variant == "elsewhere":
            enq = subprocess.run(cli + ["enqueue", "other", "t", "--delay-ms", "3600000"],
                                 capture_output=True, text=True, check=True)
            job_id = enq.stdout.split()[-1] if enq.stdout.split() else ""
            self.procs.append(subprocess.Popen(cli + ["watch", "other"],
                                               stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL))
            self.procs.append(subprocess.Popen(cli + ["wait", "other", job_id],
                                               stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL))
        elif self.variant == "here":
            with open(self.out, "w") as f:
                self.procs.append(subprocess.Popen(cli + ["watch", "bench", "--json"], stdout=f,
                                                   stderr=subprocess.DEVNULL))
        time.sleep(1.0)  # the streams open before the producer's go
        return self.procs

    def check(self, run):
        """Why the observers did not observe the whole run (`run`: the
        figures of side_by_side.run_system), or None."""
        for argv in run.get("observers_ended", []):
            return f"{self.variant}: observer `{' '.join(argv[3:])}` ended during the run"
        return None

    def events(self):
        if self.variant != "here":
            return 0
        with open(self.out) as f:
            return sum(1 for _ in f)



def report(args, revs, runs, failures):
    lines = [
        "# What WaitJob and Subscribe cost a queue",
        "",
        f"Written by `bench/observer_cost.py` on {datetime.date.today().isoformat()}:",
        "",
        "```sh",
        f".venv/bin/python bench/observer_cost.py --rounds {args.rounds} --jobs {args.jobs} "
        f"--base {args.base}" + (f" --out {args.out}" if args.out else ""),
        "```",
        "",
        "jobwire's C++ side-by-side program (`build/bench/jobwire_side`: one producer process, "
        f"EnqueueBatch of {args.chunk}, one worker process, {args.concurrency} jobs in flight, "
        f"{args.jobs:,} jobs of 64 bytes per run; bench/README.md, \"Side by side\") against "
        "a fresh redis-server and broker per run, the variants alternating round by round "
        f"({args.rounds} rounds):",
        "",
        f"- **base**: the broker of `{revs['base']}`, the last commit before WaitJob and "
        "queue events;",
        f"- **unchecked**: the broker of `{revs['unchecked']}` (HEAD) with the scripts' events "
        "removed (events_open in lua/_lib.lua opens nothing: no listen mark is read and no "
        "event is ever published): what head would be without waiters and subscribers;",
        "- **head**: this tree's broker, nobody waiting or subscribed;",
        "- **elsewhere**: this tree's broker with `jobwire watch other` and `jobwire wait other "
        "<id>` open on another queue;",
        "- **here**: this tree's broker with `jobwire watch bench --json` (every event kind) on "
        "the measured queue.",
        "",
        "Medians with the range over the rounds; ratios are taken within a round, against "
        "that round's unchecked run: head / unchecked is what the events cost a "
        "queue nobody watches.",
        "",
    ]
    lines += variant_table(VARIANTS, runs, "unchecked", COMMON_COLUMNS + [
        ("events seen", lambda r: r["events"] if r["variant"] == "here" else None, 0)])
    lines += [""] + per_run_lines(runs, args.rounds)
    if failures:
        lines += ["", "Failed runs:", ""] + [f"- {f}" for f in failures]
    lines += [
        "",
        "What the scripts do for it: a script call publishes a queue's events only while "
        "the queue's listen mark (field `#listened` of its jobs hash, renewed by the brokers "
        "that follow the queue) is in the future, and reads the mark with the job records it "
        "reads anyway (the same HMGET; docs/redis-layout.md, \"Events\"); only an enqueue "
        "call, which reads no record, asks one HGET per call. A waiter or subscriber on one "
        "queue makes only that queue's scripts publish.",
        "",
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--base", default=DEFAULT_BASE)
    parser.add_argument("--broker", default=os.path.join(BUILD, "broker", "jobwire-broker"))
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    base_binary, base_rev = build_broker("observer-base", args.base)
    unchecked_binary, head_rev = build_broker(
        "observer-unchecked", "HEAD", patches=[("lua/_lib.lua", EVENTS_CHECK, NO_EVENTS_CHECK)])
    brokers = {"base": base_binary, "unchecked": unchecked_binary, "head": args.broker,
               "elsewhere": args.broker, "here": args.broker}
    runs, failures = [], []
    with tempfile.TemporaryDirectory(prefix="jobwire-observers-") as workdir:
        for rnd in range(args.rounds):
            for variant in VARIANTS:
                observers = Observers(variant, workdir)
                try:
                    r = side_by_side.run_system("jobwire-cpp", brokers[variant], args.jobs,
                                                chunk=args.chunk,
                                                concurrency=args.concurrency,
                                                observers=observers)
                except RuntimeError as exc:
                    failures.append(f"round {rnd + 1} {variant}: {exc}")
                    continue
                problem = observers.check(r)
                if problem:
                    failures.append(f"round {rnd + 1} {problem}")
                    continue
                r.update(variant=variant, round=rnd, events=observers.events())
                # Each job is enqueued, active and completed: a subscriber that
                # followed the run saw about 3 events a job (its last lines may
                # die unflushed with it).
                if variant == "here" and r["events"] < 2.9 * args.jobs:
                    failures.append(f"round {rnd + 1} here: the subscriber printed "
                                    f"{r['events']} events for {args.jobs} jobs")
                    continue
                runs.append(r)
                print(f"round {rnd + 1} {variant}: {r['jobs_per_s']:,.0f} jobs/s, "
                      f"{r['redis_commands_per_job']:.3f} Redis commands/job", flush=True)
    text = report(args, {"base": base_rev, "unchecked": head_rev}, runs, failures)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
