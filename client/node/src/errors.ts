import { status as GrpcStatus } from '@grpc/grpc-js';
import { detailsFromMetadata } from './status_details';
import type { JobInfo } from './job_info';

/** gRPC status code number -> name ("UNAVAILABLE", ...). */
export function statusName(code: number): string {
  const name = (GrpcStatus as unknown as Record<number, string>)[code];
  return typeof name === 'string' ? name : `CODE_${code}`;
}

/**
 * The reasons the broker puts in its errors' google.rpc.ErrorInfo (domain
 * "jobwire.dev") and in the `reason` field of batch results
 * (proto/jobwire/v1/broker.proto, "Error details"): compare
 * `JobwireError.reason` with these. A reason keeps its meaning once
 * published, but new ones may be added, and an error no row of the contract
 * names has the name of its code as its reason ("UNAVAILABLE", "INTERNAL",
 * ...): treat `reason` as an open string, not as this union only. Frozen.
 */
export const Reason = Object.freeze({
  /** INVALID_ARGUMENT: a field breaks a documented limit; metadata.field and `field` name it. */
  INVALID_FIELD: 'INVALID_FIELD',
  /** NOT_FOUND: no such job in that queue. */
  JOB_NOT_FOUND: 'JOB_NOT_FOUND',
  /** NOT_FOUND (UpdateQueue): no such queue. */
  QUEUE_NOT_FOUND: 'QUEUE_NOT_FOUND',
  /**
   * NOT_FOUND (Enqueue): an id of dependsOn names no job of the queue; metadata.job_id: that id.
   * enqueueBatch also: a batch parent (dependsOnBatchIndex) that was not stored.
   */
  DEPENDENCY_NOT_FOUND: 'DEPENDENCY_NOT_FOUND',
  /** FAILED_PRECONDITION: the lease token is not the job's current lease; drop the job. */
  LEASE_STALE: 'LEASE_STALE',
  /** FAILED_PRECONDITION: the job's state refuses the call; metadata.state: "pending", "active", "completed" or "dead". */
  JOB_STATE: 'JOB_STATE',
  /** FAILED_PRECONDITION (ExtendLease, ReportProgress): Cancel asked this run to stop; Fail it (DEAD "cancelled") or let its lease run out. */
  JOB_CANCEL_REQUESTED: 'JOB_CANCEL_REQUESTED',
  /** FAILED_PRECONDITION (Ack, ExtendLease, ReportProgress): the run passed its deadline (Job.timeout_ms); the attempt fails with "timeout". */
  RUN_TIMED_OUT: 'RUN_TIMED_OUT',
  /** FAILED_PRECONDITION (DeleteQueue without force). */
  QUEUE_HAS_ACTIVE_JOBS: 'QUEUE_HAS_ACTIVE_JOBS',
  /** FAILED_PRECONDITION (UpdateQueue). */
  PARTITIONS_DECREASE: 'PARTITIONS_DECREASE',
  /** ALREADY_EXISTS (CreateQueue). */
  QUEUE_EXISTS: 'QUEUE_EXISTS',
  /** UNAUTHENTICATED: no bearer token was sent. */
  TOKEN_MISSING: 'TOKEN_MISSING',
  /** UNAUTHENTICATED: the token is malformed or unknown. */
  TOKEN_INVALID: 'TOKEN_INVALID',
  /** PERMISSION_DENIED; metadata.queue: the queue (absent for ListQueues). */
  TOKEN_NOT_PERMITTED: 'TOKEN_NOT_PERMITTED',
  /** RESOURCE_EXHAUSTED: Redis is over its maxmemory; `retryDelayMs` says when to retry. */
  REDIS_OUT_OF_MEMORY: 'REDIS_OUT_OF_MEMORY',
  /** RESOURCE_EXHAUSTED (Claim); `retryDelayMs` says when to retry. */
  TOO_MANY_CLAIM_STREAMS: 'TOO_MANY_CLAIM_STREAMS',
  /** RESOURCE_EXHAUSTED (WaitJob): the broker follows too many jobs; `retryDelayMs` says when to retry. */
  TOO_MANY_WAITS: 'TOO_MANY_WAITS',
  /** DEADLINE_EXCEEDED (WaitJob): the job did not finish within the call's timeout_ms. */
  WAIT_TIMEOUT: 'WAIT_TIMEOUT',
  /** RESOURCE_EXHAUSTED (Subscribe): the broker serves too many subscriptions; `retryDelayMs` says when to retry. */
  TOO_MANY_SUBSCRIPTIONS: 'TOO_MANY_SUBSCRIPTIONS',
  /** RESOURCE_EXHAUSTED (Subscribe): the client fell too far behind; subscribe again (a Subscription does so by itself). */
  SUBSCRIBER_TOO_SLOW: 'SUBSCRIBER_TOO_SLOW',
  /** UNAVAILABLE: Redis cannot be reached, or answered with a transient error. */
  REDIS_UNAVAILABLE: 'REDIS_UNAVAILABLE',
  /** UNAVAILABLE: this broker replica is draining; reconnect (to another replica). */
  BROKER_SHUTTING_DOWN: 'BROKER_SHUTTING_DOWN',
  /** UNAVAILABLE (Claim): the stream reached the broker's --max_stream_age_ms; reconnect at once. */
  CLAIM_STREAM_MAX_AGE: 'CLAIM_STREAM_MAX_AGE',
  /** DATA_LOSS: the job's stored record is damaged. */
  JOB_RECORD_CORRUPT: 'JOB_RECORD_CORRUPT',
} as const);

