// Client.enqueue's coalescing (enqueue_coalescer.ts): the enqueues of one
// turn against a real redis-server + jobwire-broker take fewer calls (the
// broker's /metrics) and each ends as it would alone: its own id, its own
// duplicate, its own error with the lone call's code and details; and the
// EnqueueCoalescer's rules against fake senders.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, JobwireError, Status } from '../dist/index.js';
import { EnqueueCoalescer } from '../dist/enqueue_coalescer.js';
import { startStack, freePort, uniqueQueue, adminQueueStats, waitFor, rpcCount as rpcCountAt } from './harness.mjs';

let stack;
let client;
let metricsPort;

before(async () => {
  metricsPort = await freePort();
  stack = await startStack({ brokerArgs: [`--metrics_listen=127.0.0.1:${metricsPort}`] });
  client = new Client({ address: stack.address, timeoutMs: 5000 });
});

after(async () => {
  client?.close();
  await stack?.stop();
});

/** Sum of jobwire_rpc_requests_total for one Broker method (harness.mjs). */
const rpcCount = (method) => rpcCountAt(metricsPort, method);

const settled = (p) => p.then((v) => v, (e) => e);

/** What a test compares of two errors. */
const errorFields = (e) => ({
  code: e.code, details: e.details, reason: e.reason, metadata: e.metadata, field: e.field,
});

test('enqueue: the calls of one turn share one EnqueueBatch, each job stored once with its own id', async () => {
  const queue = uniqueQueue('coalesce');
  const n = 200;
  const before = (await rpcCount('Enqueue')) + (await rpcCount('EnqueueBatch'));
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) => client.enqueue(queue, 't', { i })));
  const calls = (await rpcCount('Enqueue')) + (await rpcCount('EnqueueBatch')) - before;

  assert.equal(new Set(results.map((r) => r.jobId)).size, n, 'distinct ids');
  assert.ok(results.every((r) => r.duplicate === false));
  assert.equal(calls, 1, `${calls} calls for ${n} enqueues made in one turn`);
  // Each job is the one its call sent.
  for (const i of [0, 1, n / 2, n - 1]) {
    const job = await client.getJob(queue, results[i].jobId);
    assert.deepEqual(job.json(), { i });
  }
  const stats = await adminQueueStats(stack.address, queue);
  assert.equal(stats.pendingDue, n);
});

test('enqueue: coalesced calls end as lone calls would (duplicates, refusals and their details)', async () => {
  const queue = uniqueQueue('coalesce-mixed');
  // The errors of lone calls (one at a time, nothing in flight).
  const loneMissing = await settled(client.enqueue(queue, 't', 'x', { dependsOn: ['000000000999'] }));
  const loneInvalid = await settled(client.enqueue(queue, 't', 'x', { priority: 1_000_000 }));
  assert.ok(loneMissing instanceof JobwireError && loneInvalid instanceof JobwireError);
  assert.equal(loneMissing.code, Status.NOT_FOUND);
  assert.equal(loneMissing.reason, 'DEPENDENCY_NOT_FOUND');
  assert.equal(loneInvalid.code, Status.INVALID_ARGUMENT);

  const callsBefore = await rpcCount('EnqueueBatch');
  const out = await Promise.all([
    client.enqueue(queue, 't', 'first'),
    client.enqueue(queue, 't', 'a', { idempotencyKey: 'k1' }),
    settled(client.enqueue(queue, 't', 'x', { dependsOn: ['000000000999'] })),
    client.enqueue(queue, 't', 'b', { idempotencyKey: 'k1' }),
    settled(client.enqueue(queue, 't', 'x', { priority: 1_000_000 })),
    client.enqueue(queue, 't', 'c'),
  ]);
  assert.equal((await rpcCount('EnqueueBatch')) - callsBefore, 1, 'one EnqueueBatch for the six');
  const [first, a, missing, b, invalid, c] = out;
  assert.equal(a.duplicate, false);
  assert.equal(b.jobId, a.jobId, 'the later job with the same key is a duplicate of the earlier one');
  assert.equal(b.duplicate, true);
  assert.equal(new Set([first.jobId, a.jobId, c.jobId]).size, 3);
  assert.ok(missing instanceof JobwireError && invalid instanceof JobwireError);
  assert.deepEqual(errorFields(missing), errorFields(loneMissing));
  assert.deepEqual(errorFields(invalid), errorFields(loneInvalid));
  const stats = await adminQueueStats(stack.address, queue);
  assert.equal(stats.pendingDue, 3, 'first, a and c; the refused ones stored nothing');
});

test('enqueue: a call with a signal or timeoutMs of its own goes alone', async () => {
  const queue = uniqueQueue('coalesce-own');
  const before = await rpcCount('Enqueue');
  const rs = await Promise.all([
    client.enqueue(queue, 't', 1, { timeoutMs: 4000 }),
    client.enqueue(queue, 't', 2, { signal: new AbortController().signal }),
    client.enqueue(queue, 't', 3, { timeoutMs: 4000 }),
  ]);
  assert.equal(new Set(rs.map((r) => r.jobId)).size, 3);
  assert.equal((await rpcCount('Enqueue')) - before, 3);
});

// ---- EnqueueCoalescer alone, with fake senders ------------------------------

/** Senders whose calls the test answers by hand. */
function fakeSenders() {
  const one = [];
  const batches = [];
  return {
    one, batches,
    sendOne: (request, timeoutMs) => new Promise((resolve, reject) => one.push({ request, timeoutMs, resolve, reject })),
    sendBatch: (requests, timeoutMs) => new Promise((resolve, reject) => batches.push({ requests, timeoutMs, resolve, reject })),
  };
}

const job = (i) => ({ queue: 'q', type: 't', payload: Buffer.from(`p${i}`) });

