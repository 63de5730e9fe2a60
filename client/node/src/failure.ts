/**
 * What a Worker sends in Fail for a handler's throw (docs/clients.md, Worker):
 * the error text and its size limit, non_retryable, retry_after_ms,
 * keep_attempt.
 */
import { MAX_RETRY_AFTER_MS, NonRetryableError, RetryAfterError, type StopReason } from './errors';

/** FailRequest.error is at most 64 KiB of UTF-8 (the broker's limit). */
export const MAX_ERROR_BYTES = 64 * 1024;

/** The Fail fields derived from a thrown value. */
export interface Failure {
  /** "<ErrorType>: <message>", cut to MAX_ERROR_BYTES. */
  text: string;
  nonRetryable: boolean;
  /** > 0: retry after this many ms instead of the backoff; 0: the backoff (or DEAD). */
  retryAfterMs: number;
  /** Only with retryAfterMs > 0: this run does not count as an attempt (keep_attempt). */
  keepAttempt: boolean;
}

/**
 * The longest prefix of `text` whose UTF-8 encoding fits in maxBytes, cut
 * at a character boundary (never a partial UTF-8 sequence), nothing appended.
 * A lone surrogate (which UTF-8 cannot carry) becomes U+FFFD, as in every
 * client: a Fail must be valid UTF-8.
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return bytes.toString('utf8');
  let end = maxBytes;
  // bytes[end] is the first byte left out: while it continues a sequence
  // (10xxxxxx), that character straddles the cut and goes too.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/** "<ErrorType>: <message>" of anything thrown by a handler, at most 64 KiB of UTF-8. */
export function errorText(err: unknown): string {
  let text: string;
  if (err instanceof Error) {
    // A subclass that does not set `name` inherits 'Error': name it after its
    // class (`class ValidationError extends Error` -> "ValidationError").
    let type = err.name;
    if (!type || type === 'Error') type = err.constructor?.name || 'Error';
    text = `${type}: ${err.message}`;
  }
  else text = `Error: ${typeof err === 'string' ? err : safeString(err)}`;
  return truncateUtf8(text, MAX_ERROR_BYTES);
}

/**
 * retry_after_ms for a thrown value: a RetryAfterError, or any object with a
 * numeric `retryAfterMs` > 0, gives that delay rounded up to a whole ms, at
 * least 1, at most MAX_RETRY_AFTER_MS; anything else 0 (the job's backoff).
 */
export function retryAfterMsOf(err: unknown): number {
  if (typeof err !== 'object' || err === null) return 0;
  const ra = (err as { retryAfterMs?: unknown }).retryAfterMs;
  if (typeof ra !== 'number' || Number.isNaN(ra)) return 0;
  if (!(err instanceof RetryAfterError) && ra <= 0) return 0;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(1, Math.ceil(ra)));
}

/** A NonRetryableError, or any object with `nonRetryable: true`. */
export function isNonRetryable(err: unknown): boolean {
  return err instanceof NonRetryableError ||
    (typeof err === 'object' && err !== null && (err as { nonRetryable?: unknown }).nonRetryable === true);
}

/**
 * The Fail of a handler's throw; non-retryable wins over a retry delay and
 * keep_attempt (neither is sent then). keep_attempt: a RetryAfterError made
 * with `{ keepAttempt: true }`, or any thrown object with a retry delay and
 * `keepAttempt: true`. A run told to stop (`stopped`: 'cancelled' /
 * 'timeout') has that as its error text, whatever was thrown (the broker
 * records it so anyway, and counts the run whatever keep_attempt says).
 */
export function failureOf(err: unknown, stopped?: StopReason): Failure {
  const nonRetryable = isNonRetryable(err);
  const retryAfterMs = nonRetryable ? 0 : retryAfterMsOf(err);
  const keepAttempt = retryAfterMs > 0 && (err as { keepAttempt?: unknown }).keepAttempt === true;
  return { text: stopped ?? errorText(err), nonRetryable, retryAfterMs, keepAttempt };
}

function safeString(v: unknown): string {
  try {
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  } catch {
    return String(v);
  }
}
