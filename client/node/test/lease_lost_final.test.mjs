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
import { Client, Worker, NonRetryableError, RetryAfterError, Status } from '../dist/index.js';
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

/** Starts a Worker; `lines`: what it logged. */
function startWorker(stack, opts, handlers) {
  const outcomes = [];
  const lines = [];
  const keep = (m) => { lines.push(m); };
  const worker = new Worker({
    address: stack.address, graceMs: 5000, logger: { info: keep, warn: keep, error: keep }, ...opts,
    onOutcome: (o) => outcomes.push(o),
  });
  for (const [type, fn] of Object.entries(handlers)) worker.register(type, fn);
  const running = worker.run({ installSignalHandlers: false });
  return { worker, outcomes, lines, stop: async () => { await worker.stop(); await running; } };
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

// The lease learnt lost while the Ack / Fail is in flight: the first attempt
// is stored by the broker (the job completed, or failed), its answer lost
// (the interceptor holds it, then answers UNAVAILABLE), and meanwhile the
// worker learns that the lease is lost: its own renewal, which goes on while
// the Ack / Fail is retried (every third of the 1 s lease), is refused, since
// the job is no longer active under that token. The attempt was sent while
// the lease held, so it is sent once more, at once (even past the worker's
// lease estimate), and the broker answers that repeat with the first outcome:
// ack_ok / fail_ok, not unknown. The loss was learnt after the handler
// returned, so the outcome's leaseLost ("reported lost while the handler
// ran") is false; the worker's log shows it was learnt.

/**
 * A client interceptor for the calls of one RPC (`method`: 'AckBatch' or
 * 'Fail'): each reaches the broker; `answer(request, response, status)` (the
 * broker's answer; it may return a Promise) gives the status the worker is
 * told instead, undefined to keep the broker's.
 */
function heldAnswer(method, answer) {
  return (options, nextCall) => {
    if (!options.method_definition.path.endsWith(`/${method}`)) return new grpc.InterceptingCall(nextCall(options));
    let request;
    let response;
    return new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        next(metadata, {
          onReceiveMessage(message, nextMessage) {
            response = message;
            nextMessage(message);
          },
          onReceiveStatus(status, nextStatus) {
            void Promise.resolve(answer(request, response, status)).then((s) => nextStatus(s ?? status));
          },
        });
      },
      sendMessage(message, next) {
        request = message;
        next(message);
      },
    });
  };
}

const lostAnswer = { code: Status.UNAVAILABLE, details: 'stand-in: answer lost', metadata: new grpc.Metadata() };

/**
 * The first call of a job: the interceptor's script holds its answer until
 * `learn()`, then answers UNAVAILABLE; `first` is what the broker answered
 * ({ status, response }) once it did; `calls` the job ids of every call.
 */
function holdFirst(idsOf) {
  const h = { calls: [], first: undefined };
  const learnt = new Promise((r) => { h.learn = r; });
  h.interceptor = (method) => heldAnswer(method, (req, res, status) => {
    if (h.calls.push(idsOf(req)) > 1) return undefined;
    h.first = { status, response: res, at: Date.now() };
    return learnt.then(() => lostAnswer);
  });
  return h;
}

/**
 * The worker learns that the lease of job `id` (1 s) is lost while its first
 * call's answer is held: its next renewal (every 333 ms) is refused by the
 * broker (the job moved on), which it logs. Then the worker's estimate of the
 * lease end is let pass (no renewal sent after the first call was stored
 * succeeded, so that estimate is at most 1 s after it), so that the attempt
 * sent again is beyond it.
 */
async function learnLost(w, held, id) {
  await waitFor(() => w.lines.some((l) => l.startsWith(`lease of job ${id} lost`)),
    { what: 'the worker learning the lease lost (a renewal refused)', timeoutMs: 3000 });
  assert.ok(!hasOutcome(w, id), 'no outcome while the first answer is held');
  await sleep(Math.max(0, held.first.at + 1000 + 200 - Date.now()));
}

test('an Ack stored but unanswered is sent once more, at once, when the lease is learnt lost meanwhile: ack_ok', async () => {
  const stack = await startStack();
  stacks.push(stack);
  const client = new Client({ address: stack.address, timeoutMs: 5000 });
  const q = uniqueQueue('storedack');
  const held = holdFirst((req) => req.acks.map((a) => a.jobId));
  const w = startWorker(stack, { queues: [q], leaseMs: 1000, channelOptions: { interceptors: [olderBroker(), held.interceptor('AckBatch')] } },
    { j: async () => 'done' });
  try {
    const { jobId: id } = await client.enqueue(q, 'j', {}, { maxAttempts: 3 });
    await waitFor(() => held.first, { what: 'the first AckBatch answered by the broker' });
    assert.equal(held.first.status.code, Status.OK);
    assert.deepEqual(held.first.response.results.map((r) => r.code), [Status.OK], 'the first ack stored');
    assert.equal((await client.getJob(q, id)).state, 'JOB_STATE_COMPLETED');
    await learnLost(w, held, id);
    held.learn();
    await waitFor(() => hasOutcome(w, id), { what: 'the outcome' });
    assert.deepEqual(held.calls, [[id], [id]], 'sent twice');
    const o = only(w.outcomes, id);
    assert.deepEqual([o.kind, o.leaseLost], ['ack_ok', false], `outcome ${o.kind} ${o.error?.message ?? ''}`);
    assert.ok(w.lines.some((l) => l.startsWith(`lease of job ${id} lost`)), 'the loss was learnt (after the handler returned)');
    const job = await client.getJob(q, id);
    assert.deepEqual([job.state, job.attempts], ['JOB_STATE_COMPLETED', 1]);
  } finally {
    held.learn();
    await w.stop();
    client.close();
  }
});

