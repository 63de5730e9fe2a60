// AckBatch: Client.ackBatch against a real redis-server + jobwire-broker, the
// Worker's ack coalescing seen through the broker's /metrics, and the
// AckCoalescer's batching rules against a fake sender.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Worker, JobwireError, Status } from '../dist/index.js';
import { makeStub } from '../dist/proto.js';
import { AckCoalescer, MAX_ACK_BATCH } from '../dist/ack_coalescer.js';
import { startStack, freePort, uniqueQueue, waitFor, sleep, rpcCount as rpcCountAt, olderBroker } from './harness.mjs';

let stack;
let client;
let stub;
let metricsPort;

before(async () => {
  metricsPort = await freePort();
  stack = await startStack({ brokerArgs: [`--metrics_listen=127.0.0.1:${metricsPort}`] });
  client = new Client({ address: stack.address, timeoutMs: 5000 });
  stub = makeStub(stack.address);
});

after(async () => {
  stub?.close();
  client?.close();
  await stack?.stop();
});

/**
 * Claims `n` jobs of `queues` on a raw Claim stream, then cancels the stream
 * (the jobs keep their leases). Returns Map "<queue>/<job id>" -> lease
 * token (job ids are per queue).
 */
function claim(queues, n, leaseMs) {
  return new Promise((resolve, reject) => {
    const got = new Map();
    const call = stub.Claim({ queues, maxInFlight: n, leaseMs, workerId: 'node-test-raw' });
    const timer = setTimeout(() => { call.cancel(); reject(new Error(`claimed ${got.size} of ${n} jobs: ${[...got.keys()]}`)); }, 10_000);
    // Each message carries 1..n jobs (ClaimResponse.jobs), in claim order.
    call.on('data', (msg) => {
      for (const cj of msg.jobs) got.set(`${cj.job.queue}/${cj.job.id}`, cj.leaseToken);
      if (got.size === n) {
        clearTimeout(timer);
        call.cancel();
        resolve(got);
      }
    });
    call.on('error', () => {});
  });
}

/** Sum of jobwire_rpc_requests_total for one Broker method (harness.mjs). */
const rpcCount = (method) => rpcCountAt(metricsPort, method);

