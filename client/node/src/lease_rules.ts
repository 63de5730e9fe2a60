/**
 * The lease rules every Worker follows (docs/clients.md, Worker).
 */
import { Status } from './errors';

/**
 * How long before the estimated lease end the next-to-last Ack / Fail
 * attempt is sent, so that it reaches the broker while the lease still holds;
 * the last attempt is sent at the end.
 */
export const FINAL_LEAD_MS = 100;

/**
 * Whether an Ack / Fail attempt answered `code` may be sent again: only after
 * UNAVAILABLE / DEADLINE_EXCEEDED, and only when the lease was not already
 * known lost when it was sent (`lostWhenSent`: a renewal had been refused, so
 * the broker refuses it unless an earlier attempt was stored). false: its
 * outcome is final (unknown when `code` is one of those two). A lease learnt
 * lost after the attempt was sent allows one more attempt, sent at once
 * (OutcomeSender); that one is sent while lost.
 */
export function mayResend(code: number, lostWhenSent: boolean): boolean {
  return (code === Status.UNAVAILABLE || code === Status.DEADLINE_EXCEEDED) && !lostWhenSent;
}

/**
 * The wait before the next Ack / Fail attempt after one answered UNAVAILABLE
 * / DEADLINE_EXCEEDED: `waitMs` (the jittered backoff), clipped so that an
 * attempt is made FINAL_LEAD_MS before the lease end and a last one at the
 * end. `leftMs`: time until the estimated lease end. undefined when the
 * lease has ended (no attempt is left: the outcome is unknown).
 */
export function retryWait(waitMs: number, leftMs: number): number | undefined {
  if (leftMs <= 0) return undefined;
  if (leftMs > FINAL_LEAD_MS && waitMs >= leftMs - FINAL_LEAD_MS) return leftMs - FINAL_LEAD_MS;
  return Math.min(waitMs, leftMs);
}

/**
 * How long ago (ms, >= 0) the lease of a delivery ended, or undefined while
 * it lasts. It has ended when the local wall clock `nowMs` is at or past
 * `leaseExpiresAtMs` (epoch ms on the Redis clock: this assumes the worker's
 * and Redis's clocks agree to well within a lease, e.g. NTP), or when
 * `localDeadlineMs` (the worker's own estimate: receipt time plus the lease
 * length) has passed.
 */
export function leaseEndedAgoMs(nowMs: number, leaseExpiresAtMs: number, localDeadlineMs: number): number | undefined {
  let ago = nowMs - localDeadlineMs;
  if (leaseExpiresAtMs > 0) ago = Math.max(ago, nowMs - leaseExpiresAtMs);
  return ago >= 0 ? ago : undefined;
}
