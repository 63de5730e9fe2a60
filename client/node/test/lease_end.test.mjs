// The Worker's two lease-end rules (docs/clients.md, Worker), against a real
// redis-server + jobwire-broker: an Ack answered UNAVAILABLE is sent again
// until the lease has ended (ack_unknown when still unanswered then), and a
// delivery whose lease ended before its handler could start is dropped
// (expired_dropped) and delivered again.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { Client, Worker } from '../dist/index.js';
import { startStack, uniqueQueue, waitFor, sleep } from './harness.mjs';

const stacks = [];
after(async () => {
  for (const s of stacks) await s.stop();
});

async function newStack() {
  const s = await startStack();
  stacks.push(s);
  return s;
}

const kinds = (outcomes, id) => outcomes.filter((o) => o.job.id === id).map((o) => `${o.kind} ${o.job.attempt}`);

/**
 * A client interceptor pausing the reader of a Claim stream (as SIGSTOP or a
 * long GC would) before it hands over a message carrying a first attempt of a
 * "late" job: until 300 ms after that lease ended. Messages keep their order.
 */
function lateClaims(options, nextCall) {
  let chain = Promise.resolve();
  return new grpc.InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      next(metadata, {
        onReceiveMessage(message, nextMessage) {
          const ends = (message?.jobs ?? [])
            .filter((cj) => cj.job?.type === 'late' && cj.job?.attempts === 1)
            .map((cj) => Number(cj.leaseExpiresAtMs));
          const until = ends.length ? Math.max(...ends) + 300 : 0;
          chain = chain.then(() => sleep(Math.max(0, until - Date.now()))).then(() => nextMessage(message));
        },
      });
    },
  });
}

test('a delivery whose lease ended before its handler could start is dropped and delivered again', async () => {
  const stack = await newStack();
  const client = new Client({ address: stack.address, timeoutMs: 5000 });
  const q = uniqueQueue('expired');
  const outcomes = [];
  const runs = [];
  const warnings = [];
  const worker = new Worker({
    address: stack.address, queues: [q], leaseMs: 2000, graceMs: 5000,
    logger: { info() {}, warn: (m) => warnings.push(m), error() {} },
    channelOptions: { interceptors: [lateClaims] },
    onOutcome: (o) => outcomes.push(o),
  });
  worker.register('late', (job) => { runs.push(job.attempt); return `attempt ${job.attempt}`; });
  const running = worker.run({ installSignalHandlers: false });
  try {
    const { jobId } = await client.enqueue(q, 'late', {}, { maxAttempts: 5 });
    await waitFor(() => kinds(outcomes, jobId).length >= 2, { what: 'two outcomes', timeoutMs: 20_000 });
    await sleep(300); // nothing more comes
    assert.deepEqual(runs, [2], 'handler runs (attempts)');
    assert.deepEqual(kinds(outcomes, jobId), ['expired_dropped 1', 'ack_ok 2']);
    assert.equal(worker.stats?.().expiredDeliveriesDropped, 1);
    const dropped = warnings.filter((w) => w.includes('dropped'));
    assert.equal(dropped.length, 1);
    assert.match(dropped[0], new RegExp(`${jobId}.*${q}.*ended \\d+ ms ago`));
    const job = await client.getJob(q, jobId);
    assert.equal(job.state, 'JOB_STATE_COMPLETED');
    assert.equal(job.attempts, 2);
  } finally {
    await worker.stop();
    await running;
    client.close();
  }
});

/**
 * Runs one job whose handler returns just after the broker was killed, and
 * restarts the broker backBeforeEndMs before the lease ends (negative: after).
 */
async function ackAcrossOutage(backBeforeEndMs) {
  const stack = await newStack();
  const client = new Client({ address: stack.address, timeoutMs: 3000 });
  const q = uniqueQueue('outage');
  const outcomes = [];
  const reportedAt = [];
  let started = false;
  let killed = false;
  let leaseEnd = 0;
  const worker = new Worker({
    address: stack.address, queues: [q], leaseMs: 4000, timeoutMs: 2000, graceMs: 5000, logger: null,
    // Reconnects within 0.2 s of the broker listening again.
    channelOptions: { 'grpc.max_reconnect_backoff_ms': 200 },
    onOutcome: (o) => { reportedAt.push(Date.now()); outcomes.push(o); },
  });
  worker.register('t', async (job) => {
    if (job.attempt === 1) {
      started = true;
      await waitFor(() => killed, { what: 'the broker killed' });
      // No renewal got through since the claim: the lease ends here (Redis
      // clock; the worker's own estimate is a few ms later).
      leaseEnd = job.leaseExpiresAtMs;
    }
    return `attempt ${job.attempt}`;
  });
  const running = worker.run({ installSignalHandlers: false });
  const { jobId } = await client.enqueue(q, 't', {}, { maxAttempts: 5 });
  await waitFor(() => started, { what: 'the job started' });
  await stack.killBroker();
  killed = true;
  await waitFor(() => leaseEnd, { what: 'the handler returned' });
  await sleep(Math.max(0, leaseEnd - backBeforeEndMs - Date.now()));
  await stack.restartBroker();
  await waitFor(async () => (await client.getJob(q, jobId)).state === 'JOB_STATE_COMPLETED',
    { what: 'the job completed', timeoutMs: 20_000 });
  return { jobId, outcomes, leaseEnd, reportedAt, client, stop: async () => { await worker.stop(); await running; client.close(); } };
}

test('an Ack refused UNAVAILABLE is sent again until the lease ends', async () => {
  // The broker listens again 0.8 s before the lease ends: later than the old
  // rule ("stop when the next backoff would pass the lease end") may give up,
  // in time for the attempts kept up to the lease end.
  const r = await ackAcrossOutage(800);
  try {
    await waitFor(() => kinds(r.outcomes, r.jobId).length >= 1, { what: 'the outcome' });
    assert.deepEqual(kinds(r.outcomes, r.jobId), ['ack_ok 1']);
    assert.equal((await r.client.getJob(r.outcomes[0].job.queue, r.jobId)).attempts, 1);
  } finally {
    await r.stop();
  }
});

test('an Ack still unanswered when the lease ends is ack_unknown, not ack_error', async () => {
  const r = await ackAcrossOutage(-1000);
  try {
    await waitFor(() => kinds(r.outcomes, r.jobId).length >= 2, { what: 'two outcomes', timeoutMs: 20_000 });
    assert.deepEqual(kinds(r.outcomes, r.jobId), ['ack_unknown 1', 'ack_ok 2']);
    assert.ok(['UNAVAILABLE', 'DEADLINE_EXCEEDED'].includes(r.outcomes[0].codeName), r.outcomes[0].codeName);
    // Given up only once the lease had ended (not a backoff earlier).
    assert.ok(r.reportedAt[0] >= r.leaseEnd - 50, `gave up ${r.leaseEnd - r.reportedAt[0]} ms before the lease ended`);
  } finally {
    await r.stop();
  }
});
