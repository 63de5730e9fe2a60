// The Worker's settle rules after a CANCELLED the client did not cause
// (docs/clients.md, Worker), against a real redis-server + jobwire-broker:
// a draining gRPC C++ broker (1.51) ends a call that reached it after
// Server::Shutdown began with CANCELLED instead of UNAVAILABLE, and no
// handler ever sees it (grpc/grpc#41785, a "zombified" call). The Worker
// treats it as UNAVAILABLE: the Ack / Fail is sent again under the same
// rules (backoff, lease end), and if the last attempt still ends so the
// outcome is ack_unknown / fail_unknown, not *_error. A CANCELLED of
// grpc-js's own cancel ("Cancelled on client") is not the broker's: it stays
// a refusal. The CANCELLED answers come from a client interceptor
// (brokerCancelsUnsent) that sends nothing; for the acks to go as AckBatch
// calls, the Worker sees a broker older than Work (olderBroker).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Worker, NonRetryableError, Status } from '../dist/index.js';
import { startStack, freePort, uniqueQueue, waitFor, sleep, rpcCount as rpcCountAt, olderBroker, brokerCancelsUnsent } from './harness.mjs';

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

/** Calls of a BrokerService method the broker received (all tests of this file: compare before / after). */
const rpcCount = (method) => rpcCountAt(metricsPort, method);

/** Starts a Worker with these interceptors; `outcomes`: what it reported, `runs`: the attempts its handler ran. */
function startWorker(q, interceptors, handler, opts = {}) {
  const outcomes = [];
  const runs = [];
  const worker = new Worker({
    address: stack.address, queues: [q], graceMs: 5000, logger: null, ...opts,
    channelOptions: { interceptors },
    onOutcome: (o) => outcomes.push(o),
  });
  worker.register('j', async (job) => {
    runs.push(job.attempt);
    return handler(job);
  });
  const running = worker.run({ installSignalHandlers: false });
  return { outcomes, runs, stop: async () => { await worker.stop(); await running; } };
}

const only = (outcomes, jobId) => {
  const mine = outcomes.filter((o) => o.job.id === jobId);
  assert.equal(mine.length, 1, `outcomes of ${jobId}: ${mine.map((o) => o.kind)}`);
  return mine[0];
};

test('a Fail the broker ends CANCELLED unseen (a draining gRPC C++ broker) is sent again: fail_ok, the job dead, the handler ran once', async () => {
  const q = uniqueQueue('cancelfail');
  const counts = { calls: 0, cancelled: 0 };
  const failsBefore = await rpcCount('Fail');
  const w = startWorker(q, [brokerCancelsUnsent('Fail', counts)], () => { throw new NonRetryableError('boom'); });
  try {
    const { jobId: id } = await client.enqueue(q, 'j', {}, { maxAttempts: 3 });
    await waitFor(() => w.outcomes.some((o) => o.job.id === id), { what: 'the outcome' });
    await sleep(300); // nothing more comes
    const o = only(w.outcomes, id);
    assert.deepEqual([o.kind, o.failOutcome, o.leaseLost], ['fail_ok', 'DEAD', false], `outcome ${o.kind} ${o.error?.message ?? ''}`);
    assert.deepEqual(counts, { calls: 2, cancelled: 1 }, 'the first Fail ended CANCELLED, sent again once');
    assert.equal((await rpcCount('Fail')) - failsBefore, 1, 'the broker saw only the second Fail');
    assert.deepEqual(w.runs, [1], 'the handler ran once');
    const job = await client.getJob(q, id);
    assert.deepEqual([job.state, job.attempts, job.error], ['JOB_STATE_DEAD', 1, 'NonRetryableError: boom']);
  } finally {
    await w.stop();
  }
});

