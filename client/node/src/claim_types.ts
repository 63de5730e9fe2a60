/**
 * The job types a Worker's Claim names (ClaimRequest.types; docs/clients.md,
 * Worker): those it has handlers for, so that the broker delivers it only
 * those. A job of another type waits pending, using no attempt, for a worker
 * that takes it.
 */

/** ClaimRequest.types names at most this many types (broker.proto). */
export const MAX_CLAIM_TYPES = 64;

/**
 * What run() checks before it starts, given the number of job types with a
 * handler. Throws an Error when there is none (an empty `types` would claim
 * every type), a RangeError when there are more than MAX_CLAIM_TYPES (the
 * broker would refuse the Claim).
 */
export function checkHandlerCount(n: number): void {
  if (n === 0) {
    throw new Error('jobwire Worker: no handler registered; register(type, handler) before run() ' +
      '(the Worker claims only the job types it has handlers for)');
  }
  if (n > MAX_CLAIM_TYPES) {
    throw new RangeError(`jobwire Worker: ${n} job types have handlers; a Worker takes at most ` +
      `${MAX_CLAIM_TYPES} (ClaimRequest.types)`);
  }
}

/** The `types` of a ClaimRequest: the job types with a handler as they are now, sorted. */
export function claimTypes(types: Iterable<string>): string[] {
  return [...types].sort();
}
