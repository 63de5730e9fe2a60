/**
 * Lease renewal of held jobs (docs/clients.md, Worker, Leases): the lease
 * length of a delivery, and ExtendLease every third of it from delivery until
 * the job's final outcome is decided (while the handler runs, and while its
 * Ack / Fail is retried: the OutcomeSender stops it before reporting), each
 * call with a deadline of at most that third. A successful renewal moves the
 * worker's estimate of the lease end, which bounds the Ack / Fail retries. A
 * FAILED_PRECONDITION / NOT_FOUND answer means the lease is lost: renewal
 * stops, h.leaseLost is set (OutcomeSender: an Ack / Fail in flight then gets
 * one more attempt) and, while the handler runs (!h.finished), job.signal is
 * aborted with a LeaseLostError. Only a loss learnt while the handler runs is
 * the outcome's leaseLost (h.leaseLostWhileRunning, taken when it returns); a
 * loss learnt later, while the Ack / Fail is sent (maybe because that very
 * attempt settled the job), is not. Except FAILED_PRECONDITION with reason JOB_CANCEL_REQUESTED
 * / RUN_TIMED_OUT, which means the run must stop: renewal stops and, while
 * the handler runs, job.signal is aborted with a JobCancelledError
 * (run_control.ts; not a lost lease: the Ack / Fail is sent as usual).
 */
import type * as grpc from '@grpc/grpc-js';
import { toNumber } from './codec';
import { JobwireError, LeaseLostError, Status } from './errors';
import { unary, type BrokerClient } from './proto';
import type { HeldJob } from './held_job';
import { stopReasonOf, stopRun } from './run_control';
import type { Logger } from './worker_options';
import type { ClaimedJob__Output } from './generated/jobwire/v1/ClaimedJob';
import type { ExtendLeaseResponse__Output } from './generated/jobwire/v1/ExtendLeaseResponse';

/** The broker's default lease, assumed when a broker that does not send ClaimedJob.lease_ms granted it. */
const BROKER_DEFAULT_LEASE_MS = 30_000;

/**
 * The lease length of a delivery: the broker's ClaimedJob.lease_ms. A broker
 * older than that field sends 0: then `configuredMs` (the Worker's leaseMs,
 * the one its Claim asked for), else (it asked for the broker default) 30 s.
 * No clock is read: the Redis clock and the local one need not agree.
 */
export function leaseLength(cj: ClaimedJob__Output, configuredMs: number | undefined): number {
  const granted = toNumber(cj.leaseMs);
  if (granted > 0) return granted;
  return configuredMs !== undefined && configuredMs > 0 ? configuredMs : BROKER_DEFAULT_LEASE_MS;
}

/**
 * Whether a lease ending at `leaseExpiresAtMs` (broker clock) already
 * reaches h's run deadline (Job.run_deadline_ms, the same clock; 0: none),
 * past which the broker extends no lease.
 */
function reachesDeadline(h: HeldJob, leaseExpiresAtMs: number): boolean {
  return h.runDeadlineMs > 0 && leaseExpiresAtMs >= h.runDeadlineMs;
}

export interface LeaseRenewerParams {
  stub: BrokerClient;
  metadata: () => grpc.Metadata;
  /** Deadline cap of each call (WorkerOptions.timeoutMs). */
  timeoutMs: number;
  /** ExtendLeaseRequest.lease_ms: the Worker's leaseMs, 0 for the broker default. */
  requestLeaseMs: number;
  log: Logger | null;
}

/**
 * Not thread-safe (one event loop); owned by one Worker run. One timer for
 * all held jobs (not one setTimeout per job): jobs wait in FIFO sets, one per
 * delay, so that within a set insertion order is due order, and the timer is
 * armed for the earliest due job. The timer is unref'd while no job waits:
 * as the per-job timers did, it keeps the process alive only while one does.
 */
export class LeaseRenewer {
  /** Jobs waiting for their next ExtendLease, by the delay they were scheduled with. */
  private readonly waiting = new Map<number, Set<HeldJob>>();
  /** Jobs in `waiting`. */
  private scheduled = 0;
  private timer?: NodeJS.Timeout;
  /** When `timer` fires (performance.now() ms); Infinity when there is none. */
  private timerAt = Infinity;
  private readonly fire = (): void => this.onTimer();

  constructor(private readonly p: LeaseRenewerParams) {}

  /**
   * Renews h's lease every third of h.leaseMs until stop(h), the lease is
   * lost, or it reaches the run's deadline (a run with a timeout: the broker
   * never extends it past that, so a renewal could only be refused); after
   * a failed call (not a refusal) sooner, after half of that, at most 1 s
   * (docs/clients.md, Leases).
   */
  start(h: HeldJob): void {
    h.renewalStopped = false;
    if (reachesDeadline(h, h.job.leaseExpiresAtMs)) return;
    this.schedule(h, this.intervalMs(h));
  }

