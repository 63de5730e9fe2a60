// Worker tests against a real redis-server + jobwire-broker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Worker, NonRetryableError, RetryAfterError, errorText } from '../dist/index.js';
import { failureOf } from '../dist/failure.js';
import { startStack, uniqueQueue, waitFor, sleep } from './harness.mjs';

let stack;
let client;
const workers = [];

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 5000 });
});

after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  client?.close();
  await stack?.stop();
});

/** Starts a worker; returns { worker, outcomes, running }. */
function startWorker(opts, handlers) {
  const outcomes = [];
  const worker = new Worker({
    address: stack.address, graceMs: 5000, logger: null, ...opts,
    onOutcome: (o) => outcomes.push(o),
  });
  for (const [type, fn] of Object.entries(handlers)) worker.register(type, fn);
  workers.push(worker);
  const running = worker.run({ installSignalHandlers: false });
  return { worker, outcomes, running };
}

const outcomeFor = (outcomes, id, kind, attempt) =>
  outcomes.find((o) => o.job.id === id && (!kind || o.kind === kind) && (!attempt || o.job.attempt === attempt));

test('worker acks with the result; JSON payload round trip', async () => {
  const q = uniqueQueue('ack');
  const seen = [];
  const { worker, outcomes, running } = startWorker({ queues: [q] }, {
    greet: async (job) => {
      seen.push({ json: job.json(), job });
      return { hello: job.json().name, attempt: job.attempt };
    },
  });
  const payload = { name: 'Zoë ✓', list: [1, 2, 3], nested: { ok: true } };
  const { jobId } = await client.enqueue(q, 'greet', payload);
  await waitFor(() => outcomeFor(outcomes, jobId, 'ack_ok'), { what: 'ack_ok' });
  assert.equal(seen.length, 1);
  const { json, job } = seen[0];
  assert.deepEqual(json, payload);
  assert.equal(job.id, jobId);
  assert.equal(job.queue, q);
  assert.equal(job.type, 'greet');
  assert.equal(job.attempt, 1);
  assert.equal(job.maxAttempts, 3);
  assert.ok(Buffer.isBuffer(job.payload));
  assert.ok(job.leaseExpiresAtMs > Date.now() - 5000);
  const stored = await client.getJob(q, jobId);
  assert.equal(stored.state, 'JOB_STATE_COMPLETED');
  assert.equal(stored.attempts, 1);
  assert.deepEqual(stored.resultJson(), { hello: 'Zoë ✓', attempt: 1 });
  assert.equal(stored.workerId, worker.workerId);
  await worker.stop();
  await running;
});

test('handler result bytes unchanged, undefined -> empty result', async () => {
  const q = uniqueQueue('res');
  const { worker, outcomes } = startWorker({ queues: [q] }, {
    bytes: async () => Buffer.from([0, 255, 7]),
    nothing: async () => undefined,
  });
  const a = await client.enqueue(q, 'bytes', null);
  const b = await client.enqueue(q, 'nothing', null);
  await waitFor(() => outcomeFor(outcomes, a.jobId, 'ack_ok') && outcomeFor(outcomes, b.jobId, 'ack_ok'), { what: 'acks' });
  assert.deepEqual([...(await client.getJob(q, a.jobId)).result], [0, 255, 7]);
  assert.equal((await client.getJob(q, b.jobId)).result.length, 0);
  await worker.stop();
});

