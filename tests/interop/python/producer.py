"""Interop producer (tests/interop/README.md): enqueue_batch in batches of
100, one output line per job: <n> <job_id> <0|1 duplicate>."""
import json
import os
import sys

from jobwire import Client, JobwireError

BATCH = 100
OPTION_KEYS = ("max_attempts", "idempotency_key", "backoff_base_ms", "backoff_max_ms", "delay_ms")


def load_jobs(path):
    jobs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                jobs.append(json.loads(line))
    return jobs


def to_item(spec):
    options = {k: spec[k] for k in OPTION_KEYS if spec.get(k) not in (None, "", 0)}
    # The payload stays an object: the client JSON-encodes it.
    return {"type": spec["type"], "payload": spec.get("payload", {}), "options": options}


def main() -> int:
    addr = os.environ["JOBWIRE_ADDR"]
    queue = os.environ["INTEROP_QUEUE"]
    jobs = load_jobs(os.environ["INTEROP_JOBS"])
    failed = 0
    with Client(addr) as client, open(os.environ["INTEROP_OUT"], "w", encoding="utf-8") as out:
        for start in range(0, len(jobs), BATCH):
            chunk = jobs[start:start + BATCH]
            try:
                results = client.enqueue_batch(queue, [to_item(j) for j in chunk])
            except JobwireError as e:
                print("producer: enqueue_batch of jobs %d..%d failed: %s"
                      % (start, start + len(chunk) - 1, e), file=sys.stderr)
                return 1
            for spec, r in zip(chunk, results):
                if r.ok:
                    out.write("%s %s %d\n" % (spec["n"], r.job_id, 1 if r.duplicate else 0))
                    out.flush()
                else:
                    failed += 1
                    print("producer: job n=%s not stored: %s" % (spec["n"], r.error), file=sys.stderr)
    if failed:
        print("producer: %d job(s) not stored" % failed, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