  /**
   * No more renewals of h: none is scheduled, and the answer of one in
   * flight is ignored (no lease loss learnt from it, nothing rescheduled).
   */
  stop(h: HeldJob): void {
    h.renewalStopped = true;
    this.unschedule(h);
  }

  /** Clears the timer (the Worker's run ended). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private schedule(h: HeldJob, delayMs: number): void {
    this.unschedule(h);
    const at = performance.now() + delayMs;
    h.renewAt = at;
    let q = this.waiting.get(delayMs);
    if (q === undefined) {
      q = new Set();
      this.waiting.set(delayMs, q);
    }
    q.add(h);
    h.renewQueue = q;
    if (this.scheduled++ === 0) this.timer?.ref();
    if (this.timer === undefined || at < this.timerAt) this.arm(at, delayMs);
  }

  private unschedule(h: HeldJob): void {
    const q = h.renewQueue;
    if (q === undefined) return;
    q.delete(h);
    h.renewQueue = undefined;
    if (--this.scheduled === 0) this.timer?.unref();
  }

  private arm(at: number, delayMs: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.fire, delayMs);
    if (this.scheduled === 0) this.timer.unref();
  }

  /** Starts the renewal of every job that is due, and re-arms for the next one. */
  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    const due: HeldJob[] = [];
    let next = Infinity;
    for (const [delayMs, q] of this.waiting) {
      const first = due.length;
      for (const h of q) {
        if (h.renewAt > now) {
          if (h.renewAt < next) next = h.renewAt;
          break;
        }
        due.push(h);
      }
      for (let i = first; i < due.length; i++) this.unschedule(due[i]);
      if (q.size === 0) this.waiting.delete(delayMs);
    }
    if (next !== Infinity && this.timer === undefined) this.arm(next, Math.max(1, Math.ceil(next - now)));
    for (const h of due) void this.renew(h);
  }

  /** Renewal period and deadline: a third of the lease (at least 1 ms). */
  private intervalMs(h: HeldJob): number {
    return Math.max(1, Math.floor(h.leaseMs / 3));
  }

  private async renew(h: HeldJob): Promise<void> {
    // One renewal in flight at most: a slow ExtendLease is not stacked.
    if (h.renewalStopped || h.leaseLost || h.abandoned || h.renewing) return;
    h.renewing = true;
    const sentAt = Date.now();
    try {
      const res = await unary<object, ExtendLeaseResponse__Output>(this.p.stub, 'ExtendLease', {
        // The lease granted (the Claim's, or the broker default), unless the
        // broker is too old to say it.
        queue: h.job.queue, jobId: h.job.id, leaseToken: h.token,
        leaseMs: h.job.leaseMs || this.p.requestLeaseMs,
      }, Math.min(this.p.timeoutMs, this.intervalMs(h)), this.p.metadata());
      // The lease was extended at sentAt: that bounds the Ack / Fail retries.
      h.localLeaseDeadline = Math.max(h.localLeaseDeadline, sentAt + h.leaseMs);
      if (h.renewalStopped) return;
      const exp = toNumber(res.leaseExpiresAtMs);
      if (exp > 0) h.job.leaseExpiresAtMs = exp;
      if (!reachesDeadline(h, exp)) this.schedule(h, this.intervalMs(h));
    } catch (e) {
      // An answer arriving once the outcome is decided (or the job
      // abandoned) is ignored.
      if (h.renewalStopped || h.abandoned) return;
      const err = JobwireError.from(e);
      const stop = stopReasonOf(err);
      if (stop !== undefined) {
        this.stop(h);
        stopRun(h, stop, this.p.log, err); // tells the handler only while it runs
      } else if (err.code === Status.FAILED_PRECONDITION || err.code === Status.NOT_FOUND) {
        h.leaseLost = true;
        this.stop(h);
        // After the handler returned, the loss only marks the lease lost
        // (the Ack / Fail in flight gets one more attempt: OutcomeSender);
        // the outcome's leaseLost was taken when the handler returned.
        if (!h.finished) h.abort.abort(new LeaseLostError(h.job.queue, h.job.id, err));
        this.p.log?.warn(`lease of job ${h.job.id} lost (${err.message}); renewal stopped`);
      } else {
        this.p.log?.warn(`ExtendLease of job ${h.job.id} failed (${err.message}); will retry`);
        this.schedule(h, Math.min(Math.floor(this.intervalMs(h) / 2), 1000));
      }
    } finally {
      h.renewing = false;
    }
  }
}
