/**
 * Run control of held jobs (broker.proto: Cancel, ClaimResponse.stops,
 * EnqueueRequest.timeout_ms, ReportProgress): telling a handler to stop, by
 * aborting job.signal with a JobCancelledError, when
 *   - the Claim stream carries a StopRun for the run (Cancel asked it to stop),
 *   - its deadline passes (job.deadline: receipt + Job.timeout_ms, the
 *     worker's clock),
 *   - ExtendLease or ReportProgress is refused FAILED_PRECONDITION with reason
 *     JOB_CANCEL_REQUESTED or RUN_TIMED_OUT;
 * and the run's progress reports. What happens next is the Worker's usual
 * settling: a handler that throws is Failed with the stop reason as its
 * error text, one that returns is Acked.
 */
import type * as grpc from '@grpc/grpc-js';
import { JobCancelledError, JobwireError, Reason, Status, type StopReason } from './errors';
import type { HeldJob } from './held_job';
import type { LeaseRenewer } from './lease_renewer';
import { progressRequest, type Progress } from './progress';
import { unary, type BrokerClient } from './proto';
import type { Logger } from './worker_options';
import type { ReportProgressRequest } from './generated/jobwire/v1/ReportProgressRequest';
import type { StopRun__Output } from './generated/jobwire/v1/StopRun';

/**
 * The stop reason a refusal means: FAILED_PRECONDITION with reason
 * JOB_CANCEL_REQUESTED -> 'cancelled', RUN_TIMED_OUT -> 'timeout';
 * undefined for any other error.
 */
export function stopReasonOf(err: JobwireError): StopReason | undefined {
  if (err.code !== Status.FAILED_PRECONDITION) return undefined;
  if (err.reason === Reason.JOB_CANCEL_REQUESTED) return 'cancelled';
  if (err.reason === Reason.RUN_TIMED_OUT) return 'timeout';
  return undefined;
}

/**
 * Tells h's handler to stop: aborts job.signal with a JobCancelledError
 * (`cause`: the refusal that told it, if any) and returns it. Once per run:
 * a run already told returns the error it was told with. A run whose
 * handler has returned, or that was abandoned, is left alone (the error is
 * returned all the same). Renewal is the caller's to stop.
 */
export function stopRun(h: HeldJob, reason: StopReason, log: Logger | null, cause?: JobwireError): JobCancelledError {
  if (h.stopped) return h.stopped;
  const err = new JobCancelledError(h.job.queue, h.job.id, reason, cause === undefined ? undefined : { cause });
  if (h.finished || h.abandoned) return err;
  h.stopped = err;
  clearTimeout(h.deadlineTimer);
  h.deadlineTimer = undefined;
  log?.info(`job ${h.job.id} in queue ${h.job.queue} ${reason === 'timeout' ? 'passed its deadline' : 'was cancelled'}; ` +
    'its signal is aborted');
  h.abort.abort(err);
  return err;
}

export interface RunControlParams {
  stub: BrokerClient;
  metadata: () => grpc.Metadata;
  /** Deadline of each ReportProgress call (WorkerOptions.timeoutMs). */
  timeoutMs: number;
  /** Stops the renewal of a run told to stop (the broker would refuse it). */
  renewer: LeaseRenewer;
  log: Logger | null;
}

/** Not thread-safe (one event loop); owned by one Worker run. */
export class RunControl {
  constructor(private readonly p: RunControlParams) {}

  /** Arms h's deadline (a job with a timeout): at job.deadline its run is stopped ('timeout'). */
  start(h: HeldJob): void {
    const deadline = h.job.deadline;
    if (deadline === undefined || h.stopped) return;
    h.deadlineTimer = setTimeout(() => {
      h.deadlineTimer = undefined;
      this.stop(h, 'timeout');
    }, Math.max(0, deadline - Date.now()));
  }

  /** Clears h's deadline (h is settled). */
  end(h: HeldJob): void {
    clearTimeout(h.deadlineTimer);
    h.deadlineTimer = undefined;
  }

  /**
   * The stops of one Claim message: each stops the held run with its job id
   * and lease token (a stop for an earlier run of the job, or for a job no
   * longer held, is ignored). Any stop reason is a stop: the broker asked
   * the run to end; a reason this client does not know counts as
   * 'cancelled'. `held`: the jobs held now (stops are rare; a scan is enough).
   */
  onStops(stops: readonly StopRun__Output[], held: Iterable<HeldJob>): void {
    if (stops.length === 0) return;
    for (const h of held) {
      if (stops.some((s) => s.jobId === h.job.id && s.leaseToken === h.token)) this.stop(h, 'cancelled');
    }
  }

  /**
   * Stops h's renewal (the broker refuses it from now on; also while the Ack
   * / Fail is retried) and tells its handler to stop (stopRun).
   */
  stop(h: HeldJob, reason: StopReason, cause?: JobwireError): JobCancelledError {
    this.p.renewer.stop(h);
    return stopRun(h, reason, this.p.log, cause);
  }

  /**
   * ReportProgress for h's run; see Job.reportProgress. A run already told
   * to stop rejects with its JobCancelledError without calling.
   */
  async reportProgress(h: HeldJob, progress: Progress): Promise<void> {
    if (h.stopped) throw h.stopped;
    const req = progressRequest(h.job.queue, h.job.id, h.token, progress);
    try {
      await unary<ReportProgressRequest, object>(this.p.stub, 'ReportProgress', req, this.p.timeoutMs, this.p.metadata());
    } catch (e) {
      const err = JobwireError.from(e);
      const reason = stopReasonOf(err);
      if (reason !== undefined) throw this.stop(h, reason, err);
      throw err;
    }
  }
}
