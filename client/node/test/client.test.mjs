// Producer-side tests against a real redis-server + jobwire-broker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { Client, JobwireError, Status } from '../dist/index.js';
import { startStack, freePort, uniqueQueue } from './harness.mjs';

let stack;
let client;

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 5000 });
});

after(async () => {
  client?.close();
  await stack?.stop();
});

test('enqueue + getJob round trip with options', async () => {
  const q = uniqueQueue('opts');
  const before = Date.now();
  const r = await client.enqueue(q, 'report', { a: 1 }, {
    priority: 7, delayMs: 60_000, maxAttempts: 5, backoffBaseMs: 250, backoffMaxMs: 4000,
  });
  assert.equal(r.duplicate, false);
  assert.ok(r.jobId.length > 0);
  const job = await client.getJob(q, r.jobId);
  assert.equal(job.id, r.jobId);
  assert.equal(job.queue, q);
  assert.equal(job.type, 'report');
  assert.equal(job.state, 'JOB_STATE_PENDING');
  assert.equal(job.priority, 7);
  assert.equal(job.maxAttempts, 5);
  assert.equal(job.attempts, 0);
  assert.equal(job.backoffBaseMs, 250);
  assert.equal(job.backoffMaxMs, 4000);
  assert.equal(typeof job.availableAtMs, 'number');
  assert.ok(job.availableAtMs >= before + 55_000, `availableAtMs ${job.availableAtMs} not ~60 s ahead of ${before}`);
  assert.ok(job.createdAtMs > 0 && job.createdAtMs <= job.availableAtMs);
  assert.deepEqual(job.json(), { a: 1 });

  // runAt as a Date.
  const at = new Date(Date.now() + 3_600_000);
  const r2 = await client.enqueue(q, 'report', 'x', { runAt: at });
  const job2 = await client.getJob(q, r2.jobId);
  assert.equal(job2.state, 'JOB_STATE_PENDING');
  assert.ok(Math.abs(job2.availableAtMs - at.getTime()) < 5000);
  assert.equal(job2.maxAttempts, 3, 'broker default max_attempts');
  assert.equal(job2.json(), 'x', 'a string payload is JSON-encoded');
});

test('idempotency key: second enqueue is a duplicate with the same id', async () => {
  const q = uniqueQueue('idem');
  const a = await client.enqueue(q, 't', { n: 1 }, { idempotencyKey: 'order-42' });
  const b = await client.enqueue(q, 't', { n: 2 }, { idempotencyKey: 'order-42' });
  assert.equal(a.duplicate, false);
  assert.equal(b.duplicate, true);
  assert.equal(b.jobId, a.jobId);
  const job = await client.getJob(q, a.jobId);
  assert.equal(job.idempotencyKey, 'order-42');
  assert.deepEqual(job.json(), { n: 1 }, 'the duplicate stored nothing');
  const byKey = await client.getJobByIdempotencyKey(q, 'order-42');
  assert.equal(byKey.id, a.jobId);
  assert.deepEqual(byKey.json(), { n: 1 });
  await assert.rejects(client.getJobByIdempotencyKey(q, 'order-43'), (e) => e.code === Status.NOT_FOUND);
});

test('concurrency key: travels with the job (enqueue and enqueueBatch)', async () => {
  const q = uniqueQueue('ckey');
  const a = await client.enqueue(q, 't', { n: 1 }, { concurrencyKey: 'customer-7' });
  assert.equal((await client.getJob(q, a.jobId)).concurrencyKey, 'customer-7');
  const [b] = await client.enqueueBatch(q, [{ type: 't', payload: 1, options: { concurrencyKey: 'customer-8' } }]);
  assert.equal((await client.getJob(q, b.jobId)).concurrencyKey, 'customer-8');
  const c = await client.enqueue(q, 't', 2);
  assert.equal((await client.getJob(q, c.jobId)).concurrencyKey, '');
});

test('raw bytes pass through unchanged', async () => {
  const q = uniqueQueue('bytes');
  const bytes = Buffer.from([0, 1, 2, 253, 254, 255, 10, 13]);
  const r = await client.enqueue(q, 'bin', bytes);
  const job = await client.getJob(q, r.jobId);
  assert.ok(Buffer.isBuffer(job.payload));
  assert.deepEqual([...job.payload], [...bytes]);
  const r2 = await client.enqueue(q, 'bin', new Uint8Array([9, 8, 7]));
  assert.deepEqual([...(await client.getJob(q, r2.jobId)).payload], [9, 8, 7]);
});