test('ackBatch: per-ack results across two queues; only the good acks change anything', async () => {
  const qa = uniqueQueue('ackb-a');
  const qb = uniqueQueue('ackb-b');
  // A job of qb claimed with a 1 s lease, let expire and claimed again: the
  // first claim's token is stale.
  const staleJob = await client.enqueue(qb, 't', { s: 1 }, { backoffBaseMs: 10, backoffMaxMs: 20 });
  const first = await claim([qb], 1, 1000);
  const staleToken = first.get(`${qb}/${staleJob.jobId}`);
  await waitFor(async () => (await client.getJob(qb, staleJob.jobId)).state === 'JOB_STATE_PENDING',
    { what: 'the 1 s lease to expire', timeoutMs: 10_000 });
  await sleep(50); // past the 10..20 ms retry backoff

  const goodA = await client.enqueue(qa, 't', { a: 1 });
  const goodB = await client.enqueue(qb, 't', { b: 1 });
  const invalidB = await client.enqueue(qb, 't', { b: 2 });
  const held = await claim([qa, qb], 4, 30_000);
  const token = (q, id) => held.get(`${q}/${id}`);
  assert.deepEqual([...held.keys()].sort(),
    [`${qa}/${goodA.jobId}`, `${qb}/${goodB.jobId}`, `${qb}/${invalidB.jobId}`, `${qb}/${staleJob.jobId}`].sort());
  assert.notEqual(token(qb, staleJob.jobId), staleToken);

  const results = await client.ackBatch([
    { queue: qa, jobId: goodA.jobId, leaseToken: token(qa, goodA.jobId), result: { done: 'a' } },
    { queue: qb, jobId: staleJob.jobId, leaseToken: staleToken, result: { done: 'stale' } },
    { queue: qa, jobId: 'no-such-job', leaseToken: 'whatever', result: 'x' },
    { queue: qb, jobId: invalidB.jobId, leaseToken: '', result: { done: 'invalid' } },
    { queue: qb, jobId: goodB.jobId, leaseToken: token(qb, goodB.jobId), result: Buffer.from([0, 255]) },
  ]);
  assert.equal(results.length, 5);
  assert.deepEqual(results[0], { ok: true });
  assert.deepEqual(results[4], { ok: true });
  const expected = [[1, 'FAILED_PRECONDITION'], [2, 'NOT_FOUND'], [3, 'INVALID_ARGUMENT']];
  for (const [i, name] of expected) {
    const r = results[i];
    assert.equal(r.ok, false, `ack ${i}`);
    assert.equal(r.codeName, name, `ack ${i}: ${r.codeName} ${r.message}`);
    assert.equal(r.code, Status[name]);
    assert.ok(r.error instanceof JobwireError);
    assert.equal(r.error.code, r.code);
    assert.equal(r.error.details, r.message);
    assert.ok(r.message.length > 0);
  }
  assert.ok(results[3].message.startsWith('acks[3].'), results[3].message);
  assert.match(results[3].message, /lease_token/);

  // The good acks completed their jobs with the results.
  const a = await client.getJob(qa, goodA.jobId);
  assert.equal(a.state, 'JOB_STATE_COMPLETED');
  assert.deepEqual(a.resultJson(), { done: 'a' });
  const b = await client.getJob(qb, goodB.jobId);
  assert.equal(b.state, 'JOB_STATE_COMPLETED');
  assert.deepEqual([...b.result], [0, 255]);
  // The refused ones are untouched: still held by their current lease.
  const stale = await client.getJob(qb, staleJob.jobId);
  assert.equal(stale.state, 'JOB_STATE_ACTIVE');
  assert.equal(stale.attempts, 2);
  assert.equal(stale.result.length, 0);
  const invalid = await client.getJob(qb, invalidB.jobId);
  assert.equal(invalid.state, 'JOB_STATE_ACTIVE');
  assert.equal(invalid.result.length, 0);
  await assert.rejects(client.getJob(qa, 'no-such-job'), (e) => e.code === Status.NOT_FOUND);

  // Repeating a successful ack with the same token answers OK, changes nothing.
  const again = await client.ackBatch([
    { queue: qa, jobId: goodA.jobId, leaseToken: token(qa, goodA.jobId), result: { done: 'again' } },
  ]);
  assert.deepEqual(again, [{ ok: true }]);
  assert.deepEqual((await client.getJob(qa, goodA.jobId)).resultJson(), { done: 'a' });
});

test('completedRetentionMs 0: the job is gone after its ack, a repeated ack still answers OK', async () => {
  const q = uniqueQueue('retention0');
  const { jobId } = await client.enqueue(q, 't', { n: 1 }, { completedRetentionMs: 0 });
  const held = await claim([q], 1, 30_000);
  const ack = { queue: q, jobId, leaseToken: held.get(`${q}/${jobId}`), result: 'done' };
  assert.deepEqual(await client.ackBatch([ack]), [{ ok: true }]);
  await assert.rejects(client.getJob(q, jobId), (e) => e.code === Status.NOT_FOUND);
  assert.deepEqual(await client.ackBatch([ack]), [{ ok: true }]);
});

test('ackBatch: an empty or oversized batch rejects with INVALID_ARGUMENT', async () => {
  await assert.rejects(client.ackBatch([]),
    (e) => e instanceof JobwireError && e.code === Status.INVALID_ARGUMENT && e.codeName === 'INVALID_ARGUMENT');
  const q = uniqueQueue('ackb-big');
  const tooMany = Array.from({ length: MAX_ACK_BATCH + 1 }, (_, i) => ({ queue: q, jobId: `j${i}`, leaseToken: 't' }));
  await assert.rejects(client.ackBatch(tooMany),
    (e) => e instanceof JobwireError && e.code === Status.INVALID_ARGUMENT);
});

