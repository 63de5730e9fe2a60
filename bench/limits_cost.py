"""What queue limits cost: jobwire's C++ side-by-side run (bench/README.md,
"Side by side") against one queue set up five ways, alternating round by
round, and the report docs/performance-limits.md.

  unlimited  the broker of HEAD with the limits' read removed from claim.lua
             (claim_ready reads only the paused flag: GET instead of its MGET
             of paused, rate_limit, max_active, key_limit and key_rate_limit; built into
             build/variant-limits-unlimited/ by broker_builds.py): what head
             would be if limits did not exist
  head       this tree's broker, the queue without limits
  rate-open  a rate limit that never binds (1,000,000 jobs/s, burst 1,000,000):
             the token bucket read and written on every claim
  max-open   max_active 1,000,000 (never binds): the active count read on
             every claim
  key-open   max_active_per_key 1,000,000 (never binds) and every job with
             one of 100 concurrency keys: each run counted for its key at
             the claim and the settle (and a look for a parked job of its key)
  keyrate-open a rate limit per key that never binds (1,000,000 jobs/s per
             key) and every job with one of 100 concurrency keys: each
             claim reads and writes the buckets of the keys it meets
  rate-bound a rate limit of --bound-rate jobs/s (burst the same) that binds:
             jobs/s follows it, and the costs per job show what handing jobs
             out in token-sized bites costs (streams woken by the queue timer
             when tokens come back)

The questions are issue 17's: does a queue without limits pay for their
existence (head against unlimited: jobs/s, Redis commands and CPU per job),
and what does a rate-limited queue cost per job?

  .venv/bin/python bench/limits_cost.py --out docs/performance-limits.md
"""

import argparse
import datetime
import os
import subprocess
import sys

import side_by_side
from broker_builds import build_broker
from variant_report import COMMON_COLUMNS, per_run_lines, variant_table
from side_by_side import BUILD

VARIANTS = ("unlimited", "head", "rate-open", "max-open", "key-open", "keyrate-open",
            "rate-bound")
# The variants whose jobs carry concurrency keys.
KEYED = ("key-open", "keyrate-open")
# Concurrency keys of the key-open variant's jobs (jobwire_side --concurrency_keys).
KEYS = 100
CLI = os.path.join(BUILD, "cli", "jobwire")

# claim_ready's one read of the paused flag and the limits (lua/_lib_claim.lua),
# and the read of the paused flag alone that the "unlimited" build makes.
LIMITS_READ = ("  local control = redis.call('MGET', K.paused, K.rate_limit, K.max_active, "
               "K.key_limit,\n                              K.key_rate_limit)")
PAUSED_READ = ("  local control = {redis.call('GET', K.paused), false, false, false, false}"
               "  -- limits_cost.py: no limits")


EXPLAINED = (
    "What the scripts do for it: claim.lua reads the paused flag and the four limits "
    "(rate_limit, max_active, max_active_per_key, key_rate_limit) with one MGET, so a queue without limits "
    "makes the same commands as one in a broker without them. A rate limit adds a GET and a SET of the token bucket per claim call, max_active "
    "a ZCARD of the active set per claim call (and the broker announces each settle of a "
    "limited queue's jobs, so that streams waiting on it wake); claims are batched, so that "
    "is a fraction of a command per job. A job with a concurrency key costs commands per "
    "run (under a per-key limit or none): an HINCRBY of its key's count at the claim (and "
    "one HMGET of the candidates' counts per claim call under a limit), an HINCRBY at the "
    "settle (an HDEL when the count reaches 0), and one EXISTS of the parked jobs per settle "
    "call. A rate limit per key adds per claim call a ZREMRANGEBYSCORE of the full buckets, "
    "a ZRANGEBYSCORE of the keys due a wake, a ZMSCORE and a ZADD of the buckets of the "
    "keys met, and a ZRANGE of the wakes when nothing is left due; its jobs count per key "
    "as key-open's. A rate limit that binds hands jobs out in the "
    "token-sized bites the bucket allows, each claim call a Redis round trip with its fixed "
    "commands for fewer jobs, and streams woken by the queue's timer when tokens come back: "
    "what the rate-bound row costs more per job.")


