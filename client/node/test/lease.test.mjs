// The Worker's lease, against a real redis-server + jobwire-broker
// (docs/clients.md, Worker): its length comes from the broker
// (ClaimedJob.lease_ms, job.leaseMs), and a lost lease aborts job.signal with
// a LeaseLostError at once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { Client, Worker, LeaseLostError, Status } from '../dist/index.js';
import { startStack, uniqueQueue, waitFor, sleep, adminDeleteJob } from './harness.mjs';

const stacks = [];
const workers = [];
after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  for (const s of stacks) await s.stop();
});

async function newStack(brokerArgs = []) {
  const s = await startStack({ brokerArgs });
  stacks.push(s);
  return s;
}

function startWorker(address, opts, handlers) {
  const outcomes = [];
  const worker = new Worker({
    address, graceMs: 5000, logger: null, ...opts,
    onOutcome: (o) => outcomes.push(o),
  });
  for (const [type, fn] of Object.entries(handlers)) worker.register(type, fn);
  workers.push(worker);
  worker.run({ installSignalHandlers: false });
  return { worker, outcomes };
}

const HOUR_MS = 3_600_000;

/**
 * A client interceptor making every claim look as if Redis's clock ran an
 * hour ahead of the worker's: it shifts the lease_expires_at_ms a Claim
 * message carries. Guessing the lease length from that expiry minus the
 * local clock gives an hour; lease_ms still says the truth.
 */
function redisClockAhead(options, nextCall) {
  return new grpc.InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      next(metadata, {
        onReceiveMessage(message, nextMessage) {
          for (const cj of message?.jobs ?? []) cj.leaseExpiresAtMs = String(Number(cj.leaseExpiresAtMs) + HOUR_MS);
          nextMessage(message);
        },
      });
    },
  });
}

test('the lease length comes from the broker (job.leaseMs); handlers running 2.5x the lease are acked', async () => {
  const stack = await newStack(['--default_lease_ms=1500']);
  const client = new Client({ address: stack.address, timeoutMs: 5000 });
  try {
    // (a) no leaseMs: the broker default, with a claim expiry an hour off;
    // (b) leaseMs 1200: the lease asked for.
    const cases = [
      { name: 'broker default', opts: { channelOptions: { interceptors: [redisClockAhead] } }, lease: 1500 },
      { name: 'worker leaseMs', opts: { leaseMs: 1200 }, lease: 1200 },
    ];
    await Promise.all(cases.map(async (c) => {
      const q = uniqueQueue('leasems');
      const { worker, outcomes } = startWorker(stack.address, { queues: [q], ...c.opts }, {
        long: async (job) => {
          await sleep(2.5 * c.lease);
          return { leaseMs: job.leaseMs, aborted: job.signal.aborted };
        },
      });
      const { jobId } = await client.enqueue(q, 'long', {}, { maxAttempts: 3 });
      const o = await waitFor(() => outcomes.find((x) => x.job.id === jobId), { what: `${c.name}: outcome`, timeoutMs: 15_000 });
      assert.equal(o.kind, 'ack_ok', `${c.name}: outcome ${o.kind} ${o.codeName ?? ''}`);
      assert.equal(o.leaseLost, false, c.name);
      assert.equal(o.job.leaseMs, c.lease, `${c.name}: job.leaseMs`);
      const job = await client.getJob(q, jobId);
      assert.equal(job.state, 'JOB_STATE_COMPLETED', c.name);
      assert.equal(job.attempts, 1, c.name);
      assert.deepEqual(job.resultJson(), { leaseMs: c.lease, aborted: false }, c.name);
      await worker.stop();
    }));
  } finally {
    client.close();
  }
});

test('a lost lease (job deleted) aborts job.signal with a LeaseLostError within a renewal; the Ack is still sent and refused', async () => {
  const stack = await newStack();
  const client = new Client({ address: stack.address, timeoutMs: 5000 });
  const q = uniqueQueue('leaselost');
  let started = false;
  let abortedAt = 0;
  let reason;
  const { worker, outcomes } = startWorker(stack.address, { queues: [q], leaseMs: 1500 }, {
    wait: async (job) => {
      started = true;
      await new Promise((resolve) => {
        const t = setTimeout(resolve, 10_000);
        job.signal.addEventListener('abort', () => { abortedAt = Date.now(); reason = job.signal.reason; clearTimeout(t); resolve(); });
      });
      return 'done anyway';
    },
  });
  try {
    const { jobId } = await client.enqueue(q, 'wait', {}, { maxAttempts: 3 });
    await waitFor(() => started, { what: 'the handler started' });
    await sleep(200);
    const deletedAt = Date.now();
    await adminDeleteJob(stack.address, q, jobId);
    const o = await waitFor(() => outcomes.find((x) => x.job.id === jobId), { what: 'outcome', timeoutMs: 15_000 });
    assert.ok(abortedAt > 0, 'job.signal aborted');
    // Renewal every 500 ms: the next one after the delete is refused (a
    // margin for a loaded machine; without the signal it never aborts).
    assert.ok(abortedAt - deletedAt <= 2000, `signal aborted ${abortedAt - deletedAt} ms after the delete`);
    assert.ok(reason instanceof LeaseLostError, `abort reason ${reason?.name}: ${reason?.message}`);
    assert.equal(reason.name, 'LeaseLostError');
    assert.equal(reason.code, Status.NOT_FOUND);
    assert.equal(reason.codeName, 'NOT_FOUND');
    assert.equal(reason.jobId, jobId);
    assert.equal(reason.queue, q);
    assert.equal(reason.cause?.code, Status.NOT_FOUND);
    // The handler returned: its Ack was sent, refused, reported.
    assert.equal(o.kind, 'ack_error');
    assert.equal(o.codeName, 'NOT_FOUND');
    assert.equal(o.leaseLost, true);
    await assert.rejects(client.getJob(q, jobId), (e) => e.code === Status.NOT_FOUND);
  } finally {
    await worker.stop();
    client.close();
  }
});