test('Worker: 300 quick jobs at concurrency 16 are acked on the Work stream: no AckBatch or Ack call', async (t) => {
  const q = uniqueQueue('coalesce');
  const N = 300;
  const jobs = Array.from({ length: N }, (_, n) => ({ type: 'quick', payload: { n } }));
  const enqueued = await client.enqueueBatch(q, jobs);
  assert.ok(enqueued.every((r) => r.ok));
  const ids = enqueued.map((r) => r.jobId);

  const ackBatchBefore = await rpcCount('AckBatch');
  const ackBefore = await rpcCount('Ack');
  const outcomes = [];
  const worker = new Worker({
    address: stack.address, queues: [q], concurrency: 16, graceMs: 5000, logger: null,
    onOutcome: (o) => outcomes.push(o),
  });
  const events = [];
  worker.on('outcome', (o) => events.push(o));
  worker.register('quick', async (job) => {
    if (job.json().n % 3 === 0) await sleep(1);
    return { n: job.json().n };
  });
  const running = worker.run({ installSignalHandlers: false });
  try {
    await waitFor(() => outcomes.length >= N, { what: `${N} outcomes`, timeoutMs: 30_000 });
  } finally {
    await worker.stop();
  }
  await running;

  assert.equal(outcomes.length, N);
  assert.equal(events.length, N, "the 'outcome' event fires once per job too");
  const bad = outcomes.filter((o) => o.kind !== 'ack_ok');
  assert.deepEqual(bad.map((o) => `${o.kind} ${o.codeName}`), []);
  assert.deepEqual(new Set(outcomes.map((o) => o.job.id)), new Set(ids));
  for (let n = 0; n < N; n += 1) {
    const j = await client.getJob(q, ids[n]);
    assert.equal(j.state, 'JOB_STATE_COMPLETED', `job ${n}`);
    assert.deepEqual(j.resultJson(), { n });
  }

  // The broker counts a call when it answers, before the client sees it.
  const ackBatchCalls = (await rpcCount('AckBatch')) - ackBatchBefore;
  const ackCalls = (await rpcCount('Ack')) - ackBefore;
  t.diagnostic(`${ackBatchCalls} AckBatch calls, ${ackCalls} Ack calls for ${N} jobs`);
  assert.equal(ackCalls, 0, 'no unary Ack call');
  // The acks went on the Work stream (the fake-sender tests below check
  // that they are coalesced).
  assert.equal(ackBatchCalls, 0, 'no AckBatch call while the Work stream was open');
});

test('Worker: a broker that answers Work UNIMPLEMENTED gets Claim streams, and the acks go as AckBatch calls', async () => {
  const q = uniqueQueue('older');
  const N = 60;
  const enqueued = await client.enqueueBatch(q, Array.from({ length: N }, (_, n) => ({ type: 'quick', payload: { n } })));
  const ackBatchBefore = await rpcCount('AckBatch');
  const counts = { work: 0 };
  const outcomes = [];
  const worker = new Worker({
    address: stack.address, queues: [q], concurrency: 8, graceMs: 5000, logger: null,
    channelOptions: { interceptors: [olderBroker(counts)] },
    onOutcome: (o) => outcomes.push(o),
  });
  worker.register('quick', async (job) => job.json());
  const running = worker.run({ installSignalHandlers: false });
  try {
    await waitFor(() => outcomes.length >= N, { what: `${N} outcomes`, timeoutMs: 30_000 });
  } finally {
    await worker.stop();
  }
  await running;
  assert.deepEqual(outcomes.filter((o) => o.kind !== 'ack_ok').map((o) => o.kind), []);
  assert.deepEqual(new Set(outcomes.map((o) => o.job.id)), new Set(enqueued.map((r) => r.jobId)));
  assert.equal(counts.work, 1, 'Work tried once, then Claim streams');
  const ackBatchCalls = (await rpcCount('AckBatch')) - ackBatchBefore;
  assert.ok(ackBatchCalls > 0, 'the acks went as AckBatch calls');
  for (const r of enqueued) assert.equal((await client.getJob(q, r.jobId)).state, 'JOB_STATE_COMPLETED');
});

// ---- AckCoalescer alone, with a fake sender ---------------------------------

/** A sender whose calls the test answers by hand. */
function fakeSender() {
  const calls = [];
  const send = (acks) => new Promise((resolve, reject) => calls.push({ acks, resolve, reject }));
  return { calls, send };
}

const ack = (i, extra = {}) => ({ queue: 'q', jobId: `j${i}`, leaseToken: `t${i}`, ...extra });
const settled = (p) => p.then(() => 'ok', (e) => e);

