/** The Worker's record of one job it holds, from delivery until it is settled. */
import type { Job, JobAbort } from './job';
import type { StreamState } from './claim_stream';
import type { JobCancelledError } from './errors';

export interface HeldJob {
  job: Job;
  token: string;
  /** The Claim stream that delivered it (its inFlight counts this job). */
  stream: StreamState;
  /** The lease length (job.leaseMs): renewal period, deadline and estimate. */
  leaseMs: number;
  /** The run's deadline, broker clock (Job.run_deadline_ms; 0: no timeout): no lease lasts past it. */
  runDeadlineMs: number;
  /** Local-clock estimate of the lease expiry (Ack/Fail retries stop there). */
  localLeaseDeadline: number;
  /** When its next ExtendLease is due (performance.now() ms), while it waits in renewQueue. */
  renewAt: number;
  /** The LeaseRenewer set it waits in for its next ExtendLease; undefined when none is scheduled. */
  renewQueue: Set<HeldJob> | undefined;
  /** An ExtendLease call is in flight (never more than one per job). */
  renewing: boolean;
  /**
   * Its renewal has ended (LeaseRenewer.stop): its final outcome is decided,
   * or it was abandoned, or its run told to stop. The answer of a renewal
   * still in flight is then ignored.
   */
  renewalStopped: boolean;
  /**
   * The handler has returned (or will not run: a delivery dropped or failed
   * while stopping): job.signal is no longer aborted (the lease is still
   * renewed until the Ack / Fail is decided; a loss then only sets
   * leaseLost).
   */
  finished: boolean;
  /**
   * The lease is known lost: a renewal was refused (FAILED_PRECONDITION /
   * NOT_FOUND), while the handler ran or later, while the Ack / Fail was
   * sent. Rules the Ack / Fail retries (OutcomeSender, mayResend); not what
   * the outcome reports (leaseLostWhileRunning).
   */
  leaseLost: boolean;
  /**
   * leaseLost as it was when the handler returned (set once, with finished;
   * false when no handler ran): the lease was lost while the handler ran. The
   * outcome's leaseLost.
   */
  leaseLostWhileRunning: boolean;
  /** Given up after the stop grace: nothing more is sent for it. */
  abandoned: boolean;
  /** Aborts job.signal. */
  abort: JobAbort;
  /** Set when the run was told to stop (cancelled, timed out): job.signal's reason (run_control.ts). */
  stopped: JobCancelledError | undefined;
  /** Fires at job.deadline (a job with a timeout), until the job is settled. */
  deadlineTimer: NodeJS.Timeout | undefined;
  done: Promise<void>;
}
