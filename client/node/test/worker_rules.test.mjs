// The Worker's rules as pure functions (docs/clients.md, Worker): the Claim
// stream's reopen backoff, the types a Claim names, the lease length a broker
// older than ClaimedJob.lease_ms leaves, and when and after how long an Ack /
// Fail may be sent again. No broker needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JobwireError, Status } from '../dist/index.js';
import { reconnectDelayMs } from '../dist/claim_stream.js';
import { checkHandlerCount, claimTypes } from '../dist/claim_types.js';
import { outcomeRetryDelayMs } from '../dist/outcome_sender.js';
import { leaseLength } from '../dist/lease_renewer.js';
import { mayResend, outcomeUnanswered } from '../dist/lease_rules.js';

test('the reconnect delay is full jitter: uniform in [0, d], d = 100 ms doubling to 5 s', () => {
  const cases = [[0, 100], [1, 200], [2, 400], [5, 3200], [6, 5000], [7, 5000], [60, 5000]];
  for (const [attempt, cap] of cases) {
    // The ends of the range, from the lowest and highest draws.
    assert.equal(reconnectDelayMs(attempt, () => 0), 0, `attempt ${attempt}: lowest`);
    assert.equal(reconnectDelayMs(attempt, () => 1 - Number.EPSILON), cap, `attempt ${attempt}: highest`);
    const delays = Array.from({ length: 2000 }, () => reconnectDelayMs(attempt));
    assert.ok(delays.every((d) => d >= 0 && d <= cap && Number.isInteger(d)), `attempt ${attempt}: ${Math.min(...delays)}..${Math.max(...delays)}`);
    // Full jitter ([0, d]), not half-to-full ([d/2, d]): about a quarter of
    // the draws fall below d/4.
    assert.ok(Math.min(...delays) < cap / 4, `attempt ${attempt}: lowest of 2000 draws ${Math.min(...delays)}`);
    assert.ok(Math.max(...delays) > (cap * 3) / 4, `attempt ${attempt}: highest of 2000 draws ${Math.max(...delays)}`);
  }
});

test('the lease length: the one granted; from an older broker the one asked for, else 30 s (no clock read)', () => {
  // The claim's expiry is never used: an hour away here, which a guess from
  // the local clock would take.
  const claim = (leaseMs) => ({ leaseMs: String(leaseMs), leaseExpiresAtMs: String(Date.now() + 3_600_000) });
  const cases = [
    { granted: 1500, asked: undefined, want: 1500 },
    { granted: 1500, asked: 4000, want: 1500 },
    { granted: 0, asked: 4000, want: 4000 },
    { granted: 0, asked: undefined, want: 30_000 },
    { granted: 0, asked: 0, want: 30_000 },
  ];
  for (const c of cases) {
    assert.equal(leaseLength(claim(c.granted), c.asked), c.want, JSON.stringify(c));
  }
});

test('an Ack / Fail is sent again only when unanswered (UNAVAILABLE, DEADLINE_EXCEEDED, a CANCELLED the client did not cause), and only when sent while the lease was not known lost', () => {
  const brokerCancelled = new JobwireError(Status.CANCELLED, 'CANCELLED'); // a draining gRPC C++ broker (grpc/grpc#41785)
  const clientCancelled = new JobwireError(Status.CANCELLED, 'Cancelled on client'); // grpc-js: the client's own cancel
  const cases = [
    [new JobwireError(Status.UNAVAILABLE, 'x'), false, true],
    [new JobwireError(Status.DEADLINE_EXCEEDED, 'x'), false, true],
    [brokerCancelled, false, true],
    [new JobwireError(Status.UNAVAILABLE, 'x'), true, false],
    [new JobwireError(Status.DEADLINE_EXCEEDED, 'x'), true, false],
    [brokerCancelled, true, false],
    [clientCancelled, false, false],
    [new JobwireError(Status.FAILED_PRECONDITION, 'x'), false, false],
    [new JobwireError(Status.NOT_FOUND, 'x'), false, false],
  ];
  for (const [err, lostWhenSent, want] of cases) {
    assert.equal(mayResend(err, lostWhenSent), want, `${err.message} lost when sent ${lostWhenSent}`);
    // Unanswered (outcome *_unknown, not *_error, when not sent again): what is sent again while the lease holds.
    if (!lostWhenSent) assert.equal(outcomeUnanswered(err), want, err.message);
  }
});

test('the Ack / Fail retry backoff is full jitter: uniform in [0, d], d = 100 ms doubling to 2 s', () => {
  const cases = [[0, 100], [1, 200], [2, 400], [4, 1600], [5, 2000], [60, 2000]];
  for (const [attempt, cap] of cases) {
    assert.equal(outcomeRetryDelayMs(attempt, () => 0), 0, `attempt ${attempt}: lowest`);
    assert.equal(outcomeRetryDelayMs(attempt, () => 1 - Number.EPSILON), cap, `attempt ${attempt}: highest`);
    const delays = Array.from({ length: 2000 }, () => outcomeRetryDelayMs(attempt));
    assert.ok(delays.every((d) => d >= 0 && d <= cap && Number.isInteger(d)), `attempt ${attempt}: ${Math.min(...delays)}..${Math.max(...delays)}`);
    // Full jitter ([0, d]) as the Go client's, not half-to-full ([d/2, d]).
    assert.ok(Math.min(...delays) < cap / 4, `attempt ${attempt}: lowest of 2000 draws ${Math.min(...delays)}`);
    assert.ok(Math.max(...delays) > (cap * 3) / 4, `attempt ${attempt}: highest of 2000 draws ${Math.max(...delays)}`);
  }
});

test('a Claim names the job types with a handler, sorted; run() needs 1..64 of them', () => {
  assert.deepEqual(claimTypes(new Map([['b', 1], ['a', 2], ['C', 3]]).keys()), ['C', 'a', 'b']);
  assert.throws(() => checkHandlerCount(0), (e) => e.constructor === Error && /no handler registered/.test(e.message));
  checkHandlerCount(1);
  checkHandlerCount(64);
  assert.throws(() => checkHandlerCount(65), (e) => e instanceof RangeError && /65 job types have handlers; a Worker takes at most 64/.test(e.message));
});