/** Lets the microtasks queued so far run (the coalescer sends from one). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

test('AckCoalescer: the acks of one turn go together; acks queued meanwhile go in the next call', async () => {
  const { calls, send } = fakeSender();
  const c = new AckCoalescer(send);
  const first = [0, 1].map((i) => settled(c.ack(ack(i))));
  assert.equal(calls.length, 0, 'sent from a microtask, after this turn\'s acks');
  await Promise.resolve();
  assert.equal(calls.length, 1, 'sent before the next turn, without a timer');
  assert.deepEqual(calls[0].acks.map((a) => a.jobId), ['j0', 'j1']);
  const rest = [2, 3, 4].map((i) => settled(c.ack(ack(i))));
  await turn();
  assert.equal(calls.length, 1, 'one call in flight at a time');
  calls[0].resolve([{ code: 0, message: '' }, { code: 0, message: '' }]);
  assert.deepEqual(await Promise.all(first), ['ok', 'ok']);
  await waitFor(() => calls.length === 2, { what: 'second call' });
  assert.deepEqual(calls[1].acks.map((a) => a.jobId), ['j2', 'j3', 'j4']);
  calls[1].resolve([{ code: 0, message: '' }, { code: Status.FAILED_PRECONDITION, message: 'stale' }, { code: 0, message: '' }]);
  const [r2, r3, r4] = await Promise.all(rest);
  assert.equal(r2, 'ok');
  assert.equal(r4, 'ok');
  assert.ok(r3 instanceof JobwireError);
  assert.equal(r3.code, Status.FAILED_PRECONDITION);
  assert.equal(r3.details, 'stale');
  await sleep(10);
  assert.equal(calls.length, 2, 'nothing left to send');
});

test('AckCoalescer: a failed call rejects each of its acks with the call error; later acks still go', async () => {
  const { calls, send } = fakeSender();
  const c = new AckCoalescer(send);
  const p0 = settled(c.ack(ack(0)));
  await turn();
  const p1 = settled(c.ack(ack(1)));
  const p2 = settled(c.ack(ack(2)));
  assert.deepEqual(calls.map((call) => call.acks.length), [1]);
  calls[0].reject(new JobwireError(Status.UNAVAILABLE, 'redis down'));
  const e0 = await p0;
  assert.equal(e0.code, Status.UNAVAILABLE);
  await waitFor(() => calls.length === 2, { what: 'second call' });
  calls[1].reject(new JobwireError(Status.DEADLINE_EXCEEDED, 'slow'));
  const [e1, e2] = await Promise.all([p1, p2]);
  assert.equal(e1.code, Status.DEADLINE_EXCEEDED);
  assert.equal(e2.code, Status.DEADLINE_EXCEEDED);
  // A short answer fails the acks it does not cover (INTERNAL), never hangs.
  const p3 = settled(c.ack(ack(3)));
  await waitFor(() => calls.length === 3, { what: 'third call' });
  calls[2].resolve([]);
  assert.equal((await p3).code, Status.INTERNAL);
});

test('AckCoalescer: at most 1000 acks per call, the rest in the next one', async () => {
  const { calls, send } = fakeSender();
  const c = new AckCoalescer(send);
  const first = settled(c.ack(ack(-1)));
  await turn();
  const many = Array.from({ length: 1500 }, (_, i) => settled(c.ack(ack(i))));
  const ok = (n) => Array.from({ length: n }, () => ({ code: 0, message: '' }));
  calls[0].resolve(ok(1));
  await first;
  await waitFor(() => calls.length === 2, { what: 'second call' });
  assert.equal(calls[1].acks.length, MAX_ACK_BATCH);
  assert.equal(calls[1].acks[0].jobId, 'j0', 'oldest first');
  calls[1].resolve(ok(MAX_ACK_BATCH));
  await waitFor(() => calls.length === 3, { what: 'third call' });
  assert.equal(calls[2].acks.length, 500);
  assert.equal(calls[2].acks[0].jobId, `j${MAX_ACK_BATCH}`);
  calls[2].resolve(ok(500));
  assert.ok((await Promise.all(many)).every((r) => r === 'ok'));
});
