/**
 * Client.wait: follows one job over WaitJob calls until it is COMPLETED or
 * DEAD, calling again after the broker went away (UNAVAILABLE, or a
 * CANCELLED this client did not cause: errors.ts, brokerWentAway) with the
 * Claim stream's reconnect backoff and the time that remains
 * (docs/clients.md, Producer). A call the client cancels itself (abort,
 * settled) is settled first, so its CANCELLED is never seen as the broker's.
 */
import type * as grpc from '@grpc/grpc-js';
import { performance } from 'node:perf_hooks';
import { abortError, callTimeoutMs } from './call_options';
import { reconnectDelayMs } from './claim_stream';
import { brokerWentAway, JobDeadError, JobwireError, Reason, Status, WaitTimeoutError } from './errors';
import { JobInfo } from './job_info';
import type { BrokerClient } from './proto';
import type { WaitJobRequest } from './generated/jobwire/v1/WaitJobRequest';
import type { WaitJobResponse__Output } from './generated/jobwire/v1/WaitJobResponse';

/**
 * How long past the wait's timeout the call's own gRPC deadline lies: the
 * broker ends the call at the timeout (WAIT_TIMEOUT, with the job's latest
 * state); the deadline only ends a call the broker no longer answers.
 */
export const WAIT_DEADLINE_MARGIN_MS = 1000;

/** The options of Client.wait. */
export interface WaitOptions {
  /**
   * Limit of the whole wait in ms (a finite number > 0, else the wait
   * rejects with TypeError): past it the wait rejects with WaitTimeoutError.
   * Unset: no limit. Not a per-call deadline: the client's `timeoutMs` does
   * not apply to wait.
   */
  timeoutMs?: number;
  /** Cancels the wait and its call; it rejects as call_options.ts says. */
  signal?: AbortSignal;
  /**
   * Called with the job as it is when the wait starts, then at each change
   * of its state, attempts or progress, the final one included (intermediate changes
   * may be merged; the final one never is). Its return value is ignored; a
   * throw ends the wait, which rejects with it.
   */
  onUpdate?: (job: JobInfo) => void;
}

/** Waits for one job; see Client.wait. */
export async function waitJob(
  stub: BrokerClient,
  metadata: () => grpc.Metadata,
  queue: string,
  jobId: string,
  options?: WaitOptions,
): Promise<JobInfo> {
  const timeoutMs = callTimeoutMs(options, Infinity);
  const onUpdate = options?.onUpdate;
  if (onUpdate !== undefined && typeof onUpdate !== 'function') {
    throw new TypeError('jobwire: options.onUpdate must be a function');
  }
  return new JobWaiter(stub, metadata, queue, jobId, timeoutMs, options?.signal, onUpdate).run();
}

/** One wait. Not thread-safe (one event loop); used once. */
class JobWaiter {
  /** performance.now() at which the wait times out; undefined: never. */
  private readonly deadline: number | undefined;
  /** The job as last seen. */
  private last: JobInfo | undefined;
  /** The next message is the first of a later call. */
  private resumed = false;
  /** Calls ended by the broker going away (brokerWentAway) since a message came. */
  private attempt = 0;

  constructor(
    private readonly stub: BrokerClient,
    private readonly metadata: () => grpc.Metadata,
    private readonly queue: string,
    private readonly jobId: string,
    private readonly timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
    private readonly onUpdate: ((job: JobInfo) => void) | undefined,
  ) {
    this.deadline = Number.isFinite(timeoutMs) ? performance.now() + timeoutMs : undefined;
  }

  async run(): Promise<JobInfo> {
    for (;;) {
      if (this.signal?.aborted) throw abortError(this.signal);
      const end = await this.follow();
      if (end instanceof JobInfo) return end;
      await this.sleep(this.retryDelay(end));
    }
  }