test('handler throwing -> failed, retried as attempt 2, then acked', async () => {
  const q = uniqueQueue('retry');
  const attempts = [];
  const { worker, outcomes } = startWorker({ queues: [q] }, {
    flaky: async (job) => {
      attempts.push(job.attempt);
      if (job.attempt === 1) throw new TypeError('first run breaks');
      return { ok: job.attempt };
    },
  });
  const { jobId } = await client.enqueue(q, 'flaky', {}, { backoffBaseMs: 50, backoffMaxMs: 100 });
  await waitFor(() => outcomeFor(outcomes, jobId, 'ack_ok'), { what: 'ack after retry' });
  const fail = outcomeFor(outcomes, jobId, 'fail_ok', 1);
  assert.ok(fail, 'attempt 1 reported fail_ok');
  assert.equal(fail.failOutcome, 'RETRY_SCHEDULED');
  assert.equal(fail.failText, 'TypeError: first run breaks');
  assert.deepEqual(attempts, [1, 2]);
  const job = await client.getJob(q, jobId);
  assert.equal(job.state, 'JOB_STATE_COMPLETED');
  assert.equal(job.attempts, 2);
  assert.deepEqual(job.resultJson(), { ok: 2 });
  // The failed run stays in the error history.
  assert.deepEqual(job.errors.map((e) => [e.attempt, e.error]), [[1, 'TypeError: first run breaks']]);
  assert.ok(job.errors[0].atMs >= job.createdAtMs && job.errors[0].atMs <= job.finishedAtMs);
  await worker.stop();
});

test('NonRetryableError -> DEAD after one attempt with the error text', async () => {
  const q = uniqueQueue('nonretry');
  const { worker, outcomes } = startWorker({ queues: [q] }, {
    bad: async () => { throw new NonRetryableError('bad input'); },
  });
  const { jobId } = await client.enqueue(q, 'bad', {}, { maxAttempts: 5, backoffBaseMs: 50 });
  const o = await waitFor(() => outcomeFor(outcomes, jobId, 'fail_ok'), { what: 'fail_ok' });
  assert.equal(o.failOutcome, 'DEAD');
  assert.equal(o.nonRetryable, true);
  const job = await client.getJob(q, jobId);
  assert.equal(job.state, 'JOB_STATE_DEAD');
  assert.equal(job.attempts, 1);
  assert.equal(job.error, 'NonRetryableError: bad input');
  assert.deepEqual(job.errors.map((e) => [e.attempt, e.error]), [[1, 'NonRetryableError: bad input']]);
  await worker.stop();
});

test('custom error class -> error text names the class', async () => {
  class ValidationError extends Error {}
  class NamedError extends Error {
    constructor(m) { super(m); this.name = 'Named'; }
  }
  const q = uniqueQueue('errclass');
  const { worker, outcomes } = startWorker({ queues: [q] }, {
    invalid: async () => { throw new ValidationError('bad'); },
    named: async () => { throw new NamedError('explicit'); },
  });
  const a = await client.enqueue(q, 'invalid', {}, { maxAttempts: 1 });
  const b = await client.enqueue(q, 'named', {}, { maxAttempts: 1 });
  const oa = await waitFor(() => outcomeFor(outcomes, a.jobId, 'fail_ok'), { what: 'fail_ok (class)' });
  const ob = await waitFor(() => outcomeFor(outcomes, b.jobId, 'fail_ok'), { what: 'fail_ok (named)' });
  assert.equal(oa.failText, 'ValidationError: bad');
  assert.equal(ob.failText, 'Named: explicit');
  assert.equal((await client.getJob(q, a.jobId)).error, 'ValidationError: bad');
  assert.equal((await client.getJob(q, b.jobId)).error, 'Named: explicit');
  assert.equal(errorText(new Error('plain')), 'Error: plain');
  assert.equal(errorText(new RangeError('r')), 'RangeError: r');
  // A lone surrogate (no UTF-8 for it) becomes U+FFFD, as in every client.
  assert.equal(errorText(new Error('a\ud800b')), 'Error: a\ufffdb');
  await worker.stop();
});

/** The longest prefix of text, in whole characters, whose UTF-8 takes at most maxBytes. */
function utf8Prefix(text, maxBytes) {
  let out = '';
  let size = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (size + n > maxBytes) break;
    out += ch;
    size += n;
  }
  return out;
}

