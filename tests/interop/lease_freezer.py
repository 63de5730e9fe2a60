"""LeaseFreezer: freezes each language's worker once, past its lease, while it
holds a job, so that the run produces superseded leases whose late Acks the
broker must refuse (README.md, "Frozen workers")."""

import json
import os
import signal
import time

from jobwire.v1 import broker_pb2

from interop_checks import RUN_STEPS, Freeze

# How long after the lease a frozen worker stays frozen at least (the reaper
# settles an expired lease at its expiry, by the Redis clock), and at most
# while the broker has not claimed the job again.
MARGIN_S = 0.3
MAX_EXTRA_S = 10.0
# How long a hold job may take to start, and its frozen run's outcome to be
# logged after the worker is resumed.
LAND_TIMEOUT_S = 15.0
OUTCOME_TIMEOUT_S = 10.0


class LeaseFreezer:
    """For each language in turn: enqueues a job that the handler of that
    language holds on its first attempt (payload hold_in / hold_ms), ahead of
    the backlog (priority 1000). When that worker logs "hold", freezes its
    whole process (SIGSTOP), Worker helper and lease renewals included. Once
    the lease has expired and the broker has claimed the job again (a new
    lease supersedes the frozen one), resumes it (SIGCONT): the handler
    finishes and Acks with the superseded token. A hold job that starts in
    another language runs as usual and another one is enqueued.

    Driven by step() from the harness's wait loop. Not thread-safe."""

    def __init__(self, stub, queue, workers, langs, lease_ms, first_n, hold_ms=1500,
                 tries=40):
        self.stub = stub
        self.queue = queue
        self.workers = workers      # run_interop.WorkerSupervisor
        self.lease_s = lease_ms / 1000.0
        self.hold_ms = hold_ms
        self.tries = tries
        self.next_n = first_n
        self.job_n = {}             # job id -> n, of every job enqueued here
        self.freezes = []           # [Freeze], once resumed
        self.failures = []
        self._todo = list(langs)    # languages not frozen yet, the current one first
        self._attempts = 0          # hold jobs enqueued for the current language
        self._landing = None        # (job id, deadline) of the hold job in flight
        self._frozen = None         # (Freeze, proc, stopped at)
        self._resumed = None        # (Freeze, its process, deadline for its outcome line)

    @property
    def done(self):
        return not self._todo and self._frozen is None and self._resumed is None

    def step(self, new_events):
        """Advances by what the logs said since the last step: new_events is
        [(job_id, Event)]."""
        if self._resumed is not None:
            self._await_outcome(new_events)
        elif self._frozen is not None:
            self._maybe_resume()
        elif self._todo:
            self._land(new_events)

    def resume_all(self):
        """Resumes a worker still frozen (when the run is cut short)."""
        if self._frozen is not None:
            os.kill(self._frozen[1].pid, signal.SIGCONT)
            self._frozen = None

    def _land(self, new_events):
        lang = self._todo[0]
        if self._landing is None:
            self._enqueue(lang)
            return
        job_id, deadline = self._landing
        for jid, e in new_events:
            if jid != job_id:
                continue
            if e.kind == "hold" and e.lang == lang:
                self._freeze(lang, job_id, e)
                return
            if e.lang != lang or e.kind not in RUN_STEPS:
                self._landing = None  # ran elsewhere: enqueue another
                return
        if time.monotonic() > deadline:
            self._landing = None

    def _enqueue(self, lang):
        if self._attempts == self.tries:
            self.failures.append(f"no hold job started in {lang} after {self.tries} tries: "
                                 f"its worker was not frozen")
            self._next_language()
            return
        self._attempts += 1
        n = self.next_n
        self.next_n += 1
        payload = {"n": n, "hold_in": lang, "hold_ms": self.hold_ms, "work_ms": 20}
        resp = self.stub.Enqueue(broker_pb2.EnqueueRequest(
            queue=self.queue, type="interop", payload=json.dumps(payload).encode(),
            priority=1000, max_attempts=6, idempotency_key=f"interop-hold-{n}",
            backoff_base_ms=50, backoff_max_ms=500), timeout=10)
        self.job_n[resp.job_id] = n
        self._landing = (resp.job_id, time.monotonic() + LAND_TIMEOUT_S)

    def _freeze(self, lang, job_id, hold):
        entry = self.workers.procs.get(lang)
        if entry is None or entry[1] != hold.log or entry[0].poll() is not None:
            self._landing = None  # that process is gone: enqueue another
            return
        proc = entry[0]
        os.kill(proc.pid, signal.SIGSTOP)
        self._frozen = (Freeze(lang, hold.log, job_id, hold.attempt), proc, time.monotonic())
        self._landing = None

    def _maybe_resume(self):
        freeze, proc, stopped = self._frozen
        frozen_s = time.monotonic() - stopped
        if frozen_s < self.lease_s + MARGIN_S:
            return
        job = self.stub.GetJob(broker_pb2.GetJobRequest(queue=self.queue, job_id=freeze.job_id),
                               timeout=10).job
        if job.attempts <= freeze.attempt and frozen_s < self.lease_s + MAX_EXTRA_S:
            return
        os.kill(proc.pid, signal.SIGCONT)
        freeze.frozen_s = frozen_s
        freeze.attempts_at_resume = job.attempts
        self.freezes.append(freeze)
        self._frozen = None
        self._resumed = (freeze, proc, time.monotonic() + OUTCOME_TIMEOUT_S)

    def _await_outcome(self, new_events):
        freeze, proc, deadline = self._resumed
        ended = any(jid == freeze.job_id and e.log == freeze.log and e.attempt == freeze.attempt
                    and e.kind not in RUN_STEPS for jid, e in new_events)
        if ended:
            self._resumed = None
            self._next_language()
        elif proc.poll() is not None:
            # The resumed worker crashed (a planned crash job of the backlog,
            # run by another of its threads) before the late Ack's outcome
            # was logged: this freeze proves nothing either way. Freeze that
            # language again (its tries stay counted).
            self.freezes.remove(freeze)
            self._resumed = None
        elif time.monotonic() > deadline:
            self._resumed = None
            self._next_language()

    def _next_language(self):
        self._todo.pop(0)
        self._attempts = 0
