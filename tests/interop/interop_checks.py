"""The checks of the cross-language interop proof (README.md, "Checks").

Pure functions over what a run left behind: the workers' logs, GetJob's view
of every job, and the harness's record of crashes and freezes. run_interop.py
gathers a Run and calls check(); interop_checks_test.py feeds check() doctored
runs to show that each check can fail.
"""

import collections
import json
from dataclasses import dataclass, field

from jobwire.v1 import broker_pb2

# Outcome kinds a worker logs (README.md, "The worker program"). ack_ok is the
# only completion; expired_dropped is a claimed attempt whose handler never
# started (not a run).
ACK_KINDS = ("ack_ok", "ack_error", "ack_unknown")
FAIL_KINDS = ("fail_ok", "fail_error", "fail_unknown")
DROPPED = "expired_dropped"
# Lines a run writes before it ends; every other line ends the run (an
# outcome, or "crash"). "span" names the handler's trace (README.md,
# "Traces").
RUN_STEPS = ("start", "span", "hold")
REFUSED = "FAILED_PRECONDITION"

# One log line of a job: "<kind> <job_id> <attempt> <lang> [detail...]" (the
# detail is the rest of the line, its words joined by one space), and the log
# it came from.
Event = collections.namedtuple("Event", "kind attempt lang detail log")