/** One of the reasons the contract names (see the `Reason` object). */
export type Reason = (typeof Reason)[keyof typeof Reason];

/** What a JobwireError carries besides its code and message (all optional). */
export interface JobwireErrorOptions {
  cause?: unknown;
  /** The error's reason (ErrorInfo.reason, or a batch result's `reason`); default ''. */
  reason?: string;
  /** ErrorInfo.metadata; default {}. */
  metadata?: Record<string, string>;
  /** BadRequest: the field violation's field path. */
  field?: string;
  /** RetryInfo: how long to wait before retrying, in ms. */
  retryDelayMs?: number;
}

/**
 * A failed broker call. `code` is the gRPC status number (see
 * `@grpc/grpc-js` `status`), `codeName` its name, and `details` the broker's
 * message, unchanged.
 *
 * The error details the broker attaches (broker.proto, "Error details";
 * decoded from the "grpc-status-details-bin" trailer by JobwireError.from):
 * `reason` is the stable machine-readable cause (compare it with `Reason`),
 * `metadata` the ErrorInfo's key/values ("field", "state", "queue",
 * "job_id"), `field` the BadRequest's field path (INVALID_FIELD),
 * `retryDelayMs` the RetryInfo's delay (REDIS_OUT_OF_MEMORY,
 * TOO_MANY_CLAIM_STREAMS, TOO_MANY_WAITS, TOO_MANY_SUBSCRIPTIONS). A
 * per-item error of a
 * batch call (enqueueBatch, ackBatch, the Worker's coalesced acks) has the
 * result's `reason` and no metadata, field or delay. An error without details
 * (raised by grpc-js itself: DEADLINE_EXCEEDED, an unreachable broker, ...,
 * or by this package) has reason '' and metadata {}.
 */
