// The final Ack / Fail of a job whose lease is known lost (docs/clients.md,
// Worker), against a real redis-server + jobwire-broker:
// - once a renewal was refused (job.signal aborted with a LeaseLostError),
//   the Ack / Fail is sent once; answered UNAVAILABLE it is not sent again
//   (the broker would refuse it) and the outcome is ack_unknown /
//   fail_unknown with that error;
// - the rule is per job: an ack that failed in the same AckBatch call, or a
//   Fail, of a job whose lease holds is still retried.
// The UNAVAILABLE answers come from a client interceptor replacing the
// broker's answer to chosen AckBatch / Fail calls; for the acks to go as
// AckBatch calls, the Worker sees a broker older than Work (olderBroker). A job whose lease is lost
// was deleted (Admin.DeleteJob), so a second attempt would be answered
// NOT_FOUND (ack_error / fail_error), not unknown.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { Client, Worker, NonRetryableError, Status } from '../dist/index.js';
import { startStack, uniqueQueue, waitFor, sleep, adminDeleteJob, olderBroker } from './harness.mjs';

const stacks = [];
after(async () => {
  for (const s of stacks) await s.stop();
});

/**
 * A client interceptor for the calls of one RPC (`method`: 'AckBatch' or
 * 'Fail'): `script(request)` decides each call, and may take its time (a
 * Promise) before the request goes out: 'pass' leaves the broker's answer,
 * 'unavailable' replaces it with UNAVAILABLE (the broker may or may not have
 * stored the call, as after a connection lost mid-call).
 */
function scripted(method, script) {
  return (options, nextCall) => {
    if (!options.method_definition.path.endsWith(`/${method}`)) return new grpc.InterceptingCall(nextCall(options));
    let verdict = Promise.resolve('pass');
    let unavailable = false;
    return new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        next(metadata, {
          // (The answer's message goes on: grpc-js holds the status until
          // it has; a call ending in an error status drops it.)
          onReceiveStatus(status, nextStatus) {
            nextStatus(unavailable
              ? { code: Status.UNAVAILABLE, details: 'stand-in: broker unreachable', metadata: new grpc.Metadata() }
              : status);
          },
        });
      },
      sendMessage(message, next) {
        verdict = Promise.resolve(script(message)).then((v) => {
          unavailable = v === 'unavailable';
          next(message);
        });
      },
      halfClose(next) {
        void verdict.then(() => next());
      },
    });
  };
}

/** Resolves once the handler's job.signal aborted (its lease is lost). */
const leaseLost = (job) => new Promise((resolve) => {
  if (job.signal.aborted) resolve();
  else job.signal.addEventListener('abort', () => resolve(), { once: true });
});

function startWorker(stack, opts, handlers) {
  const outcomes = [];
  const worker = new Worker({
    address: stack.address, graceMs: 5000, logger: null, ...opts,
    onOutcome: (o) => outcomes.push(o),
  });
  for (const [type, fn] of Object.entries(handlers)) worker.register(type, fn);
  const running = worker.run({ installSignalHandlers: false });
  return { outcomes, stop: async () => { await worker.stop(); await running; } };
}

const hasOutcome = (w, jobId) => w.outcomes.some((o) => o.job.id === jobId);

const only = (outcomes, jobId) => {
  const mine = outcomes.filter((o) => o.job.id === jobId);
  assert.equal(mine.length, 1, `outcomes of ${jobId}: ${mine.map((o) => o.kind)}`);
  return mine[0];
};

