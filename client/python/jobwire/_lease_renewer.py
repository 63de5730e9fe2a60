"""Lease renewal for the threaded Worker: one thread renews the leases of
every job held (the design of client/cpp/worker.cc's RenewThread).

Each ``Lease`` is renewed every third of its length from ``add`` (at
delivery) until ``remove`` (once the job's outcome is decided: its Ack /
Fail answered, refused or given up, or the job abandoned), so also while
its final Ack / Fail is being retried after the handler returned. A
renewal is an ExtendLease call made without waiting (a gRPC
future, with a deadline of at most that third), so calls run side by side
and a hung one delays no other lease. The answer updates the lease (new
local deadline, or ``lost`` on FAILED_PRECONDITION / NOT_FOUND, after which
renewal stops); an answer that arrives after ``remove`` is ignored. A
refusal with reason JOB_CANCEL_REQUESTED / RUN_TIMED_OUT is no lost lease
(the run may still Fail, and Ack unless timed out): it signals the run
(_run_control) while its handler runs, and renewal stops. After the handler
returned, a lost lease only marks the lease lost (``lost_event`` set): the
Settler's Ack / Fail retries read it (_lease_rules.may_resend).

A thread per handler did the same before; starting and joining it cost more
than the rest of a short job (about a third of the Python Worker's
throughput, measured 2026-12-01).
"""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import List, Optional, Tuple

import grpc

from ._errors import JobwireError
from ._run_control import RunControl, stop_reason
from ._types import Job
from .v1 import broker_pb2 as pb

log = logging.getLogger("jobwire.worker")

# Answers to ExtendLease meaning the lease is gone (the job moved on).
LEASE_LOST = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND)


class Lease:
    """One delivered job's lease, from delivery until its final Ack / Fail.

    ``lease_s`` is the lease length (_lease_rules.lease_length_s: the one the
    broker granted). ``deadline`` is the local (monotonic) estimate of the
    lease end, from the receipt or the last successful renewal; it bounds the
    Ack / Fail retries. ``lost``: the broker refused a renewal (the job moved
    on); the job's ``lease_lost_event`` is set at that moment; the Ack /
    Fail retries read it. ``handled``: the handler phase is over
    (Worker._handled), which sets ``lost_in_handler`` to ``lost`` then: the
    outcome's ``lease_lost`` (a loss learnt later, while the Ack / Fail is
    in flight or retried, is not the handler's). ``run``: the run's stop
    signal, when the Worker made one; its deadline caps ``deadline`` (the
    broker never extends the lease past it)."""

    def __init__(self, job: Job, token: str, lease_s: float, renew_ms: int, timeout: float,
                 received: Optional[float] = None, run: Optional[RunControl] = None):
        self.job = job
        self.token = token
        self.lease_s = lease_s
        self.run = run
        # From receipt (time.monotonic() when read off the Claim stream).
        self.deadline = self.capped((time.monotonic() if received is None else received)
                                    + lease_s)
        self.lost_event = threading.Event()
        job._lease_lost_event = self.lost_event
        self.handled = False
        self.lost_in_handler = False
        # Renewal settings: every third of the lease, each call's deadline at
        # most that third; renew_ms 0 asks the broker for its default again.
        self.interval = max(lease_s / 3.0, 0.05)
        self.call_timeout = min(timeout, max(self.interval, 0.25))
        self.request = pb.ExtendLeaseRequest(queue=job.queue, job_id=job.id,
                                             lease_token=token, lease_ms=renew_ms)
        self.renewing = False  # guarded by the renewer's lock

    @property
    def lost(self) -> bool:
        return self.lost_event.is_set()

    def capped(self, deadline: float) -> float:
        """``deadline``, at most the run's deadline."""
        if self.run is not None and self.run.deadline is not None:
            return min(deadline, self.run.deadline)
        return deadline


class LeaseRenewer:
    """Thread safety: every method may be called from any thread."""

    def __init__(self, stub, metadata):
        self._stub = stub
        self._metadata = metadata
        self._cond = threading.Condition()
        # (next renewal, tie-breaker, lease); entries of removed leases are
        # skipped when they come up. Guarded by _cond.
        self._due: List[Tuple[float, int, Lease]] = []
        self._order = itertools.count()
        self._closed = False
        self._thread: Optional[threading.Thread] = None

    def add(self, lease: Lease) -> None:
        """Renews ``lease`` every lease / 3 from now until ``remove``."""
        with self._cond:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="jobwire-lease-renewer")
                self._thread.start()
            lease.renewing = True
            self._schedule(lease, time.monotonic() + lease.interval)

    def remove(self, lease: Lease) -> None:
        """No renewal of ``lease`` starts after this, and the answer of one
        in flight is ignored."""
        with self._cond:
            lease.renewing = False

    def close(self) -> None:
        """Stops renewing (the worker's channel is closing)."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _schedule(self, lease: Lease, at: float) -> None:
        earliest = not self._due or at < self._due[0][0]
        heapq.heappush(self._due, (at, next(self._order), lease))
        if earliest:
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                due: List[Lease] = []
                while not due:
                    if self._closed:
                        return
                    now = time.monotonic()
                    while self._due and (self._due[0][0] <= now
                                         or not self._due[0][2].renewing):
                        _, _, lease = heapq.heappop(self._due)
                        if lease.renewing:
                            due.append(lease)
                    if not due:
                        self._cond.wait(self._due[0][0] - now if self._due else None)
            for lease in due:
                self._renew(lease)

    def _renew(self, lease: Lease) -> None:
        sent = time.monotonic()
        try:
            call = self._stub.ExtendLease.future(lease.request, timeout=lease.call_timeout,
                                                 metadata=self._metadata)
        except ValueError:  # channel closed: the worker was shut down
            return
        call.add_done_callback(lambda answered: self._answered(lease, sent, answered))

    def _answered(self, lease: Lease, sent: float, call) -> None:
        # On a gRPC thread: must not block.
        try:
            resp = call.result()
        except grpc.RpcError as e:
            code = e.code()
            stop = stop_reason(JobwireError.from_rpc_error(e)) if code in LEASE_LOST else None
            with self._cond:
                if not lease.renewing:
                    return
                if stop is not None:
                    lease.renewing = False  # the broker renews it no more
                elif code in LEASE_LOST:
                    lease.renewing = False
                    lease.lost_event.set()  # tells the handler (job.lease_lost)
                else:
                    # Sooner than the period: half of it, at most 1 s (docs/clients.md).
                    self._schedule(lease, time.monotonic() + min(lease.interval / 2, 1.0))
            if stop is not None:
                log.info("jobwire: lease renewal of job %s/%s refused (%s); renewal stops",
                         lease.job.queue, lease.job.id, e.details())
                if lease.run is not None and not lease.handled:  # the handler runs
                    lease.run.signal(stop)
            elif code in LEASE_LOST:
                log.warning("jobwire: lease of job %s/%s lost (%s: %s); renewal stops",
                            lease.job.queue, lease.job.id, code.name, e.details())
            else:
                log.info("jobwire: lease renewal of job %s failed (%s: %s); retrying",
                         lease.job.id, code.name if code else "?", e.details())
            return
        except Exception:  # noqa: BLE001 - cancelled at shutdown
            return
        with self._cond:
            if not lease.renewing:
                return
            lease.deadline = lease.capped(sent + lease.lease_s)
            lease.job.lease_expires_at_ms = resp.lease_expires_at_ms
            self._schedule(lease, time.monotonic() + lease.interval)