export class JobwireError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly details: string;
  /** ErrorInfo.reason (domain "jobwire.dev"), or the batch result's reason; '' when none. */
  readonly reason: string;
  /** ErrorInfo.metadata; {} when none. */
  readonly metadata: Record<string, string>;
  /** The BadRequest field violation's field path (e.g. "priority"); undefined without a BadRequest. */
  readonly field?: string;
  /** RetryInfo.retry_delay in ms (rounded up); undefined without a RetryInfo. */
  readonly retryDelayMs?: number;

  constructor(code: number, details: string, options?: JobwireErrorOptions) {
    const codeName = statusName(code);
    super(`${codeName}: ${details}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'JobwireError';
    this.code = code;
    this.codeName = codeName;
    this.details = details;
    this.reason = options?.reason ?? '';
    this.metadata = { ...(options?.metadata ?? {}) };
    if (options?.field !== undefined) this.field = options.field;
    if (options?.retryDelayMs !== undefined) this.retryDelayMs = options.retryDelayMs;
  }

  /**
   * Wraps an error from grpc-js (a ServiceError: its `metadata` holds the
   * broker's "grpc-status-details-bin" trailer, decoded into reason,
   * metadata, field and retryDelayMs) or anything else (UNKNOWN). A
   * JobwireError is returned as is.
   */
  static from(err: unknown): JobwireError {
    if (err instanceof JobwireError) return err;
    const e = err as { code?: unknown; details?: unknown; message?: unknown; metadata?: unknown };
    if (e && typeof e.code === 'number') {
      const details = typeof e.details === 'string' ? e.details : String(e.message ?? '');
      return new JobwireError(e.code, details, { ...detailsFromMetadata(e.metadata), cause: err });
    }
    return new JobwireError(GrpcStatus.UNKNOWN, String((e && e.message) ?? err), { cause: err });
  }

  /**
   * A JobwireError from a grpc-js StatusObject (a stream's 'status' event):
   * code, details and the error details of its metadata.
   */
  static fromStatus(st: { code: number; details: string; metadata?: unknown }): JobwireError {
    return new JobwireError(st.code, st.details, detailsFromMetadata(st.metadata));
  }
}

/** The details grpc-js gives the status of a call the client cancelled itself (`call.cancel()`). */
const CLIENT_CANCEL_DETAILS = 'Cancelled on client';

/**
 * True when a call of Client.wait or a Subscription, or a Worker's Ack / Fail
 * (lease_rules.ts, outcomeUnanswered), ended with `err` because the broker
 * went away, so calling again later may succeed: UNAVAILABLE (a
 * broker restarting or draining, a lost connection, Redis down), or
 * CANCELLED that this client did not cause. The latter is how gRPC C++ core
 * (grpc/grpc#41785, seen with 1.51) ends a call that reached a draining broker
 * after Server::Shutdown began and before the client processed its GOAWAY
 * (gRPC's status-code guide says server shutdown is UNAVAILABLE). Not for
 * other unary calls of the Client (their callers see the error as is).
 *
 * The caller must not pass the status of a call it cancelled itself (abort,
 * close, settle): wait.ts and subscribe.ts ignore that status (their call is
 * marked settled / closed before it is cancelled); the Worker never cancels
 * an Ack / Fail call (its Work stream's acks, when it cancels the stream, go
 * again as AckBatch calls). As a second guard, a
 * CANCELLED with grpc-js's own "Cancelled on client" details never counts.
 * @internal
 */
export function brokerWentAway(err: JobwireError): boolean {
  if (err.code === GrpcStatus.UNAVAILABLE) return true;
  return err.code === GrpcStatus.CANCELLED && err.details !== CLIENT_CANCEL_DETAILS;
}

/**
 * Client.wait: the job ended DEAD (failed non-retryable, out of attempts, or
 * cancelled). `job` is the job as the broker sent it last (`job.error`: its
 * last error text). The WaitJob call itself succeeded: this error is made by
 * the client, with code FAILED_PRECONDITION (the job's state refuses what the
 * caller waited for), reason '' and the details
 * "job <id> in queue <queue> is dead: <job.error>".
 */
export class JobDeadError extends JobwireError {
  readonly job: JobInfo;

  constructor(job: JobInfo) {
    super(GrpcStatus.FAILED_PRECONDITION, `job ${job.id} in queue ${job.queue} is dead: ${job.error}`);
    this.name = 'JobDeadError';
    this.job = job;
  }
}

/**
 * Client.wait: its `timeoutMs` passed before the job finished. Code
 * DEADLINE_EXCEEDED; `reason` is WAIT_TIMEOUT with the broker's message when
 * the broker ended the wait, '' when the client did (the call's own deadline,
 * or the time ran out while it waited to call again after UNAVAILABLE or the
 * broker's CANCELLED).
 * `lastJob`: the job as last seen (its latest state), undefined when no
 * message came.
 */
export class WaitTimeoutError extends JobwireError {
  readonly lastJob: JobInfo | undefined;

  constructor(details: string, lastJob: JobInfo | undefined, options?: JobwireErrorOptions) {
    super(GrpcStatus.DEADLINE_EXCEEDED, details, options);
    this.name = 'WaitTimeoutError';
    this.lastJob = lastJob;
  }
}

/**
 * Throw this from a handler to fail the job for good: the broker marks it
 * DEAD whatever attempts remain (`non_retryable`).
 */
export class NonRetryableError extends Error {
  constructor(message?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/** The broker's limit of FailRequest.retry_after_ms: 7 days. */
export const MAX_RETRY_AFTER_MS = 7 * 24 * 3600 * 1000;

/**
 * Throw this from a handler to fail the job with "retry after delayMs": the
 * Worker sends Fail with retry_after_ms = delayMs rounded up to a whole ms, at
 * least 1, at most 7 days (MAX_RETRY_AFTER_MS), instead of the job's backoff.
 * The error text is "RetryAfterError: <message>".
 *
 * With `{ keepAttempt: true }` the run was turned away rather than failed (a
 * downstream answered "rate limited, retry after X"): the Fail also carries
 * keep_attempt, so this run does not count as an attempt and never uses up
 * maxAttempts (docs/semantics.md, "Retries and backoff"); a run that Cancel
 * asked to stop, or past its deadline, counts anyway.
 *
 * When the error is also marked non-retryable (`nonRetryable: true`), that
 * wins: the job goes DEAD, and neither the delay nor keep_attempt is sent.
 * Throws TypeError when delayMs is not a number (NaN included).
 */
export class RetryAfterError extends Error {
  /** The delay as given (ms); the Worker rounds and clamps it when sending. */
  readonly retryAfterMs: number;
  /** True: this run does not count as an attempt (Fail.keep_attempt). */
  readonly keepAttempt: boolean;

  constructor(message: string, delayMs: number, options?: { cause?: unknown; keepAttempt?: boolean }) {
    if (typeof delayMs !== 'number' || Number.isNaN(delayMs)) {
      throw new TypeError(`jobwire RetryAfterError: delayMs must be a number of ms, got ${String(delayMs)}`);
    }
    super(message, options); // Error reads only `cause` from it
    this.name = 'RetryAfterError';
    this.retryAfterMs = delayMs;
    this.keepAttempt = options?.keepAttempt === true;
  }
}

/**
 * The reason `job.signal` is aborted with when the lease is lost: the broker
 * answered ExtendLease FAILED_PRECONDITION or NOT_FOUND (the job was taken by
 * another worker, deleted, or settled), except FAILED_PRECONDITION with
 * reason JOB_CANCEL_REQUESTED or RUN_TIMED_OUT (a JobCancelledError instead).
 * `cause` is that JobwireError. The handler may stop early or ignore it; the
 * Worker still sends the final Ack / Fail, and reports its refusal.
 */
export class LeaseLostError extends Error {
  readonly queue: string;
  readonly jobId: string;
  /** The ExtendLease refusal's status (FAILED_PRECONDITION or NOT_FOUND) and name. */
  readonly code: number;
  readonly codeName: string;
  /** The refusal's reason (LEASE_STALE, JOB_NOT_FOUND, JOB_STATE, ...; see Reason). */
  readonly reason: string;

  constructor(queue: string, jobId: string, cause: JobwireError) {
    super(`lease of job ${jobId} in queue ${queue} lost: ${cause.message}`, { cause });
    this.name = 'LeaseLostError';
    this.queue = queue;
    this.jobId = jobId;
    this.code = cause.code;
    this.codeName = cause.codeName;
    this.reason = cause.reason;
  }
}

/** Why a run was told to stop: Cancel asked it to ('cancelled'), or it passed its deadline ('timeout'). */
export type StopReason = 'cancelled' | 'timeout';

/**
 * The reason `job.signal` is aborted with when the run is told to stop
 * (docs: README, "Cancel, timeout and progress"): `reason` 'cancelled' when
 * Cancel asked it to (a StopRun on the Claim stream, or ExtendLease /
 * ReportProgress refused with JOB_CANCEL_REQUESTED), 'timeout' when it passed
 * its deadline (`job.deadline` on the worker's clock, or a refusal with
 * RUN_TIMED_OUT). `cause`: that refusal's JobwireError, else undefined. Also
 * what `job.reportProgress` rejects with once the run was told to stop. A
 * handler that throws after it is Failed with the error text `reason` (the
 * broker records "cancelled" / "timeout" whatever the text); one that returns
 * is Acked (the broker completes a cancelled run; it refuses an Ack past the
 * deadline with RUN_TIMED_OUT, reported as 'ack_error').
 */
export class JobCancelledError extends Error {
  readonly queue: string;
  readonly jobId: string;
  readonly reason: StopReason;

  constructor(queue: string, jobId: string, reason: StopReason, options?: { cause?: unknown }) {
    const what = reason === 'timeout' ? 'passed its run timeout' : 'was cancelled';
    super(`job ${jobId} in queue ${queue} ${what}`, options);
    this.name = 'JobCancelledError';
    this.queue = queue;
    this.jobId = jobId;
    this.reason = reason;
  }
}

export { GrpcStatus as Status };