test('EnqueueCoalescer: the enqueues of one turn go in one call; a later turn does not wait for it', async () => {
  const f = fakeSenders();
  const c = new EnqueueCoalescer(f.sendOne, f.sendBatch, 5000);
  const p0 = c.enqueue(job(0));
  assert.equal(f.one.length + f.batches.length, 0, 'sent when the turn ends, not before');
  await Promise.resolve();
  assert.equal(f.one.length, 1, 'a lone enqueue goes alone');
  assert.equal(f.one[0].timeoutMs, 5000);
  const rest = [1, 2, 3].map((i) => settled(c.enqueue(job(i))));
  await Promise.resolve();
  assert.equal(f.batches.length, 1, 'sent while the first call is still in flight');
  assert.deepEqual(f.batches[0].requests.map((r) => r.payload.toString()), ['p1', 'p2', 'p3']);
  f.batches[0].resolve([
    { code: 0, jobId: 'id1', duplicate: false, message: '', reason: '' },
    { code: Status.NOT_FOUND, jobId: '', duplicate: false, message: 'no parent', reason: 'DEPENDENCY_NOT_FOUND' },
    { code: 0, jobId: 'id1', duplicate: true, message: '', reason: '' },
  ]);
  // The refused job is sent again alone, and ends with that call's answer.
  await waitFor(() => f.one.length === 2, { what: 'the refused job sent alone' });
  assert.equal(f.one[1].request.payload.toString(), 'p2');
  f.one[1].reject(new JobwireError(Status.NOT_FOUND, 'no parent, alone', { reason: 'DEPENDENCY_NOT_FOUND', metadata: { job_id: 'x' } }));
  const [r1, r2, r3] = await Promise.all(rest);
  assert.deepEqual(r1, { jobId: 'id1', duplicate: false });
  assert.deepEqual(r3, { jobId: 'id1', duplicate: true });
  assert.ok(r2 instanceof JobwireError);
  assert.equal(r2.details, 'no parent, alone');
  assert.deepEqual(r2.metadata, { job_id: 'x' });
  f.one[0].resolve({ jobId: 'id0', duplicate: false });
  assert.deepEqual(await p0, { jobId: 'id0', duplicate: false });
});

test('EnqueueCoalescer: a batch refused whole with nothing stored is sent again job by job; other failures reach every job', async () => {
  const f = fakeSenders();
  const c = new EnqueueCoalescer(f.sendOne, f.sendBatch, 5000);
  const refused = [1, 2].map((i) => settled(c.enqueue(job(i))));
  await Promise.resolve();
  assert.equal(f.batches.length, 1);
  f.batches[0].reject(new JobwireError(Status.PERMISSION_DENIED, 'token may not enqueue to q2'));
  await waitFor(() => f.one.length === 2, { what: 'each job of the refused batch sent alone' });
  f.one[0].resolve({ jobId: 'id1', duplicate: false });
  f.one[1].reject(new JobwireError(Status.PERMISSION_DENIED, 'token may not enqueue to q2'));
  const [r1, r2] = await Promise.all(refused);
  assert.deepEqual(r1, { jobId: 'id1', duplicate: false });
  assert.equal(r2.code, Status.PERMISSION_DENIED);

  const lost = [3, 4].map((i) => settled(c.enqueue(job(i))));
  await Promise.resolve();
  assert.equal(f.batches.length, 2);
  f.batches[1].reject(new JobwireError(Status.UNAVAILABLE, 'connection reset'));
  const [r3, r4] = await Promise.all(lost);
  assert.equal(r3.code, Status.UNAVAILABLE, 'an unknown outcome is not sent again');
  assert.equal(r4.code, Status.UNAVAILABLE);
  assert.equal(f.one.length, 2);
});

test('EnqueueCoalescer: more than a batch holds goes in several calls at once', async () => {
  const f = fakeSenders();
  const c = new EnqueueCoalescer(f.sendOne, f.sendBatch, 5000);
  const all = Array.from({ length: 2001 }, (_, i) => settled(c.enqueue(job(i))));
  await Promise.resolve();
  assert.deepEqual(f.batches.map((b) => b.requests.length), [1000, 1000]);
  assert.equal(f.one.length, 1);
  assert.equal(f.one[0].request.payload.toString(), 'p2000');
  for (const b of f.batches) b.resolve(b.requests.map((r, i) => ({ code: 0, jobId: `${r.payload}`, duplicate: false, message: '', reason: '' })));
  f.one[0].resolve({ jobId: 'p2000', duplicate: false });
  const out = await Promise.all(all);
  assert.deepEqual(out.map((r) => r.jobId), Array.from({ length: 2001 }, (_, i) => `p${i}`));
});

test('EnqueueCoalescer: a job with dependsOnBatchIndex goes alone at once', async () => {
  const f = fakeSenders();
  const c = new EnqueueCoalescer(f.sendOne, f.sendBatch, 5000);
  const p0 = settled(c.enqueue(job(0)));
  const p1 = settled(c.enqueue({ ...job(1), dependsOnBatchIndex: [0] }));
  assert.equal(f.one.length, 1, 'sent at once, not batched with job 0');
  assert.deepEqual(f.one[0].request.dependsOnBatchIndex, [0]);
  await Promise.resolve();
  assert.equal(f.one.length, 2);
  f.one[1].resolve({ jobId: 'id0', duplicate: false });
  f.one[0].reject(new JobwireError(Status.INVALID_ARGUMENT, 'depends_on_batch_index: only in EnqueueBatch'));
  assert.deepEqual(await p0, { jobId: 'id0', duplicate: false });
  assert.equal((await p1).code, Status.INVALID_ARGUMENT);
});
