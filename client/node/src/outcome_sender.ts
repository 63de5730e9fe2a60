/**
 * Settling a held job (docs/clients.md, Worker): its Ack (through the
 * AckCoalescer) or its Fail, retried when unanswered (UNAVAILABLE /
 * DEADLINE_EXCEEDED / a CANCELLED the client did not cause:
 * lease_rules.ts, outcomeUnanswered) until
 * the lease has ended by the worker's own estimate, per job (an attempt sent
 * while that job's lease was known lost is final: withOutcomeRetry), and its
 * final outcome reported (ack_ok / ack_error / ack_unknown, fail_ok /
 * fail_error / fail_unknown). The lease is renewed meanwhile (LeaseRenewer:
 * a renewal moves the estimate, a refused one marks the lease lost); its
 * renewal is stopped once the outcome is decided, before it is reported.
 */
import type * as grpc from '@grpc/grpc-js';
import type { AckCoalescer } from './ack_coalescer';
import type { LeaseRenewer } from './lease_renewer';
import { toNumber } from './codec';
import { JobwireError } from './errors';
import type { Failure } from './failure';
import type { HeldJob } from './held_job';
import type { Outcome } from './job';
import { mayResend, outcomeUnanswered, retryWait } from './lease_rules';
import { unary, type BrokerClient } from './proto';
import type { Logger } from './worker_options';
import type { FailResponse__Output } from './generated/jobwire/v1/FailResponse';

/** Backoff of Ack / Fail retries when unanswered (outcomeUnanswered): 100 ms doubling to 2 s, full jitter. */
const OUTCOME_RETRY_BASE_MS = 100;
const OUTCOME_RETRY_MAX_MS = 2000;

/**
 * The backoff (ms) after the `attempt`-th Ack / Fail attempt of a job (0 for
 * the first) went unanswered (outcomeUnanswered), before retryWait
 * clips it: uniform in [0, d] ("full jitter", as the Claim stream's reopen
 * and the Go client), d = 100 ms doubled per attempt, at most 2 s.
 */