class LogTail:
    """Reads one worker log as it grows. Not thread-safe."""

    def __init__(self, path):
        self.path = path
        self._offset = 0

    def read(self):
        """The (job_id, Event) of every line completed since the last call. A
        last line without its newline is being written right now and is left
        for the next call. A missing file has no lines yet."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self._offset += end
        events = []
        for line in data[:end].decode().splitlines():
            parts = line.split()
            if len(parts) < 4:
                raise ValueError(f"{self.path}: malformed line {line!r}")
            detail = " ".join(parts[4:])
            events.append((parts[1], Event(parts[0], int(parts[2]), parts[3], detail, self.path)))
        return events


@dataclass
class Freeze:
    """A worker process the harness froze (SIGSTOP) while its handler held
    attempt `attempt` of job `job_id` (the payload's hold_in), then resumed."""
    lang: str
    log: str
    job_id: str
    attempt: int
    frozen_s: float = 0.0
    # The broker's attempts of the job when the worker was resumed: above
    # `attempt` when the frozen run's lease was superseded by a new claim.
    attempts_at_resume: int = 0


@dataclass
class Run:
    """What one run left behind."""
    langs: list
    concurrency: int
    job_n: dict          # job id -> the payload's n, for every id an Enqueue returned
    expect_dead: set     # job ids built to exhaust their attempts
    broker_jobs: dict    # job id -> broker_pb2.Job (GetJob after the workers stopped)
    events: dict         # job id -> [Event], in log order
    crashes: int = 0     # worker processes that crashed on purpose
    crashed_logs: set = field(default_factory=set)  # their logs
    freezes: list = field(default_factory=list)     # [Freeze]
    # job id -> "<trace_id> <span_id>" of the producer span whose context its
    # Enqueue carried (the Node.js producer's jobs; README.md, "Traces").
    traces: dict = field(default_factory=dict)


def check(run):
    """Returns (failures, counts): the failed checks as sentences (empty when
    every check holds), and counters for the report."""
    failures = []
    counts = collections.Counter()
    for job_id, job in run.broker_jobs.items():
        failures += check_job(run, job_id, job, counts)
    # A crash loses at most the other jobs delivered to that worker's stream.
    limit = run.crashes * (run.concurrency - 1)
    if counts["unlogged_runs"] > limit:
        failures.append(f"{counts['unlogged_runs']} attempts without a logged run; at most "
                        f"{limit} can be explained by crashes")
    failures += check_languages(run)
    failures += check_superseded(run, counts)
    failures += check_traces(run, counts)
    unexpected = sorted(set(run.events) - set(run.job_n))
    if unexpected:
        failures.append(f"{len(unexpected)} job id(s) in the workers' logs that no Enqueue "
                        f"returned: {', '.join(unexpected[:5])}")
    return failures, counts


def check_job(run, job_id, job, counts):
    """One job: its final state, its Acks, its result, its attempts."""
    failures = []
    evs = run.events.get(job_id, [])
    starts = [e for e in evs if e.kind == "start"]
    acks = [e for e in evs if e.kind == "ack_ok"]
    dropped = [e for e in evs if e.kind == DROPPED]
    ended = {(e.attempt, e.log) for e in evs if e.kind not in RUN_STEPS}
    # Runs whose outcome was never logged because their process crashed.
    crashed = [e for e in starts
               if e.log in run.crashed_logs and (e.attempt, e.log) not in ended]

    want = broker_pb2.JOB_STATE_DEAD if job_id in run.expect_dead else broker_pb2.JOB_STATE_COMPLETED
    if job.state != want:
        return [f"job {job_id}: state {broker_pb2.JobState.Name(job.state)}, "
                f"want {broker_pb2.JobState.Name(want)} (error {job.error!r})"]
    if len(acks) > 1:
        failures.append(f"job {job_id}: completed {len(acks)} times: "
                        f"{', '.join(describe(e) for e in acks)}")
    for e in acks:
        if e.attempt != job.attempts:
            failures.append(f"job {job_id}: Ack accepted for attempt {e.attempt} in {e.lang}, "
                            f"but the broker's latest attempt is {job.attempts} "
                            f"(a superseded lease)")
    if want == broker_pb2.JOB_STATE_COMPLETED:
        lang = completed_by(job, acks, evs, crashed, counts)
        if lang is None:
            failures.append(f"job {job_id}: COMPLETED with no Ack in the logs")
        else:
            failures += check_result(job_id, job, lang, run.job_n.get(job_id))
    elif acks:
        failures.append(f"job {job_id}: DEAD but acked: {', '.join(describe(e) for e in acks)}")

    # Attempts against logged claims: a run, or a delivery dropped as expired.
    # A job delivered to a worker that crashed before starting its handler was
    # claimed without either.
    claimed = sorted(e.attempt for e in starts + dropped)
    if len(claimed) != len(set(claimed)):
        failures.append(f"job {job_id}: attempt ran twice: {claimed}")
    missing = job.attempts - len(claimed)
    if missing < 0 or (claimed and claimed[-1] > job.attempts):
        failures.append(f"job {job_id}: broker counts {job.attempts} attempts, "
                        f"logs show runs {claimed}")
    counts["unlogged_runs"] += max(missing, 0)
    for d in dropped:
        if any(e.attempt == d.attempt and e.kind in ACK_KINDS + FAIL_KINDS for e in evs):
            failures.append(f"job {job_id}: attempt {d.attempt} answered after its delivery "
                            f"was dropped as expired")
    return failures


def completed_by(job, acks, evs, crashed, counts):
    """The language whose Ack completed the job, or None when no log explains
    the completion."""
    latest = [e for e in acks if e.attempt == job.attempts]
    if latest or acks:
        return (latest or acks)[0].lang
    unknown = [e for e in evs if e.kind == "ack_unknown" and e.attempt == job.attempts]
    if unknown:  # the Ack's answer was lost, the Ack was stored
        counts["acks_unknown_stored"] += 1
        return unknown[0].lang
    lost = [e for e in crashed if e.attempt == job.attempts]
    if lost:  # acked, then the process crashed before the log line
        counts["unlogged_acks"] += 1
        return lost[0].lang
    return None


def check_result(job_id, job, lang, n):
    """The stored result names the language that acked and the producer's n."""
    try:
        result = json.loads(job.result)
    except ValueError:
        result = None
    if not isinstance(result, dict):
        return [f"job {job_id}: result {job.result!r} is not a JSON object"]
    failures = []
    if result.get("lang") != lang:
        failures.append(f"job {job_id}: result names {result.get('lang')!r}, "
                        f"but {lang} logged the Ack")
    if result.get("n") != n:
        failures.append(f"job {job_id}: result has n={result.get('n')!r}, "
                        f"the enqueued payload n={n}")
    return failures


def check_languages(run):
    """Every language completed jobs; retries crossed every likely pair."""
    failures = []
    for lang in run.langs:
        if not any(e.kind == "ack_ok" and e.lang == lang
                   for evs in run.events.values() for e in evs):
            failures.append(f"no job completed in {lang}")
    pairs = cross_pairs(run.events)
    runs = collections.Counter(e.lang for evs in run.events.values() for e in evs
                               if e.kind == "start")
    total_runs = sum(runs.values())
    for a in run.langs:
        for b in run.langs:
            # "Likely" pairs: both languages ran at least 5% of all runs.
            if a != b and runs[a] >= 0.05 * total_runs and runs[b] >= 0.05 * total_runs \
                    and pairs[(a, b)] == 0:
                failures.append(f"no job failed in {a} and completed in {b}")
    return failures


def check_traces(run, counts):
    """Every run of a job enqueued with a trace logged a handler span of that
    trace whose parent is the producer's span, in every language; no job
    enqueued without one logged a span."""
    failures = []
    spanned = set()
    for job_id, evs in run.events.items():
        want = run.traces.get(job_id)
        spans = {(e.log, e.attempt): e for e in evs if e.kind == "span"}
        for e in evs:
            if e.kind == "span" and want is None:
                failures.append(f"job {job_id} was enqueued without a trace but its run "
                                f"(attempt {e.attempt} in {e.lang}) logged span {e.detail}")
            if e.kind != "start" or want is None:
                continue
            span = spans.get((e.log, e.attempt))
            if span is None:
                failures.append(f"job {job_id} attempt {e.attempt} ran in {e.lang} without "
                                f"a span line; its producer's span is {want}")
            elif span.detail != want:
                failures.append(f"job {job_id} attempt {e.attempt} in {e.lang}: handler span "
                                f"trace/parent {span.detail}, the producer's trace/span {want}")
            else:
                spanned.add(e.lang)
                counts["spans_checked"] += 1
    if run.traces:
        for lang in run.langs:
            if lang not in spanned:
                failures.append(f"no run in {lang} of a job enqueued with a trace logged its "
                                f"producer's trace")
    return failures


def check_superseded(run, counts):
    """Late Acks of superseded leases were refused, and the run produced some
    in every language (else the Ack check above could not have failed)."""
    failures = []
    refused = collections.Counter()  # language -> late Acks refused
    for job_id, evs in run.events.items():
        job = run.broker_jobs.get(job_id)
        if job is None:
            continue
        for e in evs:
            if e.kind in ("ack_error", "fail_error"):
                counts["stale_refused"] += 1
            if e.kind in ACK_KINDS and e.attempt < job.attempts:
                counts["late_acks"] += 1
                if e.kind == "ack_error" and e.detail == REFUSED:
                    refused[e.lang] += 1
    counts["late_acks_refused"] = sum(refused.values())
    for f in run.freezes:
        if f.attempts_at_resume <= f.attempt:
            failures.append(f"{f.lang} worker resumed before job {f.job_id} (attempt "
                            f"{f.attempt}) was claimed again: its lease was not superseded")
            continue
        ends = [e for e in run.events.get(f.job_id, [])
                if e.log == f.log and e.attempt == f.attempt and e.kind not in RUN_STEPS]
        if not ends:
            failures.append(f"{f.lang} worker logged no outcome for job {f.job_id} "
                            f"(attempt {f.attempt}) it held while frozen")
        elif (ends[0].kind, ends[0].detail) != ("ack_error", REFUSED):
            failures.append(f"{f.lang} worker's late Ack of job {f.job_id} (attempt "
                            f"{f.attempt}, superseded) ended {describe(ends[0])}, "
                            f"want ack_error {REFUSED}")
    for lang in run.langs:
        if refused[lang] == 0:
            failures.append(f"no late Ack of a superseded lease from {lang} was refused by "
                            f"the broker: the superseded-lease check could not have failed")
    return failures


def describe(e):
    """An event for a failure message: "ack_error FAILED_PRECONDITION (attempt
    1 in go)"."""
    return f"{e.kind}{' ' + e.detail if e.detail else ''} (attempt {e.attempt} in {e.lang})"


def cross_pairs(events):
    """(failed-in, completed-in) counts over jobs whose failed or crashed
    attempt ran in one language and whose completion in another."""
    pairs = collections.Counter()
    for evs in events.values():
        done = [e.lang for e in evs if e.kind == "ack_ok"]
        if not done:
            continue
        failed_in = {e.lang for e in evs if e.kind == "crash" or
                     (e.kind == "fail_ok" and e.detail == "RETRY_SCHEDULED")}
        for a in failed_in:
            if a != done[0]:
                pairs[(a, done[0])] += 1
    return pairs
