// Several brokers behind one target (a Kubernetes headless Service): the
// channels default to round_robin (ROUND_ROBIN_SERVICE_CONFIG, src/proto.ts).
// Two independent stacks (each its own redis-server and broker), and a target
// that resolves to both: ipv4:127.0.0.1:<portA>,127.0.0.1:<portB> (grpc-js's
// ipv4 resolver takes a comma-separated list).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Worker } from '../dist/index.js';
import { freePort, startStack, uniqueQueue, waitFor, sleep } from './harness.mjs';

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

/** AckBatch and Ack calls a broker answered, from its /metrics. */
async function ackCalls(metricsPort) {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let calls = 0;
  for (const m of text.matchAll(/^jobwire_rpc_requests_total\{([^}]*)\} (\S+)$/gm)) {
    if (/method="(Ack|AckBatch)"/.test(m[1])) calls += Number(m[2]);
  }
  return calls;
}

test('Worker on two brokers sharing one Redis: acks go on its Work stream, slots free at once', async () => {
  // Replicas share one Redis. The Worker's channel is round_robin too, but
  // its acks travel on its one Work stream, so they reach the broker that
  // holds their slots, which frees them at once: else 20 jobs of 20 ms at
  // concurrency 2 would take about 20 s (leases of 5 s) instead of well
  // under one. (Acks sent through the other replica are tested in
  // tests/settle_elsewhere_test.cc.)
  const metricsPorts = [await freePort(), await freePort()];
  const pair = await Promise.all(metricsPorts.map((port) => startStack({
    redisPort: stacks[0].redisPort,
    brokerArgs: [`--metrics_listen=127.0.0.1:${port}`],
  })));
  const q = uniqueQueue('rrshared');
  const jobs = 20;
  for (let i = 0; i < jobs; i++) await direct[0].enqueue(q, 't', { i });
  const t0 = Date.now();
  const { worker, outcomes, running } = startWorker(`ipv4:${pair[0].address},${pair[1].address}`, q, { leaseMs: 5000 });
  try {
    await waitFor(() => outcomes.length >= jobs, { what: `${jobs} outcomes`, timeoutMs: 30_000 });
    const ms = Date.now() - t0;
    assert.ok(outcomes.every((o) => o.kind === 'ack_ok'), outcomes.map((o) => o.kind).join(' '));
    assert.ok(ms < 4000, `${jobs} jobs took ${ms} ms: slots freed only at the lease's end?`);
    const acks = await Promise.all(metricsPorts.map(ackCalls));
    assert.deepEqual(acks, [0, 0], 'Ack / AckBatch calls per broker: the acks went on the stream');
  } finally {
    await worker.stop();
    await running;
    await Promise.all(pair.map((s) => s.stop()));
  }
});
