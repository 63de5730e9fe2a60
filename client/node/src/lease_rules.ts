/**
 * The lease rules every Worker follows (docs/clients.md, Worker).
 */
import { brokerWentAway, Status, type JobwireError } from './errors';

/**
 * How long before the estimated lease end the next-to-last Ack / Fail
 * attempt is sent, so that it reaches the broker while the lease still holds;
 * the last attempt is sent at the end.
 */
export const FINAL_LEAD_MS = 100;

/**
 * Whether an Ack / Fail attempt that ended with `err` went unanswered, so
 * the broker may or may not have stored it: UNAVAILABLE, DEADLINE_EXCEEDED,
 * or CANCELLED that this client did not cause (brokerWentAway; e.g. how
 * gRPC C++ core, grpc/grpc#41785, ends a call that reached a draining broker
 * after its shutdown began: no handler saw it). Such an attempt may be sent
 * again (mayResend), and when the last attempt ended so the outcome is
 * unknown (ack_unknown / fail_unknown), not a refusal (ack_error /
 * fail_error). The Worker never cancels an Ack /
 * Fail call itself (no abort signal; a Work stream it cancels hands its
 * acks to AckBatch calls); a CANCELLED with grpc-js's own "Cancelled on
 * client" details never counts.
 */
export function outcomeUnanswered(err: JobwireError): boolean {
  return brokerWentAway(err) || err.code === Status.DEADLINE_EXCEEDED;
}

/**
 * Whether an Ack / Fail attempt that ended with `err` may be sent again:
 * only when it went unanswered (outcomeUnanswered: UNAVAILABLE,
 * DEADLINE_EXCEEDED, a CANCELLED the client did not cause), and only when
 * the lease was not already known lost when it was sent (`lostWhenSent`: a
 * renewal had been refused, so the broker refuses it unless an earlier
 * attempt was stored). false: its outcome is final (unknown when it went
 * unanswered). A lease learnt lost after the attempt was sent allows one
 * more attempt, sent at once (OutcomeSender); that one is sent while lost.
 */
export function mayResend(err: JobwireError, lostWhenSent: boolean): boolean {
  return outcomeUnanswered(err) && !lostWhenSent;
}

/**
 * The wait before the next Ack / Fail attempt after one went unanswered
 * (outcomeUnanswered): `waitMs` (the jittered backoff), clipped so that an
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
