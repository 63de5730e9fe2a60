// The broker is SIGKILLed and restarted on the same port while a worker runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Worker } from '../dist/index.js';
import { startStack, uniqueQueue, waitFor, sleep } from './harness.mjs';

let stack;
let client;
let worker;

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 3000 });
});

after(async () => {
  await worker?.stop();
  client?.close();
  await stack?.stop();
});

test('broker SIGKILLed and restarted: running job still acked, later jobs processed', async () => {
  const q = uniqueQueue('restart');
  const outcomes = [];
  const started = new Set();
  worker = new Worker({
    address: stack.address, queues: [q], concurrency: 2, leaseMs: 6000, graceMs: 5000, logger: null,
    onOutcome: (o) => outcomes.push(o),
  });
  worker.register('quick', async (job) => ({ n: job.json().n }));
  let slowReturnedAt = 0;
  worker.register('slow', async (job) => {
    started.add(job.id);
    await sleep(800);
    slowReturnedAt = Date.now();
    return { slow: true };
  });
  const running = worker.run({ installSignalHandlers: false });
  const acked = (id) => outcomes.find((o) => o.job.id === id && o.kind === 'ack_ok');

  const first = await client.enqueue(q, 'quick', { n: 1 });
  await waitFor(() => acked(first.jobId), { what: 'first job acked' });

  const slow = await client.enqueue(q, 'slow', {});
  await waitFor(() => started.has(slow.jobId), { what: 'slow job started' });

  // The slow handler returns while the broker is down: its Ack gets
  // UNAVAILABLE and is retried until the broker is back.
  await stack.killBroker();
  const killedAt = Date.now();
  await waitFor(() => slowReturnedAt > 0, { what: 'slow handler returned', timeoutMs: 5000 });
  await sleep(1000);
  const restartAt = Date.now();
  await stack.restartBroker();

  await waitFor(() => outcomes.find((o) => o.job.id === slow.jobId), { what: 'slow job outcome', timeoutMs: 8000 });
  assert.ok(acked(slow.jobId), `slow job: ${JSON.stringify(outcomes.filter((o) => o.job.id === slow.jobId).map((o) => [o.kind, o.codeName]))}`);
  assert.ok(slowReturnedAt >= killedAt && slowReturnedAt < restartAt,
    `slow handler returned at ${slowReturnedAt}, broker killed at ${killedAt}, restarted at ${restartAt}: the Ack retry was not exercised`);
  // The client's channel (round_robin) kept reconnecting with its backoff
  // while the broker was down: its calls fail fast with UNAVAILABLE until the
  // next attempt finds the broker (docs/clients.md), at most 5 s later.
  const slowJob = await waitFor(() => client.getJob(q, slow.jobId),
    { what: 'the client to reach the restarted broker', timeoutMs: 8000 });
  assert.equal(slowJob.state, 'JOB_STATE_COMPLETED');
  assert.equal(slowJob.attempts, 1);
  assert.deepEqual(slowJob.resultJson(), { slow: true });

  // Jobs enqueued after the restart are delivered on the reopened stream.
  const later = [];
  for (let n = 2; n <= 5; n++) later.push((await client.enqueue(q, 'quick', { n })).jobId);
  await waitFor(() => later.every(acked), { what: 'later jobs acked', timeoutMs: 10_000 });
  for (const id of later) {
    const j = await client.getJob(q, id);
    assert.equal(j.state, 'JOB_STATE_COMPLETED');
    assert.equal(j.attempts, 1);
  }
  await worker.stop();
  await running;
});
