import { status as GrpcStatus } from '@grpc/grpc-js';

/** gRPC status code number -> name ("UNAVAILABLE", ...). */
export function statusName(code: number): string {
  const name = (GrpcStatus as unknown as Record<number, string>)[code];
  return typeof name === 'string' ? name : `CODE_${code}`;
}

/**
 * A failed broker call. `code` is the gRPC status number (see
 * `@grpc/grpc-js` `status`), `codeName` its name, and `details` the broker's
 * message, unchanged.
 */
export class JobwireError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly details: string;

  constructor(code: number, details: string, options?: { cause?: unknown }) {
    const codeName = statusName(code);
    super(`${codeName}: ${details}`, options);
    this.name = 'JobwireError';
    this.code = code;
    this.codeName = codeName;
    this.details = details;
  }

  /** Wraps an error from grpc-js (a ServiceError) or anything else. */
  static from(err: unknown): JobwireError {
    if (err instanceof JobwireError) return err;
    const e = err as { code?: unknown; details?: unknown; message?: unknown };
    if (e && typeof e.code === 'number') {
      const details = typeof e.details === 'string' ? e.details : String(e.message ?? '');
      return new JobwireError(e.code, details, { cause: err });
    }
    return new JobwireError(GrpcStatus.UNKNOWN, String((e && e.message) ?? err), { cause: err });
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
 * The error text is "RetryAfterError: <message>". When the error is also
 * marked non-retryable (`nonRetryable: true`), that wins: the job goes DEAD.
 * Throws TypeError when delayMs is not a number (NaN included).
 */
export class RetryAfterError extends Error {
  /** The delay as given (ms); the Worker rounds and clamps it when sending. */
  readonly retryAfterMs: number;

  constructor(message: string, delayMs: number, options?: { cause?: unknown }) {
    if (typeof delayMs !== 'number' || Number.isNaN(delayMs)) {
      throw new TypeError(`jobwire RetryAfterError: delayMs must be a number of ms, got ${String(delayMs)}`);
    }
    super(message, options);
    this.name = 'RetryAfterError';
    this.retryAfterMs = delayMs;
  }
}

/**
 * The reason `job.signal` is aborted with when the lease is lost: the broker
 * answered ExtendLease FAILED_PRECONDITION or NOT_FOUND (the job was taken by
 * another worker, deleted, or settled). `cause` is that JobwireError. The
 * handler may stop early or ignore it; the Worker still sends the final Ack /
 * Fail, and reports its refusal.
 */
export class LeaseLostError extends Error {
  readonly queue: string;
  readonly jobId: string;
  /** The ExtendLease refusal's status (FAILED_PRECONDITION or NOT_FOUND) and name. */
  readonly code: number;
  readonly codeName: string;

  constructor(queue: string, jobId: string, cause: JobwireError) {
    super(`lease of job ${jobId} in queue ${queue} lost: ${cause.message}`, { cause });
    this.name = 'LeaseLostError';
    this.queue = queue;
    this.jobId = jobId;
    this.code = cause.code;
    this.codeName = cause.codeName;
  }
}

export { GrpcStatus as Status };