test('a Fail stored but unanswered is sent once more, at once, when the lease is learnt lost meanwhile: fail_ok, the first outcome', async () => {
  const stack = await startStack();
  stacks.push(stack);
  const client = new Client({ address: stack.address, timeoutMs: 5000 });
  const q = uniqueQueue('storedfail');
  const held = holdFirst((req) => [req.jobId]);
  const w = startWorker(stack, { queues: [q], leaseMs: 1000, channelOptions: { interceptors: [held.interceptor('Fail')] } }, {
    // Retried in an hour: not delivered again during the test.
    j: async () => { throw new RetryAfterError('boom', 3_600_000); },
  });
  try {
    const { jobId: id } = await client.enqueue(q, 'j', {}, { maxAttempts: 3 });
    await waitFor(() => held.first, { what: 'the first Fail answered by the broker' });
    assert.equal(held.first.status.code, Status.OK);
    const first = held.first.response;
    assert.equal(first.outcome, 'OUTCOME_RETRY_SCHEDULED', 'the first Fail stored');
    assert.ok(Number(first.nextAttemptAtMs) > Date.now());
    assert.equal((await client.getJob(q, id)).state, 'JOB_STATE_PENDING');
    await learnLost(w, held, id);
    held.learn();
    await waitFor(() => hasOutcome(w, id), { what: 'the outcome' });
    assert.deepEqual(held.calls, [[id], [id]], 'sent twice');
    const o = only(w.outcomes, id);
    assert.deepEqual([o.kind, o.failOutcome, o.nextAttemptAtMs, o.leaseLost], ['fail_ok', 'RETRY_SCHEDULED', Number(first.nextAttemptAtMs), false],
      `outcome ${o.kind} ${o.error?.message ?? ''}`);
    assert.ok(w.lines.some((l) => l.startsWith(`lease of job ${id} lost`)), 'the loss was learnt (after the handler returned)');
    const job = await client.getJob(q, id);
    assert.deepEqual([job.state, job.attempts, job.availableAtMs], ['JOB_STATE_PENDING', 1, Number(first.nextAttemptAtMs)]);
  } finally {
    held.learn();
    await w.stop();
    client.close();
  }
});

/**
 * A client interceptor for the calls of one RPC (`method`): while
 * `unsent()` says so when a call starts, the call is answered UNAVAILABLE
 * without reaching the broker; otherwise it goes through.
 */
function unsentUnavailable(method, unsent) {
  return (options, nextCall) => {
    if (!options.method_definition.path.endsWith(`/${method}`) || !unsent()) return new grpc.InterceptingCall(nextCall(options));
    let listener;
    return new grpc.InterceptingCall(nextCall(options), {
      start(metadata, l) { listener = l; },
      sendMessage() {},
      halfClose() {
        setImmediate(() => listener.onReceiveStatus({ code: Status.UNAVAILABLE, details: 'stand-in: broker unreachable', metadata: new grpc.Metadata() }));
      },
      cancel() {},
    });
  };
}

// The lease is renewed while the Ack is retried (docs/clients.md, Worker:
// "from delivery until the job is settled"): the AckBatch calls are answered
// UNAVAILABLE, unsent, for 2.5 leases (a broker unreachable for acks only),
// then reach the broker. The renewals keep the lease (and the worker's
// estimate of its end, which bounds the retries), so the Ack is retried
// until it gets through: ack_ok, the handler ran once, and the job is
// completed on its first attempt. Had renewal stopped when the handler
// returned, the lease would have ended after one lease: ack_unknown, and the
// job delivered again.
test('the lease is renewed while an Ack is retried: ack_ok on the first attempt', async () => {
  const stack = await startStack();
  stacks.push(stack);
  const client = new Client({ address: stack.address, timeoutMs: 5000 });
  const q = uniqueQueue('renewack');
  const leaseMs = 1000;
  const outageMs = 2500;
  const acks = []; // when each AckBatch call started
  const interceptor = unsentUnavailable('AckBatch', () => {
    const now = Date.now();
    acks.push(now);
    return now - acks[0] < outageMs;
  });
  const runs = [];
  const w = startWorker(stack, { queues: [q], leaseMs, channelOptions: { interceptors: [olderBroker(), interceptor] } },
    { j: async (job) => { runs.push(job.attempt); return 'done'; } });
  try {
    const { jobId: id } = await client.enqueue(q, 'j', {}, { maxAttempts: 3 });
    await waitFor(() => hasOutcome(w, id), { what: 'the outcome', timeoutMs: 15_000 });
    await sleep(300); // nothing more comes
    const o = only(w.outcomes, id);
    assert.deepEqual([o.kind, o.job.attempt, o.leaseLost], ['ack_ok', 1, false], `outcome ${o.kind} ${o.error?.message ?? ''}`);
    assert.deepEqual(runs, [1], 'the handler ran once, for attempt 1 (no delivery again)');
    assert.ok(acks.length >= 2 && acks.at(-1) - acks[0] >= outageMs,
      `${acks.length} AckBatch calls over ${acks.at(-1) - acks[0]} ms: the Ack retried for at least ${outageMs} ms`);
    const job = await client.getJob(q, id);
    assert.deepEqual([job.state, job.attempts, job.result?.toString()], ['JOB_STATE_COMPLETED', 1, '"done"']);
  } finally {
    await w.stop();
    client.close();
  }
});
