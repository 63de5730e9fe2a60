// Job headers (broker.proto: EnqueueRequest.headers, Job.headers) as the
// Client and the Worker expose them, against a real redis-server +
// jobwire-broker: the enqueue option `headers` (enqueue and enqueueBatch),
// JobInfo.headers (getJob, wait), the handler's job.headers, and the
// broker's limits (a key outside [a-z0-9._-], more than 64 entries:
// INVALID_ARGUMENT naming `headers`, nothing stored).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker, JobwireError, Reason, Status } from '../dist/index.js';
import { toEnqueueRequest } from '../dist/client.js';
import { useStack, uniqueQueue, adminQueueStats } from './harness.mjs';

const TRACE = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tenant: 'acme',
};

const suite = useStack();

/**
 * Starts a worker on `q` whose handler of type 't' records each job's id
 * and headers; `seen` resolves once `n` jobs ran. Stopped after the file.
 */
function recordingWorker(q, n) {
  const jobs = new Map();
  let done;
  const seen = new Promise((resolve) => { done = resolve; });
  const worker = new Worker({ address: suite.stack.address, queues: [q], graceMs: 2000, logger: null });
  worker.register('t', (job) => {
    jobs.set(job.id, job.headers);
    if (jobs.size === n) done(jobs);
    return 'ok';
  });
  suite.workers.push(worker);
  void worker.run({ installSignalHandlers: false });
  return seen;
}

const rejection = (p) => p.then((v) => assert.fail(`resolved with ${JSON.stringify(v)}`), (e) => e);

/** The queue holds no job in any state. */
async function assertEmpty(q, what) {
  const s = await adminQueueStats(suite.stack.address, q);
  assert.deepEqual([s.pendingDue, s.pendingScheduled, s.active, s.completed, s.dead], [0, 0, 0, 0, 0], `${what}: nothing stored`);
}

/** `{ h0: 'v', ..., h<n-1>: 'v' }` */
const manyHeaders = (n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`h${i}`, 'v']));

test('enqueue with headers: the handler sees exactly them, getJob and wait show them; none is {}', async () => {
  const q = uniqueQueue('hdr');
  const seen = recordingWorker(q, 2);
  // Merged with the call's own options (signal, timeoutMs).
  const { jobId } = await suite.client.enqueue(q, 't', { n: 1 }, { headers: TRACE, priority: 3, timeoutMs: 4000 });
  const { jobId: plainId } = await suite.client.enqueue(q, 't', { n: 2 });

  const ran = await seen;
  assert.deepEqual(ran.get(jobId), TRACE, 'the handler\'s job.headers');
  assert.deepEqual(Object.keys(ran.get(jobId)).sort(), ['tenant', 'traceparent']);
  assert.deepEqual(ran.get(plainId), {}, 'a job enqueued without headers: {}');

  const done = await suite.client.wait(q, jobId, { timeoutMs: 10_000 });
  assert.equal(done.state, 'JOB_STATE_COMPLETED');
  assert.deepEqual(done.headers, TRACE, 'wait\'s JobInfo.headers');
  const info = await suite.client.getJob(q, jobId);
  assert.deepEqual(info.headers, TRACE, 'getJob\'s JobInfo.headers');
  assert.equal(info.priority, 3, 'the other options still apply');
  assert.deepEqual((await suite.client.getJob(q, plainId)).headers, {});
});

test('enqueueBatch: headers per entry', async () => {
  const q = uniqueQueue('hdr-batch');
  const rs = await suite.client.enqueueBatch(q, [
    { type: 't', payload: 1, options: { headers: TRACE, delayMs: 60_000 } },
    { type: 't', payload: 2, options: { headers: { tenant: 'globex', 'x.y_z-1': '' }, delayMs: 60_000 } },
    { type: 't', payload: 3, options: { delayMs: 60_000 } },
  ]);
  assert.deepEqual(rs.map((r) => r.ok), [true, true, true], JSON.stringify(rs));
  const got = await Promise.all(rs.map((r) => suite.client.getJob(q, r.jobId)));
  assert.deepEqual(got.map((j) => j.headers), [TRACE, { tenant: 'globex', 'x.y_z-1': '' }, {}]);
});