test('a 100 KiB error text of multi-byte characters is cut to 64 KiB at a character boundary', async () => {
  // 'a' 1 byte, 'é' 2, '€' 3, '😀' 4: after "Error: " (7 bytes) byte 65536
  // falls inside a '😀'.
  const message = 'aé€😀'.repeat(10_240); // 100 KiB
  const text = `Error: ${message}`;
  const full = Buffer.from(text, 'utf8');
  assert.equal(full[65_536] & 0xc0, 0x80, 'the 64 KiB cut falls inside a character');
  const expected = utf8Prefix(text, 65_536);
  assert.ok(Buffer.byteLength(expected) > 65_536 - 4 && Buffer.byteLength(expected) <= 65_536);
  // (No assert.equal on these texts: a failure would print 100 KiB.)
  const sameText = (got, what) => assert.ok(got === expected,
    `${what}: ${Buffer.byteLength(got ?? '')} bytes ending ${JSON.stringify((got ?? '').slice(-3))}, ` +
    `expected ${Buffer.byteLength(expected)} bytes ending ${JSON.stringify(expected.slice(-3))}`);
  sameText(errorText(new Error(message)), 'errorText');
  const exact = 'x'.repeat(65_536 - 7);
  assert.equal(errorText(new Error(exact)), `Error: ${exact}`, 'exactly 64 KiB is kept whole');

  const q = uniqueQueue('errlimit');
  const { worker, outcomes } = startWorker({ queues: [q] }, {
    long: async () => { throw new Error(message); },
  });
  const { jobId } = await client.enqueue(q, 'long', {}, { maxAttempts: 1 });
  const o = await waitFor(() => outcomeFor(outcomes, jobId), { what: 'outcome' });
  assert.equal(o.kind, 'fail_ok', `outcome ${o.kind} ${o.codeName ?? ''} ${o.error?.message ?? ''}`);
  sameText(o.failText, 'the Fail text');
  const job = await client.getJob(q, jobId);
  assert.equal(job.state, 'JOB_STATE_DEAD');
  sameText(job.error, 'the stored error');
  await worker.stop();
});

