/**
 * The EnqueueRequest of one job, built from enqueue's / enqueueBatch's
 * arguments (EnqueueOptions, client.ts), with the checks that throw
 * TypeError before anything is sent.
 */
import { encodeValue } from './codec';
import type { EnqueueOptions } from './client';
import type { EnqueueRequest } from './generated/jobwire/v1/EnqueueRequest';

/**
 * The headers of an EnqueueRequest: a copy of `h` (own enumerable keys, so a
 * key such as `__proto__` stays a key), or undefined for none. Throws
 * TypeError unless `h` is a plain object whose values are strings.
 */
function headersOf(h: unknown): Record<string, string> | undefined {
  if (h === undefined || h === null) return undefined;
  const proto: unknown = typeof h === 'object' ? Object.getPrototypeOf(h) : undefined;
  if (typeof h !== 'object' || (proto !== Object.prototype && proto !== null)) {
    throw new TypeError('jobwire: options.headers must be a plain object of string keys and string values');
  }
  const entries = Object.entries(h as Record<string, unknown>);
  if (entries.length === 0) return undefined;
  for (const [k, v] of entries) {
    if (typeof v !== 'string') {
      throw new TypeError(`jobwire: options.headers[${JSON.stringify(k)}] must be a string, got ${v === null ? 'null' : typeof v}`);
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/**
 * The depends_on of an EnqueueRequest: a copy of `ids`, or undefined for
 * none. Throws TypeError unless `ids` is an array of strings.
 */
function dependsOnOf(ids: unknown): string[] | undefined {
  if (ids === undefined || ids === null) return undefined;
  if (!Array.isArray(ids)) {
    throw new TypeError('jobwire: options.dependsOn must be an array of job ids (strings)');
  }
  for (const [i, id] of ids.entries()) {
    if (typeof id !== 'string') {
      throw new TypeError(`jobwire: options.dependsOn[${i}] must be a string, got ${id === null ? 'null' : typeof id}`);
    }
  }
  return ids.length === 0 ? undefined : [...(ids as string[])];
}

/**
 * The depends_on_batch_index of an EnqueueRequest: a copy of `indexes`, or
 * undefined for none. Throws TypeError unless `indexes` is an array of
 * integers in int32 (what the request can carry; the broker checks the rest).
 */
function dependsOnBatchIndexOf(indexes: unknown): number[] | undefined {
  if (indexes === undefined || indexes === null) return undefined;
  if (!Array.isArray(indexes)) {
    throw new TypeError('jobwire: options.dependsOnBatchIndex must be an array of batch indexes (integers)');
  }
  for (const [i, index] of indexes.entries()) {
    if (typeof index !== 'number' || !Number.isInteger(index) || index < -0x80000000 || index > 0x7fffffff) {
      throw new TypeError(`jobwire: options.dependsOnBatchIndex[${i}] must be an int32 integer, got ${typeof index === 'number' ? index : index === null ? 'null' : typeof index}`);
    }
  }
  return indexes.length === 0 ? undefined : [...(indexes as number[])];
}

/**
 * Builds the EnqueueRequest of one job. Throws TypeError on malformed
 * headers, dependsOn or dependsOnBatchIndex (see EnqueueOptions).
 */
export function toEnqueueRequest(queue: string, type: string, payload: unknown, o: EnqueueOptions = {}): EnqueueRequest {
  const req: EnqueueRequest = { queue, type, payload: encodeValue(payload) };
  if (o.priority !== undefined) req.priority = o.priority;
  if (o.delayMs !== undefined) req.delayMs = o.delayMs;
  if (o.runAt !== undefined) req.runAtMs = o.runAt instanceof Date ? o.runAt.getTime() : o.runAt;
  if (o.maxAttempts !== undefined) req.maxAttempts = o.maxAttempts;
  if (o.idempotencyKey !== undefined) req.idempotencyKey = o.idempotencyKey;
  if (o.concurrencyKey !== undefined) req.concurrencyKey = o.concurrencyKey;
  if (o.backoffBaseMs !== undefined) req.backoffBaseMs = o.backoffBaseMs;
  if (o.backoffMaxMs !== undefined) req.backoffMaxMs = o.backoffMaxMs;
  if (o.completedRetentionMs !== undefined) req.completedRetentionMs = o.completedRetentionMs;
  if (o.runTimeoutMs !== undefined) req.timeoutMs = o.runTimeoutMs;
  const headers = headersOf(o.headers);
  if (headers !== undefined) req.headers = headers;
  const dependsOn = dependsOnOf(o.dependsOn);
  if (dependsOn !== undefined) req.dependsOn = dependsOn;
  if (o.runAfterFailedDependency !== undefined) req.runAfterFailedDependency = o.runAfterFailedDependency;
  const dependsOnBatchIndex = dependsOnBatchIndexOf(o.dependsOnBatchIndex);
  if (dependsOnBatchIndex !== undefined) req.dependsOnBatchIndex = dependsOnBatchIndex;
  return req;
}