export function outcomeRetryDelayMs(attempt: number, random: () => number = Math.random): number {
  const cap = Math.min(OUTCOME_RETRY_MAX_MS, OUTCOME_RETRY_BASE_MS * 2 ** Math.min(Math.max(attempt, 0), 16));
  return Math.floor(random() * (cap + 1));
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Why the log says an unanswered Ack / Fail of h was not sent again (its last attempt was sent while lost, or at the lease end). */
const givenUp = (h: HeldJob) => (h.leaseLost ? 'when sent after its lease was lost (not sent again)' : 'when its lease ended');

export interface OutcomeSenderParams {
  stub: BrokerClient;
  acks: AckCoalescer;
  metadata: () => grpc.Metadata;
  /** Deadline of each Fail call (WorkerOptions.timeoutMs). */
  timeoutMs: number;
  /** Renews the leases of the jobs being settled; stopped once an outcome is decided. */
  renewer: Pick<LeaseRenewer, 'stop'>;
  log: Logger | null;
  /** Receives every final outcome. */
  report: (o: Outcome) => void;
}

/** Not thread-safe (one event loop); owned by one Worker run. */
export class OutcomeSender {
  constructor(private readonly p: OutcomeSenderParams) {}

  /** Acks h with result and reports the outcome; never rejects. */
  async ack(h: HeldJob, result: Buffer): Promise<void> {
    try {
      // Through the coalescer (AckBatch); a retry queues this ack again, same token.
      await this.withOutcomeRetry(h, () => this.p.acks.ack({
        queue: h.job.queue, jobId: h.job.id, leaseToken: h.token, result,
      }));
      this.p.report({ kind: 'ack_ok', job: h.job, leaseLost: h.leaseLostWhileRunning });
    } catch (e) {
      const err = JobwireError.from(e);
      const unknown = outcomeUnanswered(err);
      this.p.log?.warn(unknown
        ? `Ack of job ${h.job.id} unanswered ${givenUp(h)} (${err.message}); it may or may not be stored`
        : `Ack of job ${h.job.id} refused: ${err.message}`);
      this.p.report({
        kind: unknown ? 'ack_unknown' : 'ack_error', job: h.job, code: err.code, codeName: err.codeName, error: err,
        leaseLost: h.leaseLostWhileRunning,
      });
    }
  }

  /** Fails h as `failure` says and reports the outcome; never rejects. */
  async fail(h: HeldJob, failure: Failure): Promise<void> {
    const { text, nonRetryable, retryAfterMs, keepAttempt } = failure;
    try {
      const res = await this.withOutcomeRetry(h, () => unary<object, FailResponse__Output>(this.p.stub, 'Fail', {
        queue: h.job.queue, jobId: h.job.id, leaseToken: h.token, error: text, nonRetryable, retryAfterMs,
        keepAttempt,
      }, this.p.timeoutMs, this.p.metadata()));
      const outcome = res.outcome === 'OUTCOME_DEAD' ? 'DEAD' : 'RETRY_SCHEDULED';
      this.p.report({
        kind: 'fail_ok', job: h.job, failOutcome: outcome, nextAttemptAtMs: toNumber(res.nextAttemptAtMs),
        failText: text, nonRetryable, retryAfterMs, keepAttempt, leaseLost: h.leaseLostWhileRunning,
      });
    } catch (e) {
      const err = JobwireError.from(e);
      const unknown = outcomeUnanswered(err);
      this.p.log?.warn(unknown
        ? `Fail of job ${h.job.id} unanswered ${givenUp(h)} (${err.message}); it may or may not be stored`
        : `Fail of job ${h.job.id} refused: ${err.message}`);
      this.p.report({
        kind: unknown ? 'fail_unknown' : 'fail_error', job: h.job, code: err.code, codeName: err.codeName, error: err,
        failText: text, nonRetryable, retryAfterMs, keepAttempt, leaseLost: h.leaseLostWhileRunning,
      });
    }
  }

  /**
   * Runs an Ack or Fail, retrying when unanswered (outcomeUnanswered:
   * UNAVAILABLE, DEADLINE_EXCEEDED, a CANCELLED the client did not cause)
   * with backoff until the lease has ended by the local estimate, the last
   * attempts just before and at its end (retryWait), or the stop grace is
   * over. An attempt sent while h's lease was already known lost is final
   * (mayResend): the broker refuses it, unless an earlier attempt of this job
   * was stored, which it answers again. One unanswered when the lease has
   * been learnt lost since it was sent (maybe because that attempt completed
   * the job, its answer lost) is sent once more, at once, whatever the lease
   * estimate: sent while lost, its answer is final. An unanswered error
   * thrown means the outcome is unknown. Either way the outcome is decided
   * when it returns: h's lease renewal is stopped then, before the outcome
   * is reported.
   */
  private async withOutcomeRetry<T>(h: HeldJob, call: () => Promise<T>): Promise<T> {
    try {
      return await this.retrying(h, call);
    } finally {
      this.p.renewer.stop(h);
    }
  }

  private async retrying<T>(h: HeldJob, call: () => Promise<T>): Promise<T> {
    let attempt = 0;
    for (;;) {
      const lostWhenSent = h.leaseLost;
      try {
        return await call();
      } catch (e) {
        const err = JobwireError.from(e);
        if (!mayResend(err, lostWhenSent) || h.abandoned) throw err;
        if (h.leaseLost) continue; // learnt lost since it was sent: once more, at once
        // Learnt lost during the wait: the next attempt is the last.
        const wait = retryWait(outcomeRetryDelayMs(attempt++), h.localLeaseDeadline - Date.now());
        if (wait === undefined) throw err;
        await sleep(wait);
        if (h.abandoned) throw err;
      }
    }
  }
}