  /**
   * One WaitJob call: resolves with the finished job, or with the error the
   * call ended with; rejects with JobDeadError, WaitTimeoutError (no time
   * left to call), the abort error, what onUpdate threw, or INTERNAL (a
   * call that ended OK before the job finished).
   */
  private follow(): Promise<JobInfo | JobwireError> {
    const req: WaitJobRequest = { queue: this.queue, jobId: this.jobId };
    const callOptions: grpc.CallOptions = {};
    if (this.deadline !== undefined) {
      const left = this.deadline - performance.now();
      if (left <= 0) {
        return Promise.reject(new WaitTimeoutError(
          `job ${this.jobId} in queue ${this.queue} did not finish within ${this.timeoutMs} ms`, this.last));
      }
      req.timeoutMs = Math.max(1, Math.ceil(left));
      callOptions.deadline = new Date(Date.now() + left + WAIT_DEADLINE_MARGIN_MS);
    }
    this.resumed = this.last !== undefined;
    return new Promise((resolve, reject) => {
      const signal = this.signal;
      let settled = false;
      const call = this.stub.WaitJob(req, this.metadata(), callOptions);
      const settle = (cancel: boolean, fn: () => void) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        if (cancel) call.cancel();
        fn();
      };
      const onAbort = () => settle(true, () => reject(abortError(signal!)));
      call.on('data', (msg: WaitJobResponse__Output) => {
        if (settled) return;
        let job: JobInfo | undefined;
        try {
          job = this.take(msg);
          if (job === undefined) return;
          this.onUpdate?.(job);
          if (!this.finished(job)) return;
        } catch (e) {
          settle(true, () => reject(e));
          return;
        }
        const done = job;
        settle(true, () => resolve(done));
      });
      call.on('error', () => { /* handled in 'status' */ });
      call.on('status', (st: grpc.StatusObject) => settle(false, () => {
        if (st.code !== Status.OK) resolve(JobwireError.fromStatus(st));
        else reject(new JobwireError(Status.INTERNAL, `WaitJob ended before job ${this.jobId} in queue ${this.queue} finished`));
      }));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * The job a message carries, or undefined when it only repeats, as the
   * first message of a later call, the state, attempts and progress last
   * seen.
   */
  private take(msg: WaitJobResponse__Output): JobInfo | undefined {
    if (!msg.job) throw new JobwireError(Status.INTERNAL, 'WaitJob sent a message without a job');
    const job = new JobInfo(msg.job);
    const last = this.last;
    const repeat = this.resumed && last !== undefined && job.state === last.state && job.attempts === last.attempts
      && job.progressPercent === last.progressPercent && job.progressData.equals(last.progressData);
    this.resumed = false;
    this.attempt = 0;
    this.last = job;
    return repeat ? undefined : job;
  }

  /** True when the job is COMPLETED; throws JobDeadError when it is DEAD. */
  private finished(job: JobInfo): boolean {
    if (job.state === 'JOB_STATE_DEAD') throw new JobDeadError(job);
    return job.state === 'JOB_STATE_COMPLETED';
  }

  /**
   * How long to wait (ms) before calling again after a call failed with
   * `err` when the broker went away (brokerWentAway: UNAVAILABLE, the broker
   * restarts or drains, or Redis is down; or CANCELLED the client did not
   * cause, a draining gRPC C++ broker, grpc/grpc#41785), at most until the
   * deadline. Throws any other error: WaitTimeoutError for DEADLINE_EXCEEDED
   * with a timeout or the reason WAIT_TIMEOUT, else `err`. Never sees the
   * status of a call the client cancelled (follow() ignores it).
   */
  private retryDelay(err: JobwireError): number {
    if (err.code === Status.DEADLINE_EXCEEDED && (this.deadline !== undefined || err.reason === Reason.WAIT_TIMEOUT)) {
      throw new WaitTimeoutError(err.details, this.last, { reason: err.reason, metadata: err.metadata, cause: err });
    }
    if (!brokerWentAway(err)) throw err;
    let delay = reconnectDelayMs(this.attempt);
    if (this.attempt < 16) this.attempt++;
    if (this.deadline !== undefined) delay = Math.min(delay, Math.max(0, this.deadline - performance.now()));
    return delay;
  }

  /** Resolves after `ms`; rejects with the abort error when the signal aborts first. */
  private sleep(ms: number): Promise<void> {
    const signal = this.signal;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortError(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