test('RetryAfterError: Fail with retry_after_ms (rounded up, clamped to 7 days); non-retryable wins', async () => {
  assert.throws(() => new RetryAfterError('x', NaN), TypeError);
  assert.throws(() => new RetryAfterError('x', '5'), TypeError);
  const q = uniqueQueue('retryafter');
  const thrownAt = {};
  const { worker, outcomes } = startWorker({ queues: [q], concurrency: 4 }, {
    soon: async (job) => {
      if (job.attempt === 1) {
        thrownAt.soon = Date.now();
        throw new RetryAfterError('busy', 1500.2);
      }
      return { attempt: job.attempt, at: Date.now() };
    },
    week: async () => { throw new RetryAfterError('much later', 30 * 24 * 3600 * 1000); },
    dead: async () => { throw Object.assign(new RetryAfterError('no point', 60_000), { nonRetryable: true }); },
    duck: async () => { throw Object.assign(new Error('tiny'), { retryAfterMs: 0.4 }); },
  });
  // Backoff 50 ms: a retry due later than that is retry_after's doing.
  const opts = { maxAttempts: 2, backoffBaseMs: 50, backoffMaxMs: 50 };
  const soon = await client.enqueue(q, 'soon', {}, opts);
  const week = await client.enqueue(q, 'week', {}, opts);
  const dead = await client.enqueue(q, 'dead', {}, { ...opts, maxAttempts: 5 });
  const duck = await client.enqueue(q, 'duck', {}, { ...opts, maxAttempts: 5 });

  const fs = await waitFor(() => outcomeFor(outcomes, soon.jobId, 'fail_ok', 1), { what: 'soon: fail_ok' });
  const failedAt = Date.now();
  assert.equal(fs.failText, 'RetryAfterError: busy');
  assert.equal(fs.failOutcome, 'RETRY_SCHEDULED');
  assert.equal(fs.retryAfterMs, 1501);
  assert.equal(fs.nonRetryable, false);
  const pending = await client.getJob(q, soon.jobId);
  assert.equal(pending.state, 'JOB_STATE_PENDING');
  assert.equal(pending.attempts, 1, 'attempts not used up early');
  assert.equal(pending.availableAtMs, fs.nextAttemptAtMs);
  assert.ok(pending.availableAtMs >= thrownAt.soon + 1501 && pending.availableAtMs <= failedAt + 1501,
    `retry due ${pending.availableAtMs - thrownAt.soon} ms after the throw`);
  const ack = await waitFor(() => outcomeFor(outcomes, soon.jobId, 'ack_ok', 2), { what: 'soon: ack of attempt 2' });
  const done = await client.getJob(q, soon.jobId);
  assert.equal(done.state, 'JOB_STATE_COMPLETED');
  assert.equal(done.attempts, 2);
  assert.ok(done.resultJson().at >= pending.availableAtMs - 50, 'attempt 2 ran when due, not before');
  assert.ok(ack);

  const fw = await waitFor(() => outcomeFor(outcomes, week.jobId, 'fail_ok'), { what: 'week: fail_ok' });
  assert.equal(fw.retryAfterMs, 604_800_000);
  assert.equal(fw.failOutcome, 'RETRY_SCHEDULED');
  const w = await client.getJob(q, week.jobId);
  assert.equal(w.state, 'JOB_STATE_PENDING');
  assert.ok(Math.abs(w.availableAtMs - (Date.now() + 604_800_000)) < 60_000, 'due in 7 days');

  const fd = await waitFor(() => outcomeFor(outcomes, dead.jobId, 'fail_ok'), { what: 'dead: fail_ok' });
  assert.equal(fd.failOutcome, 'DEAD');
  assert.equal(fd.nonRetryable, true);
  assert.equal(fd.retryAfterMs, 0);
  const d = await client.getJob(q, dead.jobId);
  assert.equal(d.state, 'JOB_STATE_DEAD');
  assert.equal(d.attempts, 1);
  assert.equal(d.error, 'RetryAfterError: no point');

  const fk = await waitFor(() => outcomeFor(outcomes, duck.jobId, 'fail_ok', 1), { what: 'duck: fail_ok' });
  assert.equal(fk.retryAfterMs, 1, 'a numeric retryAfterMs of any thrown object, rounded up');
  await worker.stop();
});

test('RetryAfterError keepAttempt: runs turned away use no attempt (max_attempts 2, turned away 3 times, completes on attempt 1)', async () => {
  const q = uniqueQueue('keepattempt');
  const runs = [];
  const { worker, outcomes } = startWorker({ queues: [q] }, {
    limited: async (job) => {
      runs.push(job.attempt);
      if (runs.length <= 3) throw new RetryAfterError('rate limited downstream', 50, { keepAttempt: true });
      return 'done';
    },
  });
  const { jobId } = await client.enqueue(q, 'limited', {}, { maxAttempts: 2 });
  await waitFor(() => outcomeFor(outcomes, jobId, 'ack_ok'), { what: 'ack_ok after three turned-away runs' });
  const done = await client.getJob(q, jobId);
  assert.equal(done.state, 'JOB_STATE_COMPLETED');
  assert.equal(done.attempts, 1);
  assert.equal(done.maxAttempts, 2);
  assert.equal(done.resultJson(), 'done');
  assert.deepEqual(runs, [1, 1, 1, 1]);
  const mine = outcomes.filter((o) => o.job.id === jobId);
  assert.deepEqual(mine.map((o) => [o.kind, o.job.attempt, o.failOutcome ?? null]),
    [...Array(3).fill(['fail_ok', 1, 'RETRY_SCHEDULED']), ['ack_ok', 1, null]]);
  for (const o of mine.slice(0, 3)) {
    assert.equal(o.failText, 'RetryAfterError: rate limited downstream');
    assert.equal(o.retryAfterMs, 50);
    assert.equal(o.keepAttempt, true);
  }
  await worker.stop();
});