test('invalid argument surfaces the broker message unchanged', async () => {
  const q = uniqueQueue('inval');
  const err = await client.enqueue(q, 't', {}, { priority: 5000 }).then(
    () => assert.fail('priority 5000 was accepted'), (e) => e);
  assert.ok(err instanceof JobwireError, `got ${err}`);
  assert.equal(err.code, Status.INVALID_ARGUMENT);
  assert.equal(err.code, 3);
  assert.equal(err.codeName, 'INVALID_ARGUMENT');
  assert.match(err.details, /^priority\b.*5000/);
  assert.equal(err.message, `INVALID_ARGUMENT: ${err.details}`);
  // The same job through EnqueueBatch: the broker's own text (prefixed with
  // the job's index by the broker), also passed through untouched.
  const [res] = await client.enqueueBatch(q, [{ type: 't', payload: {}, options: { priority: 5000 } }]);
  assert.equal(res.ok, false);
  assert.ok(res.message.endsWith(err.details), `${res.message} vs ${err.details}`);
});

test('enqueueBatch: one invalid job gets its own error, the others are stored', async () => {
  const q = uniqueQueue('batch');
  const results = await client.enqueueBatch(q, [
    { type: 'a', payload: { i: 0 } },
    { type: 'b', payload: { i: 1 }, options: { priority: 5000 } },
    { type: 'c', payload: Buffer.from('raw'), options: { maxAttempts: 2 } },
  ]);
  assert.equal(results.length, 3);
  assert.equal(results[0].ok, true);
  assert.equal(results[2].ok, true);
  assert.equal(results[1].ok, false);
  assert.equal(results[1].code, Status.INVALID_ARGUMENT);
  assert.equal(results[1].codeName, 'INVALID_ARGUMENT');
  assert.match(results[1].message, /priority/);
  assert.ok(results[1].error instanceof JobwireError);
  const j0 = await client.getJob(q, results[0].jobId);
  assert.equal(j0.type, 'a');
  assert.deepEqual(j0.json(), { i: 0 });
  const j2 = await client.getJob(q, results[2].jobId);
  assert.equal(j2.payload.toString(), 'raw');
  assert.equal(j2.maxAttempts, 2);

  // A call-level error (empty batch) raises.
  await assert.rejects(client.enqueueBatch(q, []), (e) => e instanceof JobwireError && e.code === Status.INVALID_ARGUMENT);
});

test('cancel makes a pending job DEAD; a second cancel is refused', async () => {
  const q = uniqueQueue('cancel');
  const { jobId } = await client.enqueue(q, 't', {}, { delayMs: 60_000 });
  assert.equal(await client.cancel(q, jobId), false, 'a PENDING job: no run to stop');
  const job = await client.getJob(q, jobId);
  assert.equal(job.state, 'JOB_STATE_DEAD');
  assert.equal(job.error, 'cancelled');
  assert.ok(job.finishedAtMs > 0);
  await assert.rejects(client.cancel(q, jobId),
    (e) => e instanceof JobwireError && e.code === Status.FAILED_PRECONDITION);
});

test('unknown job id gives NOT_FOUND', async () => {
  await assert.rejects(client.getJob(uniqueQueue('nf'), 'no-such-job'),
    (e) => e instanceof JobwireError && e.code === Status.NOT_FOUND && e.codeName === 'NOT_FOUND');
});

test('unreachable broker (nothing listening) fails with UNAVAILABLE, no hang', async () => {
  const port = await freePort();
  const c = new Client({ address: `127.0.0.1:${port}`, timeoutMs: 1000 });
  const t0 = Date.now();
  const err = await c.enqueue('q', 't', {}).then(() => assert.fail('enqueue succeeded'), (e) => e);
  const took = Date.now() - t0;
  c.close();
  assert.ok(err instanceof JobwireError);
  assert.ok([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED].includes(err.code), `code ${err.codeName}`);
  assert.ok(took < 2500, `took ${took} ms`);
});

test('silent peer (accepts, never answers) fails with DEADLINE_EXCEEDED at the deadline', async () => {
  const sockets = new Set();
  const srv = net.createServer((s) => { sockets.add(s); s.on('error', () => {}); });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const c = new Client({ address: `127.0.0.1:${srv.address().port}`, timeoutMs: 800 });
  const t0 = Date.now();
  const err = await c.getJob('q', 'x').then(() => assert.fail('getJob succeeded'), (e) => e);
  const took = Date.now() - t0;
  c.close();
  for (const s of sockets) s.destroy();
  srv.close();
  assert.ok(err instanceof JobwireError);
  assert.ok([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED].includes(err.code), `code ${err.codeName}`);
  assert.ok(took >= 700 && took < 2500, `took ${took} ms`);
});