test('64 headers are stored; a key "Bad Key" or 65 headers: INVALID_ARGUMENT naming headers, nothing stored', async () => {
  // The limit itself is accepted (so what follows is the limit, not the size).
  const okQ = uniqueQueue('hdr-64');
  const { jobId } = await suite.client.enqueue(okQ, 't', {}, { headers: manyHeaders(64), delayMs: 60_000 });
  assert.deepEqual((await suite.client.getJob(okQ, jobId)).headers, manyHeaders(64));

  for (const [what, headers] of [['a key "Bad Key"', { ...TRACE, 'Bad Key': 'v' }], ['65 headers', manyHeaders(65)]]) {
    const q = uniqueQueue('hdr-bad');
    const err = await rejection(suite.client.enqueue(q, 't', {}, { headers, idempotencyKey: 'k' }));
    assert.ok(err instanceof JobwireError, `${what}: ${err}`);
    assert.equal(err.code, Status.INVALID_ARGUMENT, `${what}: ${err.message}`);
    assert.equal(err.reason, Reason.INVALID_FIELD, what);
    assert.equal(err.field, 'headers', what);
    assert.equal(err.metadata.field, 'headers', what);
    assert.match(err.details, /headers/, what);
    await assertEmpty(q, what);
    // Nor was the idempotency key taken.
    const again = await suite.client.enqueue(q, 't', {}, { idempotencyKey: 'k', delayMs: 60_000 });
    assert.equal(again.duplicate, false, `${what}: the key was not kept`);

    // In a batch: that entry's own error, the others stored.
    const bq = uniqueQueue('hdr-bad-batch');
    const rs = await suite.client.enqueueBatch(bq, [
      { type: 't', options: { headers: TRACE, delayMs: 60_000 } },
      { type: 't', options: { headers, delayMs: 60_000 } },
    ]);
    assert.equal(rs[0].ok, true, JSON.stringify(rs[0]));
    assert.equal(rs[1].ok, false, `${what} in a batch`);
    assert.equal(rs[1].code, Status.INVALID_ARGUMENT, rs[1].message);
    assert.equal(rs[1].reason, Reason.INVALID_FIELD);
    assert.match(rs[1].message, /^jobs\[1\]\.headers/, rs[1].message);
    const s = await adminQueueStats(suite.stack.address, bq);
    assert.equal(s.pendingScheduled, 1, `${what} in a batch: only the good entry stored`);
  }
});

test('headers that are not a plain object of strings: TypeError, nothing sent', async () => {
  const q = uniqueQueue('hdr-type');
  for (const headers of [{ n: 1 }, { a: null }, new Map([['a', 'b']]), ['a'], 'a=b']) {
    const err = await rejection(suite.client.enqueue(q, 't', {}, { headers }));
    assert.ok(err instanceof TypeError, `${String(headers)}: ${err}`);
    assert.match(err.message, /headers/);
  }
  const err = await rejection(suite.client.enqueueBatch(q, [{ type: 't' }, { type: 't', options: { headers: { n: 1 } } }]));
  assert.ok(err instanceof TypeError, String(err));
  await assertEmpty(q, 'TypeError');

  // Unset, null and {} send none; a key such as __proto__ stays a key.
  assert.equal(toEnqueueRequest(q, 't', 1, {}).headers, undefined);
  assert.equal(toEnqueueRequest(q, 't', 1, { headers: null }).headers, undefined);
  assert.equal(toEnqueueRequest(q, 't', 1, { headers: {} }).headers, undefined);
  const odd = JSON.parse('{"__proto__": "x", "constructor": "y"}');
  assert.deepEqual(Object.keys(toEnqueueRequest(q, 't', 1, { headers: odd }).headers), ['__proto__', 'constructor']);
  const { jobId } = await suite.client.enqueue(q, 't', {}, { headers: odd, delayMs: 60_000 });
  const back = (await suite.client.getJob(q, jobId)).headers;
  assert.deepEqual(Object.keys(back).sort(), ['__proto__', 'constructor']);
  assert.equal(Object.getOwnPropertyDescriptor(back, '__proto__')?.value, 'x');
  assert.equal(back.constructor, 'y');
});