test('keepAttempt in the Fail: only with a retry delay, and non-retryable wins (neither sent)', () => {
  assert.deepEqual(failureOf(new RetryAfterError('m', 1500, { keepAttempt: true })),
    { text: 'RetryAfterError: m', nonRetryable: false, retryAfterMs: 1500, keepAttempt: true });
  assert.equal(failureOf(new RetryAfterError('m', 1500)).keepAttempt, false);
  assert.deepEqual(failureOf(Object.assign(new RetryAfterError('m', 1500, { keepAttempt: true }), { nonRetryable: true })),
    { text: 'RetryAfterError: m', nonRetryable: true, retryAfterMs: 0, keepAttempt: false });
  assert.equal(failureOf(Object.assign(new Error('x'), { retryAfterMs: 10, keepAttempt: true })).keepAttempt, true);
  assert.equal(failureOf(Object.assign(new Error('x'), { keepAttempt: true })).keepAttempt, false, 'no delay: no keep_attempt');
  const cause = new Error('429');
  const e = new RetryAfterError('m', 5, { cause, keepAttempt: true });
  assert.equal(e.cause, cause);
  assert.equal(new RetryAfterError('m', 5).cause, undefined);
});

test('a job of a type without handler, ahead of the worker\'s own, is never delivered (ClaimRequest.types)', async () => {
  const q = uniqueQueue('unknown');
  const other = await client.enqueue(q, 'mystery', {}, { maxAttempts: 2 });
  const own = await client.enqueue(q, 'known', {});
  const { worker, outcomes } = startWorker({ queues: [q], workerId: 'node-test-unknown' }, {
    known: async () => 'ran',
  });
  const o = await waitFor(() => outcomeFor(outcomes, own.jobId), { what: 'the own job\'s outcome' });
  assert.equal(o.kind, 'ack_ok');
  const done = await client.getJob(q, own.jobId);
  assert.equal(done.state, 'JOB_STATE_COMPLETED');
  assert.equal(done.resultJson(), 'ran');
  const job = await client.getJob(q, other.jobId);
  assert.equal(job.state, 'JOB_STATE_PENDING', 'waits for a worker that handles it');
  assert.equal(job.attempts, 0, 'no attempt used');
  assert.equal(job.error, '');
  assert.equal(outcomeFor(outcomes, other.jobId), undefined);
  await worker.stop();
});

test('run() throws at once without a handler, or with more than 64 job types', async () => {
  const worker = new Worker({ address: stack.address, queues: [uniqueQueue('nohandler')], logger: null });
  assert.throws(() => worker.run({ installSignalHandlers: false }),
    (e) => e.constructor === Error && /^jobwire Worker: no handler registered/.test(e.message));
  for (let i = 0; i < 65; i++) worker.register(`t${i}`, async () => null);
  assert.throws(() => worker.run({ installSignalHandlers: false }),
    (e) => e instanceof RangeError && e.message.includes('65 job types have handlers; a Worker takes at most 64'));
  await worker.stop(); // never started: resolves at once

  // 64 is the limit, not beyond it: the broker takes such a Claim.
  const q = uniqueQueue('types64');
  const handlers = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`t${i}`, async (job) => job.type]));
  const { jobId } = await client.enqueue(q, 't63', {});
  const { worker: w64, outcomes } = startWorker({ queues: [q] }, handlers);
  await waitFor(() => outcomeFor(outcomes, jobId, 'ack_ok'), { what: 'ack_ok of the t63 job' });
  assert.equal((await client.getJob(q, jobId)).resultJson(), 't63');
  await w64.stop();
});

