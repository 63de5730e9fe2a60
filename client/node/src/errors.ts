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

export { GrpcStatus as Status };
