/**
 * Per-call options of the Client's unary calls (an AbortSignal and a
 * deadline), and the one rule for what an aborted call rejects with.
 */

/** The optional last argument of every unary Client call. */
export interface CallOptions {
  /**
   * Cancels the call: aborted before the call, the promise rejects at once
   * and nothing is sent; aborted while it is in flight, the gRPC call is
   * cancelled (the broker sees the stream reset) and the promise rejects at
   * once, without waiting for the broker. Either way it rejects with
   * `abortError(signal)`, never a JobwireError. An abort that comes after the
   * broker answered changes nothing. A cancelled Enqueue / AckBatch may still
   * have been stored by the broker if it had already read the request.
   */
  signal?: AbortSignal;
  /**
   * Deadline of this call in ms (a finite number > 0), instead of the
   * client's `timeoutMs`. Past it the call rejects with JobwireError
   * DEADLINE_EXCEEDED.
   */
  timeoutMs?: number;
}

/**
 * What a call aborted by `signal` rejects with: `signal.reason` itself when it
 * is an Error (the default reason of `controller.abort()` is a DOMException
 * named 'AbortError'; `AbortSignal.timeout()` gives one named
 * 'TimeoutError'), else a new DOMException named 'AbortError' whose `cause`
 * is that reason.
 */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const err = new DOMExceptionCtor('The operation was aborted', 'AbortError');
  // Set here: Node 18's DOMException takes no options object.
  Object.defineProperty(err, 'cause', { value: reason, writable: true, configurable: true, enumerable: false });
  return err;
}

/** Node's global DOMException (17+), which lib ES2022 does not declare. */
const DOMExceptionCtor = (globalThis as unknown as {
  DOMException: new (message?: string, name?: string) => Error;
}).DOMException;

/**
 * The deadline (ms) of one call: `options.timeoutMs` when set, else
 * `defaultMs`. Throws TypeError on a timeoutMs that is not a finite number
 * > 0, or a signal that is not an AbortSignal.
 */
export function callTimeoutMs(options: CallOptions | undefined, defaultMs: number): number {
  const signal = options?.signal;
  if (signal !== undefined && signal !== null
      && (typeof signal !== 'object' || typeof (signal as AbortSignal).addEventListener !== 'function')) {
    throw new TypeError('jobwire: options.signal must be an AbortSignal');
  }
  const t = options?.timeoutMs;
  if (t === undefined || t === null) return defaultMs;
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) {
    throw new TypeError(`jobwire: options.timeoutMs must be a finite number of ms > 0, got ${String(t)}`);
  }
  return t;
}