test('concurrency N runs N handlers at once, never more', async () => {
  const q = uniqueQueue('conc');
  const N = 3;
  let now = 0;
  let max = 0;
  let release;
  const gate = new Promise((r) => { release = r; });
  const { worker, outcomes } = startWorker({ queues: [q], concurrency: N }, {
    slow: async () => {
      now++;
      max = Math.max(max, now);
      if (now >= N) release();
      await Promise.race([gate, sleep(8000)]);
      await sleep(100);
      now--;
      return null;
    },
  });
  const ids = [];
  for (let i = 0; i < N + 2; i++) ids.push((await client.enqueue(q, 'slow', { i })).jobId);
  await waitFor(() => max >= N, { what: `${N} handlers at once` });
  await waitFor(() => ids.every((id) => outcomeFor(outcomes, id, 'ack_ok')), { what: 'all acked' });
  assert.equal(max, N);
  await worker.stop();
});

test('lease renewal keeps a long handler\'s job (leaseMs 1000, 2.5 s handler)', async () => {
  const q = uniqueQueue('lease');
  const { worker, outcomes } = startWorker({ queues: [q], leaseMs: 1000 }, {
    long: async (job) => {
      await sleep(2500);
      return { attempt: job.attempt, aborted: job.signal.aborted };
    },
  });
  const { jobId } = await client.enqueue(q, 'long', {}, { backoffBaseMs: 50 });
  const o = await waitFor(() => outcomes.find((x) => x.job.id === jobId), { what: 'outcome', timeoutMs: 10_000 });
  assert.equal(o.kind, 'ack_ok', `outcome ${o.kind} ${o.codeName ?? ''}`);
  assert.equal(o.leaseLost, false);
  const job = await client.getJob(q, jobId);
  assert.equal(job.state, 'JOB_STATE_COMPLETED');
  assert.equal(job.attempts, 1);
  assert.deepEqual(job.resultJson(), { attempt: 1, aborted: false });
  await worker.stop();
});

test('stop() lets the running handler finish and ack, and takes no new jobs', async () => {
  const q = uniqueQueue('stop');
  let started;
  const startedP = new Promise((r) => { started = r; });
  let finished = false;
  let calls = 0;
  const { worker, outcomes, running } = startWorker({ queues: [q], concurrency: 2 }, {
    work: async (job) => {
      calls++;
      started(job.id);
      await sleep(900);
      finished = true;
      return 'done';
    },
  });
  const { jobId } = await client.enqueue(q, 'work', {});
  await startedP;
  const stopped = worker.stop();
  // The broker learns of the cancelled Claim stream asynchronously; a job
  // enqueued in that very instant could still be claimed for the dead stream
  // (a broker-side known limit), so give the cancel a moment to land.
  await sleep(200);
  const later = await client.enqueue(q, 'work', {});
  await stopped;
  assert.equal(finished, true, 'stop() waited for the handler');
  assert.ok(outcomeFor(outcomes, jobId, 'ack_ok'), 'the running job was acked before stop() returned');
  await running; // run() resolved
  assert.equal((await client.getJob(q, jobId)).state, 'JOB_STATE_COMPLETED');
  await sleep(300);
  const pending = await client.getJob(q, later.jobId);
  assert.equal(pending.state, 'JOB_STATE_PENDING', 'no new job taken after stop()');
  assert.equal(pending.attempts, 0);
  assert.equal(calls, 1);
});

test('Claim refused with INVALID_ARGUMENT: run() rejects with the broker message', async () => {
  const worker = new Worker({ address: stack.address, queues: ['bad queue name!'], logger: null });
  worker.register('t', async () => null);
  workers.push(worker);
  const err = await worker.run({ installSignalHandlers: false }).then(() => assert.fail('run() resolved'), (e) => e);
  assert.equal(err.name, 'JobwireError');
  assert.equal(err.codeName, 'INVALID_ARGUMENT');
  assert.match(err.details, /queue/);
});