test('an Ack answered UNAVAILABLE after the lease was lost is not sent again; an ack in the same AckBatch whose lease holds is', async () => {
  const stack = await startStack();
  stacks.push(stack);
  const client = new Client({ address: stack.address, timeoutMs: 5000 });
  const q = uniqueQueue('lostack');
  // AckBatch calls: the job ids of each. The first waits for the plug (the
  // acks finishing meanwhile are queued together for the next one), the
  // second is answered UNAVAILABLE, the others reach the broker.
  const calls = [];
  let unplug;
  const plug = new Promise((r) => { unplug = r; });
  const interceptor = scripted('AckBatch', (req) => {
    const n = calls.push(req.acks.map((a) => a.jobId)) - 1;
    if (n === 0) return plug.then(() => 'pass');
    return n === 1 ? 'unavailable' : 'pass';
  });
  const started = new Set();
  const returned = new Set();
  const go = {};
  const gate = (type) => new Promise((r) => { go[type] = r; });
  const handle = async (job) => {
    started.add(job.type);
    await (job.type === 'lost' ? leaseLost(job) : gate(job.type));
    returned.add(job.type);
    return job.type;
  };
  const w = startWorker(stack, { queues: [q], concurrency: 3, leaseMs: 3000, channelOptions: { interceptors: [olderBroker(), interceptor] } },
    { plug: handle, lost: handle, kept: handle });
  try {
    const ids = {};
    for (const t of ['plug', 'lost', 'kept']) ids[t] = (await client.enqueue(q, t, {}, { maxAttempts: 3 })).jobId;
    await waitFor(() => started.size === 3, { what: 'the three handlers started' });
    go.plug();
    await waitFor(() => calls.length === 1, { what: 'the first AckBatch call' });
    await adminDeleteJob(stack.address, q, ids.lost); // the next renewal: NOT_FOUND
    go.kept();
    // A returned handler's ack is queued before any timer runs.
    await waitFor(() => returned.has('lost') && returned.has('kept'), { what: 'both handlers returned' });
    await sleep(50);
    unplug();
    await waitFor(() => hasOutcome(w, ids.lost) && hasOutcome(w, ids.kept), { what: 'the outcomes', timeoutMs: 15_000 });
    assert.deepEqual(calls[0], [ids.plug]);
    assert.deepEqual([...calls[1]].sort(), [ids.lost, ids.kept].sort(), 'one call, two jobs');
    assert.deepEqual(calls.slice(2), [[ids.kept]], 'only the job whose lease holds, once');
    const lost = only(w.outcomes, ids.lost);
    assert.deepEqual([lost.kind, lost.code, lost.leaseLost], ['ack_unknown', Status.UNAVAILABLE, true]);
    const kept = only(w.outcomes, ids.kept);
    assert.deepEqual([kept.kind, kept.leaseLost], ['ack_ok', false]);
    const job = await client.getJob(q, ids.kept);
    assert.equal(job.state, 'JOB_STATE_COMPLETED');
    assert.equal(job.attempts, 1);
  } finally {
    unplug();
    await w.stop();
    client.close();
  }
});

test('a Fail answered UNAVAILABLE after the lease was lost is not sent again; one whose lease holds is', async () => {
  const stack = await startStack();
  stacks.push(stack);
  const client = new Client({ address: stack.address, timeoutMs: 5000 });
  const q = uniqueQueue('lostfail');
  // Fail calls: the job id of each; each job's first is answered UNAVAILABLE.
  const calls = [];
  const interceptor = scripted('Fail', (req) => {
    const first = !calls.includes(req.jobId);
    calls.push(req.jobId);
    return first ? 'unavailable' : 'pass';
  });
  let lostStarted = false;
  const w = startWorker(stack, { queues: [q], concurrency: 2, leaseMs: 1500, channelOptions: { interceptors: [interceptor] } }, {
    lost: async (job) => {
      lostStarted = true;
      await leaseLost(job);
      throw new Error('lost');
    },
    kept: async () => {
      throw new NonRetryableError('kept'); // no second attempt
    },
  });
  try {
    const ids = {};
    for (const t of ['lost', 'kept']) ids[t] = (await client.enqueue(q, t, {}, { maxAttempts: 3 })).jobId;
    await waitFor(() => lostStarted, { what: 'the handler started' });
    await adminDeleteJob(stack.address, q, ids.lost); // the next renewal: NOT_FOUND
    await waitFor(() => hasOutcome(w, ids.lost) && hasOutcome(w, ids.kept), { what: 'the outcomes', timeoutMs: 15_000 });
    assert.equal(calls.filter((id) => id === ids.lost).length, 1, 'sent once');
    assert.equal(calls.filter((id) => id === ids.kept).length, 2, 'the lease holds: sent again');
    const lost = only(w.outcomes, ids.lost);
    assert.deepEqual([lost.kind, lost.code, lost.leaseLost], ['fail_unknown', Status.UNAVAILABLE, true]);
    const kept = only(w.outcomes, ids.kept);
    assert.deepEqual([kept.kind, kept.failOutcome, kept.leaseLost], ['fail_ok', 'DEAD', false]);
  } finally {
    await w.stop();
    client.close();
  }
});