test('an Ack (AckBatch call) the broker ends CANCELLED unseen is sent again: ack_ok, the job completed, the handler ran once', async () => {
  const q = uniqueQueue('cancelack');
  const counts = { calls: 0, cancelled: 0 };
  const ackBatchBefore = await rpcCount('AckBatch');
  const w = startWorker(q, [olderBroker(), brokerCancelsUnsent('AckBatch', counts)], () => 'done');
  try {
    const { jobId: id } = await client.enqueue(q, 'j', {}, { maxAttempts: 3 });
    await waitFor(() => w.outcomes.some((o) => o.job.id === id), { what: 'the outcome' });
    await sleep(300); // nothing more comes
    const o = only(w.outcomes, id);
    assert.deepEqual([o.kind, o.leaseLost], ['ack_ok', false], `outcome ${o.kind} ${o.error?.message ?? ''}`);
    assert.deepEqual(counts, { calls: 2, cancelled: 1 }, 'the first AckBatch ended CANCELLED, sent again once');
    assert.equal((await rpcCount('AckBatch')) - ackBatchBefore, 1, 'the broker saw only the second AckBatch');
    assert.deepEqual(w.runs, [1], 'the handler ran once');
    const job = await client.getJob(q, id);
    assert.deepEqual([job.state, job.attempts, job.result?.toString()], ['JOB_STATE_COMPLETED', 1, '"done"']);
  } finally {
    await w.stop();
  }
});

// Every Fail / AckBatch and every ExtendLease ends CANCELLED unsent (a
// broker draining throughout): the lease is not renewed, so the worker's
// estimate of its end stays receipt + 1 s; the Ack / Fail is sent again until
// then, and its outcome is unknown (it may have been stored), not a refusal.
for (const c of [
  { what: 'a Fail', method: 'Fail', extra: [], handler: () => { throw new Error('boom'); }, kind: 'fail_unknown' },
  { what: 'an Ack (AckBatch calls)', method: 'AckBatch', extra: [olderBroker()], handler: () => 'done', kind: 'ack_unknown' },
]) {
  test(`${c.what} still ended CANCELLED by the broker when the lease ends is ${c.kind}, not a refusal`, async () => {
    const q = uniqueQueue('cancelend');
    const counts = { calls: 0, cancelled: 0 };
    const always = { cancel: () => true };
    const leaseMs = 1000;
    let returnedAt;
    const w = startWorker(q, [...c.extra, brokerCancelsUnsent(c.method, counts, always), brokerCancelsUnsent('ExtendLease', undefined, always)],
      (job) => {
        returnedAt ??= Date.now();
        return c.handler(job);
      }, { leaseMs });
    try {
      const { jobId: id } = await client.enqueue(q, 'j', {}, { maxAttempts: 3 });
      await waitFor(() => w.outcomes.some((o) => o.job.id === id), { what: 'the outcome', timeoutMs: 5000 });
      const reportedAt = Date.now();
      const o = w.outcomes.find((x) => x.job.id === id && x.job.attempt === 1);
      assert.ok(o, 'an outcome of attempt 1');
      assert.deepEqual([o.kind, o.code, o.codeName], [c.kind, Status.CANCELLED, 'CANCELLED'], `outcome ${o.kind} ${o.error?.message ?? ''}`);
      assert.ok(counts.cancelled >= 2, `${counts.cancelled} ${c.method} calls ended CANCELLED: sent again`);
      assert.ok(reportedAt >= returnedAt + leaseMs - 200, `gave up ${returnedAt + leaseMs - reportedAt} ms before the lease ended`);
    } finally {
      await w.stop();
    }
  });
}

test('a CANCELLED of grpc-js\'s own cancel ("Cancelled on client") is not the broker\'s: the Fail is not sent again, fail_error', async () => {
  const q = uniqueQueue('clientcancel');
  const counts = { calls: 0, cancelled: 0 };
  const w = startWorker(q, [brokerCancelsUnsent('Fail', counts, { details: 'Cancelled on client' })],
    () => { throw new NonRetryableError('boom'); });
  try {
    const { jobId: id } = await client.enqueue(q, 'j', {}, { maxAttempts: 3 });
    await waitFor(() => w.outcomes.some((o) => o.job.id === id), { what: 'the outcome' });
    await sleep(300); // nothing more comes
    const o = only(w.outcomes, id);
    assert.deepEqual([o.kind, o.code, o.error?.details], ['fail_error', Status.CANCELLED, 'Cancelled on client']);
    assert.deepEqual(counts, { calls: 1, cancelled: 1 }, 'sent once');
    assert.equal((await client.getJob(q, id)).state, 'JOB_STATE_ACTIVE', 'the broker never saw the Fail');
  } finally {
    await w.stop();
  }
});
