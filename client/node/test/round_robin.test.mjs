// Several brokers behind one target (a Kubernetes headless Service): the
// channels default to round_robin (ROUND_ROBIN_SERVICE_CONFIG, src/proto.ts).
// Two independent stacks (each its own redis-server and broker), and a target
// that resolves to both: ipv4:127.0.0.1:<portA>,127.0.0.1:<portB> (grpc-js's
// ipv4 resolver takes a comma-separated list).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Worker } from '../dist/index.js';
import { startStack, uniqueQueue, waitFor, sleep } from './harness.mjs';

let stacks = [];
let direct = []; // one Client per broker, on its own address
let target;

before(async () => {
  stacks = await Promise.all([startStack(), startStack()]);
  direct = stacks.map((s) => new Client({ address: s.address, timeoutMs: 5000 }));
  target = `ipv4:${stacks.map((s) => s.address).join(',')}`;
});

after(async () => {
  for (const c of direct) c.close();
  await Promise.all(stacks.map((s) => s.stop()));
});

/**
 * The indexes of the brokers that store the job `id` of `queue` enqueued with
 * payload { n }. Job ids are a per-queue counter in each broker's Redis, so
 * both brokers hand out the same ids: the payload tells the jobs apart.
 */
async function holders(queue, id, n) {
  const found = [];
  for (const [i, c] of direct.entries()) {
    try {
      if ((await c.getJob(queue, id)).json().n === n) found.push(i);
    } catch (e) {
      if (e.codeName !== 'NOT_FOUND') throw e;
    }
  }
  return found;
}

test('round_robin: one Client spreads its calls over every address of its target', async () => {
  const q = uniqueQueue('rr');
  const client = new Client({ address: target, timeoutMs: 5000 });
  try {
    const perBroker = [0, 0];
    let calls = 0;
    while (calls < 200 && (perBroker[0] === 0 || perBroker[1] === 0)) {
      const { jobId } = await client.enqueue(q, 't', { n: calls });
      const on = await holders(q, jobId, calls);
      assert.equal(on.length, 1, `job ${jobId} (n ${calls}) is on exactly one broker, found on [${on}]`);
      perBroker[on[0]]++;
      calls++;
      await sleep(5);
    }
    assert.ok(perBroker[0] > 0 && perBroker[1] > 0,
      `both brokers stored jobs after ${calls} enqueue calls: ${perBroker[0]} on A, ${perBroker[1]} on B`);
  } finally {
    client.close();
  }
});

test('round_robin can be overridden with channelOptions grpc.service_config (pick_first)', async () => {
  const q = uniqueQueue('pf');
  const client = new Client({
    address: target,
    timeoutMs: 5000,
    channelOptions: { 'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ pick_first: {} }] }) },
  });
  try {
    const perBroker = [0, 0];
    for (let i = 0; i < 20; i++) {
      const { jobId } = await client.enqueue(q, 't', { n: i });
      const on = await holders(q, jobId, i);
      assert.equal(on.length, 1);
      perBroker[on[0]]++;
    }
    assert.ok(perBroker[0] === 20 || perBroker[1] === 20,
      `pick_first puts every call on one broker: ${perBroker[0]} on A, ${perBroker[1]} on B`);
  } finally {
    client.close();
  }
});

/** Starts a Worker on `address` for `queue`; returns { worker, outcomes, running }. */
function startWorker(address, queue, opts = {}) {
  const outcomes = [];
  const worker = new Worker({
    address, queues: [queue], concurrency: 2, graceMs: 2000, logger: null, ...opts,
    onOutcome: (o) => outcomes.push(o),
  });
  worker.register('t', async (job) => { await sleep(20); return job.json(); });
  const running = worker.run({ installSignalHandlers: false });
  return { worker, outcomes, running };
}

test('Worker on a two-broker target: one broker (random) for its Claim stream and its acks', async () => {
  const q = uniqueQueue('rrw');
  const perBroker = 5;
  for (let i = 0; i < perBroker; i++) {
    for (const [b, c] of direct.entries()) await c.enqueue(q, 't', { b, i });
  }
  const { worker, outcomes, running } = startWorker(target, q);
  try {
    // The Worker's channel is pick_first over the shuffled addresses
    // (WORKER_SERVICE_CONFIG): it claims from one broker only, and its
    // AckBatch calls reach that broker (the other, with its own Redis,
    // would refuse them: FAILED_PRECONDITION, another job under that id).
    await waitFor(() => outcomes.length >= perBroker, { what: `${perBroker} outcomes` });
    await sleep(300); // nothing more arrives: the other broker's jobs are not claimed
    assert.deepEqual(outcomes.map((o) => o.kind), Array(perBroker).fill('ack_ok'),
      outcomes.map((o) => `${o.kind} ${o.codeName ?? ''} ${o.error ?? ''}`).join('; '));
    const from = outcomes[0].job.json().b;
    assert.ok(outcomes.every((o) => o.job.json().b === from), 'every job came from the same broker');
    const states = async (b) => {
      const out = [];
      for (let id = 1; id <= perBroker; id++) out.push((await direct[b].getJob(q, String(id).padStart(12, '0'))).state);
      return out;
    };
    assert.deepEqual(await states(from), Array(perBroker).fill('JOB_STATE_COMPLETED'));
    assert.deepEqual(await states(1 - from), Array(perBroker).fill('JOB_STATE_PENDING'));
  } finally {
    await worker.stop();
    await running;
  }
});

test('Worker on two brokers sharing one Redis: acks reach the broker of its stream, slots free at once', async () => {
  // Replicas share one Redis. A broker frees a stream's slot when the job is
  // settled through itself, else at the lease's end: with round_robin the
  // Worker's acks would alternate between the brokers, and 20 jobs of 20 ms
  // at concurrency 2 would take about 20 s (leases of 5 s) instead of well
  // under one.
  const replica = await startStack({ redisPort: stacks[0].redisPort });
  const q = uniqueQueue('rrshared');
  const jobs = 20;
  for (let i = 0; i < jobs; i++) await direct[0].enqueue(q, 't', { i });
  const t0 = Date.now();
  const { worker, outcomes, running } = startWorker(`ipv4:${stacks[0].address},${replica.address}`, q, { leaseMs: 5000 });
  try {
    await waitFor(() => outcomes.length >= jobs, { what: `${jobs} outcomes`, timeoutMs: 30_000 });
    const ms = Date.now() - t0;
    assert.ok(outcomes.every((o) => o.kind === 'ack_ok'), outcomes.map((o) => o.kind).join(' '));
    assert.ok(ms < 4000, `${jobs} jobs took ${ms} ms: acks sent to another broker than the stream's?`);
  } finally {
    await worker.stop();
    await running;
    await replica.stop();
  }
});