class QueueSetup:
    """Sets the measured queue's limits for one variant once the worker and
    the producer are ready (side_by_side.run_system's observers hook)."""

    def __init__(self, variant, bound_rate):
        self.variant = variant
        self.bound_rate = bound_rate

    def __call__(self, address):
        flags = {
            "rate-open": ["--rate-limit", "1000000/1000"],
            "max-open": ["--max-active", "1000000"],
            "key-open": ["--max-active-per-key", "1000000"],
            "keyrate-open": ["--key-rate-limit", "1000000/1000"],
            "rate-bound": ["--rate-limit", f"{self.bound_rate}/1000"],
        }.get(self.variant)
        if flags:
            subprocess.run([CLI, "--addr", address, "create-queue", "bench"] + flags,
                           check=True, stdout=subprocess.DEVNULL)
        return []



def report(args, rev, runs, failures):
    lines = [
        "# What queue limits cost",
        "",
        f"Written by `bench/limits_cost.py` on {datetime.date.today().isoformat()}:",
        "",
        "```sh",
        f".venv/bin/python bench/limits_cost.py --rounds {args.rounds} --jobs {args.jobs} "
        f"--bound-rate {args.bound_rate}" + (f" --out {args.out}" if args.out else ""),
        "```",
        "",
        "jobwire's C++ side-by-side program (`build/bench/jobwire_side`: one producer process, "
        f"EnqueueBatch of {args.chunk}, one worker process, {args.concurrency} jobs in flight, "
        f"{args.jobs:,} jobs of 64 bytes per run; bench/README.md, \"Side by side\") against "
        "a fresh redis-server and broker per run, the variants alternating round by round "
        f"({args.rounds} rounds):",
        "",
        f"- **unlimited**: the broker of `{rev}` (HEAD) with claim.lua reading only the paused "
        "flag (GET) where it reads the flag and the limits (MGET of paused, rate_limit, "
        "max_active, key_limit, key_rate_limit): what head would be if limits did not exist;",
        "- **head**: this tree's broker, the queue without limits;",
        "- **rate-open**: a rate limit of 1,000,000 jobs a second (burst the same), which "
        "never binds: the token bucket read and written by every claim;",
        "- **max-open**: max_active 1,000,000, which never binds: the active count read by "
        "every claim (and the broker's wake-up announcement after each settle of a limited "
        "queue);",
        f"- **key-open**: max_active_per_key 1,000,000, which never binds, and every job with "
        f"one of {KEYS} concurrency keys: each run counted for its key at the claim and the "
        "settle, with a look for a parked job of its key at the settle;",
        f"- **keyrate-open**: a rate limit per key of 1,000,000 jobs a second, which never "
        f"binds, and every job with one of {KEYS} concurrency keys: each claim drops the "
        "full buckets, looks for keys due a wake, and reads and writes the buckets of the "
        "keys it meets;",
        f"- **rate-bound**: a rate limit of {args.bound_rate:,} jobs a second (burst the same) "
        "that binds.",
        "",
        "Medians with the range over the rounds; ratios are taken within a round, against "
        "that round's unlimited run.",
        "",
    ]
    lines += variant_table(VARIANTS, runs, "unlimited", COMMON_COLUMNS + [
        ("broker switches per job", lambda r: r["broker_switches_per_job"], 2)])
    lines += [""] + per_run_lines(runs, args.rounds)
    if failures:
        lines += ["", "Failed runs:", ""] + [f"- {f}" for f in failures]
    lines += ["", EXPLAINED, ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--bound-rate", type=int, default=5000,
                        help="rate-bound: the limit, jobs a second")
    parser.add_argument("--broker", default=os.path.join(BUILD, "broker", "jobwire-broker"))
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    unlimited, rev = build_broker("limits-unlimited", "HEAD",
                                  patches=[("lua/_lib_claim.lua", LIMITS_READ, PAUSED_READ)])
    brokers = {v: args.broker for v in VARIANTS}
    brokers["unlimited"] = unlimited
    runs, failures = [], []
    for rnd in range(args.rounds):
        for variant in VARIANTS:
            try:
                r = side_by_side.run_system("jobwire-cpp", brokers[variant], args.jobs,
                                            chunk=args.chunk, concurrency=args.concurrency,
                                            observers=QueueSetup(variant, args.bound_rate),
                                            extra_flags=(["--concurrency_keys", str(KEYS)]
                                                         if variant in KEYED else []))
            except (RuntimeError, subprocess.CalledProcessError) as exc:
                failures.append(f"round {rnd + 1} {variant}: {exc}")
                continue
            r.update(variant=variant, round=rnd)
            runs.append(r)
            print(f"round {rnd + 1} {variant}: {r['jobs_per_s']:,.0f} jobs/s, "
                  f"{r['redis_commands_per_job']:.3f} Redis commands/job", flush=True)
    text = report(args, rev, runs, failures)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
