// Claim stream messages carrying several jobs (ClaimResponse.jobs), against a
// real redis-server + jobwire-broker: on a raw stream, and through a Worker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Worker } from '../dist/index.js';
import { makeStub } from '../dist/proto.js';
import { startStack, uniqueQueue, waitFor, sleep } from './harness.mjs';

let stack;
let client;
let stub;

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 5000 });
  stub = makeStub(stack.address);
});

after(async () => {
  stub?.close();
  client?.close();
  await stack?.stop();
});

/** Enqueues n jobs of type `type` with payload { n } in one EnqueueBatch; returns their ids. */
async function enqueueMany(q, type, n) {
  const res = await client.enqueueBatch(q, Array.from({ length: n }, (_, i) => ({ type, payload: { n: i } })));
  assert.equal(res.length, n);
  assert.ok(res.every((r) => r.ok), JSON.stringify(res.filter((r) => !r.ok)));
  return res.map((r) => r.jobId);
}

test('raw Claim stream: with 50 jobs pending and maxInFlight 20, the first message carries several jobs and exactly 20 arrive before any ack', async () => {
  const q = uniqueQueue('cbatch-raw');
  const ids = await enqueueMany(q, 'raw', 50);
  const MAX = 20;

  const messages = []; // job ids of each message, in order
  const tokens = new Map(); // job id -> lease token
  const call = stub.Claim({ queues: [q], maxInFlight: MAX, leaseMs: 30_000, workerId: 'node-test-batch' });
  const problems = []; // checked by the test (a throw in a stream listener would not fail it cleanly)
  let ended;
  call.on('data', (msg) => {
    if (!Array.isArray(msg.jobs)) return void problems.push(`a message without a jobs list: ${JSON.stringify(msg)}`);
    messages.push(msg.jobs.map((cj) => cj.job?.id));
    for (const cj of msg.jobs) {
      if (cj.job?.queue !== q || cj.job?.state !== 'JOB_STATE_ACTIVE') problems.push(`unexpected job ${JSON.stringify(cj.job)}`);
      if (!cj.leaseToken) problems.push(`job ${cj.job?.id} without a lease token`);
      if (tokens.has(cj.job?.id)) problems.push(`job ${cj.job?.id} delivered twice`);
      tokens.set(cj.job?.id, cj.leaseToken);
    }
  });
  call.on('error', () => {});
  call.on('status', (st) => { ended = st; });
  try {
    await waitFor(() => tokens.size >= MAX, { what: `${MAX} claimed jobs`, timeoutMs: 10_000 });
    // Nothing more comes while the 20 are held: the limit counts jobs, not messages.
    await sleep(500);
    assert.deepEqual(problems, []);
    assert.equal(ended, undefined, `the stream ended: ${ended?.code} ${ended?.details}`);
    assert.equal(tokens.size, MAX, `${tokens.size} jobs arrived with maxInFlight ${MAX}`);
    const sizes = messages.map((m) => m.length);
    assert.ok(messages.every((m) => m.length >= 1 && m.length <= MAX), `message sizes ${sizes}`);
    assert.ok(sizes[0] > 1, `the first message carried ${sizes[0]} job(s) (sizes ${sizes})`);
    assert.equal(sizes.reduce((a, b) => a + b, 0), MAX);
    // Distinct jobs of the batch, each ACTIVE under the token it came with.
    const claimed = messages.flat();
    assert.equal(new Set(claimed).size, MAX);
    for (const id of claimed) assert.ok(ids.includes(id), `unknown job ${id}`);
    for (const id of claimed.slice(0, 3)) assert.equal((await client.getJob(q, id)).state, 'JOB_STATE_ACTIVE');

    // Acking 5 of them frees 5 slots of the stream: 5 more jobs arrive, no more.
    const acked = claimed.slice(0, 5);
    const results = await client.ackBatch(acked.map((id) => ({ queue: q, jobId: id, leaseToken: tokens.get(id), result: 'ok' })));
    assert.ok(results.every((r) => r.ok), JSON.stringify(results));
    await waitFor(() => tokens.size >= MAX + 5, { what: `${MAX + 5} claimed jobs`, timeoutMs: 10_000 });
    await sleep(300);
    assert.deepEqual(problems, []);
    assert.equal(tokens.size, MAX + 5);
  } finally {
    call.cancel();
  }
});

test('Worker: 50 jobs pending before it starts, concurrency 50: batched messages, each job run exactly once, all completed', async (t) => {
  const q = uniqueQueue('cbatch-worker');
  const N = 50;
  const ids = await enqueueMany(q, 'batched', N);

  const runs = new Map(); // job id -> handler calls
  const started = []; // job ids in the order handlers were called
  const outcomes = [];
  const worker = new Worker({
    address: stack.address, queues: [q], concurrency: N, graceMs: 5000, logger: null,
    // Long lease: a job the worker dropped would not come back within the wait below.
    leaseMs: 60_000,
    onOutcome: (o) => outcomes.push(o),
  });
  // Observe the messages the worker is given (white box: the private handler
  // of a stream message), only to check that this test does see batches.
  const delivered = []; // job ids of each message
  const onMessage = worker.onMessage;
  assert.equal(typeof onMessage, 'function', 'Worker.onMessage (stream message handler) exists');
  worker.onMessage = function (s, msg) {
    delivered.push(msg.jobs.map((cj) => cj.job.id));
    return onMessage.call(this, s, msg);
  };
  worker.register('batched', async (job) => {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    started.push(job.id);
    // Hold every job a moment so that all 50 are in the worker at once.
    await sleep(100);
    return { n: job.json().n, attempt: job.attempt };
  });
  const running = worker.run({ installSignalHandlers: false });
  try {
    await waitFor(() => outcomes.length >= N, { what: `${N} outcomes`, timeoutMs: 15_000 })
      .catch((e) => { throw new Error(`${e.message} (got ${outcomes.length}, ${runs.size} jobs run)`); });
    await sleep(200); // a duplicate run would show up here
  } finally {
    await worker.stop();
  }
  await running;

  const sizes = delivered.map((m) => m.length);
  t.diagnostic(`message sizes: ${sizes.join(' ')}`);
  assert.ok(sizes[0] > 1, `the first message carried ${sizes[0]} job(s): no batch to test (sizes ${sizes})`);
  assert.equal(sizes.reduce((a, b) => a + b, 0), N, `sizes ${sizes}`);
  // Each message's jobs are started one by one, in the message's order.
  assert.deepEqual(started, delivered.flat());

  assert.equal(runs.size, N, `${runs.size} distinct jobs run`);
  for (const [id, count] of runs) assert.equal(count, 1, `job ${id} run ${count} times`);
  assert.deepEqual(new Set(runs.keys()), new Set(ids));
  assert.equal(outcomes.length, N);
  assert.deepEqual(outcomes.filter((o) => o.kind !== 'ack_ok').map((o) => `${o.kind} ${o.codeName}`), []);
  assert.deepEqual(new Set(outcomes.map((o) => o.job.id)), new Set(ids));
  assert.equal(worker.activeJobs, 0);
  for (let n = 0; n < N; n += 1) {
    const j = await client.getJob(q, ids[n]);
    assert.equal(j.state, 'JOB_STATE_COMPLETED', `job ${n}`);
    assert.equal(j.attempts, 1, `job ${n} attempts`);
    assert.deepEqual(j.resultJson(), { n, attempt: 1 });
  }
});
