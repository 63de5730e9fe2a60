// Client.wait (WaitJob) against a real redis-server + jobwire-broker: a job
// that completes, one that dies, one already finished, one that times out,
// an unknown job, an aborted wait, a wait that outlives a broker restart, and
// one whose call a draining gRPC C++ broker ends with CANCELLED.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Client, Worker, JobInfo, JobwireError, JobDeadError, WaitTimeoutError, NonRetryableError, Reason, Status,
} from '../dist/index.js';
import * as esm from '../dist/index.mjs';
import { startStack, uniqueQueue, waitFor, sleep, brokerCancelsFirst } from './harness.mjs';

let stack;
let client;
const workers = [];

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 5000 });
});

after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  client?.close();
  await stack?.stop();
});

/** Starts a worker of queue q with the handlers; stopped after the file. */
function startWorker(q, handlers) {
  const worker = new Worker({ address: stack.address, queues: [q], graceMs: 5000, logger: null });
  for (const [type, fn] of Object.entries(handlers)) worker.register(type, fn);
  workers.push(worker);
  worker.run({ installSignalHandlers: false });
  return worker;
}

const rejection = (p) => p.then((v) => assert.fail(`resolved with ${JSON.stringify(v)}`), (e) => e);

test('wait resolves with the completed job and its result; onUpdate sees each state', async () => {
  const q = uniqueQueue('wait-ok');
  const { jobId } = await client.enqueue(q, 'square', { n: 7 });
  const updates = [];
  const waiting = client.wait(q, jobId, { timeoutMs: 20_000, onUpdate: (j) => updates.push(j) });
  await waitFor(() => updates.length > 0, { what: 'the first update' });
  assert.equal(updates[0].state, 'JOB_STATE_PENDING');
  startWorker(q, {
    square: async (job) => {
      await sleep(300); // ACTIVE long enough to be seen
      return { square: job.json().n ** 2 };
    },
  });
  const job = await waiting;
  assert.ok(job instanceof JobInfo);
  assert.equal(job.id, jobId);
  assert.equal(job.state, 'JOB_STATE_COMPLETED');
  assert.deepEqual(job.resultJson(), { square: 49 });
  assert.equal(job.attempts, 1);
  assert.deepEqual(updates.map((u) => u.state), ['JOB_STATE_PENDING', 'JOB_STATE_ACTIVE', 'JOB_STATE_COMPLETED']);
  assert.equal(updates.at(-1), job);
});

test('a job that dies: JobDeadError with the job and its error text', async () => {
  const q = uniqueQueue('wait-dead');
  startWorker(q, {
    bad: async (job) => { throw new NonRetryableError(`input ${job.json().file} is malformed`); },
  });
  const { jobId } = await client.enqueue(q, 'bad', { file: 'a.csv' }, { maxAttempts: 5 });
  const err = await rejection(client.wait(q, jobId, { timeoutMs: 20_000 }));
  assert.ok(err instanceof JobDeadError, String(err));
  assert.ok(err instanceof JobwireError);
  assert.ok(err instanceof esm.JobDeadError, 'one class for both entries');
  assert.equal(err.name, 'JobDeadError');
  assert.equal(err.code, Status.FAILED_PRECONDITION);
  assert.equal(err.reason, '');
  assert.equal(err.job.id, jobId);
  assert.equal(err.job.state, 'JOB_STATE_DEAD');
  assert.equal(err.job.attempts, 1);
  assert.equal(err.job.error, 'NonRetryableError: input a.csv is malformed');
  assert.equal(err.message, `FAILED_PRECONDITION: job ${jobId} in queue ${q} is dead: NonRetryableError: input a.csv is malformed`);
});

test('a job already finished answers at once', async () => {
  const q = uniqueQueue('wait-done');
  startWorker(q, { t: async () => Buffer.from('done') });
  const { jobId } = await client.enqueue(q, 't');
  await waitFor(async () => (await client.getJob(q, jobId)).state === 'JOB_STATE_COMPLETED', { what: 'completed' });
  const later = await client.enqueue(q, 'later', undefined, { delayMs: 60_000 });
  await client.cancel(q, later.jobId);

  const updates = [];
  const t0 = Date.now();
  const job = await client.wait(q, jobId, { timeoutMs: 10_000, onUpdate: (j) => updates.push(j) });
  const took = Date.now() - t0;
  assert.equal(job.state, 'JOB_STATE_COMPLETED');
  assert.equal(job.result.toString(), 'done');
  assert.deepEqual(updates, [job]);
  assert.ok(took < 1000, `took ${took} ms`);
  const err = await rejection(client.wait(q, later.jobId)); // no timeout: the answer is at once
  assert.ok(err instanceof JobDeadError);
  assert.equal(err.job.error, 'cancelled');
});

test('a job never claimed: WaitTimeoutError after timeoutMs with the last state', async () => {
  const q = uniqueQueue('wait-timeout');
  const { jobId } = await client.enqueue(q, 'nobody-handles-this', { x: 1 });
  const t0 = Date.now();
  const err = await rejection(client.wait(q, jobId, { timeoutMs: 300 }));
  const took = Date.now() - t0;
  assert.ok(took >= 290 && took < 1300, `took ${took} ms`);
  assert.ok(err instanceof WaitTimeoutError, String(err));
  assert.ok(err instanceof JobwireError);
  assert.equal(err.name, 'WaitTimeoutError');
  assert.equal(err.code, Status.DEADLINE_EXCEEDED);
  assert.equal(err.reason, Reason.WAIT_TIMEOUT, 'ended by the broker, at timeout_ms');
  assert.ok(err.lastJob instanceof JobInfo);
  assert.equal(err.lastJob.id, jobId);
  assert.equal(err.lastJob.state, 'JOB_STATE_PENDING');
});

test('an unknown job: JobwireError NOT_FOUND, reason JOB_NOT_FOUND', async () => {
  const err = await rejection(client.wait(uniqueQueue('wait-none'), '424242424', { timeoutMs: 5000 }));
  assert.ok(err instanceof JobwireError);
  assert.ok(!(err instanceof JobDeadError) && !(err instanceof WaitTimeoutError));
  assert.equal(err.code, Status.NOT_FOUND);
  assert.equal(err.reason, Reason.JOB_NOT_FOUND);
});

test('bad options reject with TypeError, sending nothing', async () => {
  for (const timeoutMs of [0, -1, Number.NaN, Infinity, '100']) {
    await assert.rejects(client.wait('q', '1', { timeoutMs }), TypeError, String(timeoutMs));
  }
  await assert.rejects(client.wait('q', '1', { onUpdate: 'nope' }), TypeError);
  await assert.rejects(client.wait('q', '1', { signal: {} }), TypeError);
});

test('signal: aborting ends the wait with the abort reason; onUpdate throwing ends it with that error', async () => {
  const q = uniqueQueue('wait-abort');
  const { jobId } = await client.enqueue(q, 'nobody-handles-this');
  const ac = new AbortController();
  const waiting = client.wait(q, jobId, { signal: ac.signal });
  await sleep(300);
  const reason = new Error('gave up');
  ac.abort(reason);
  assert.equal(await rejection(waiting), reason);
  const before = new AbortController();
  before.abort();
  assert.equal((await rejection(client.wait(q, jobId, { signal: before.signal }))).name, 'AbortError');
  const boom = new Error('boom');
  assert.equal(await rejection(client.wait(q, jobId, { onUpdate: () => { throw boom; } })), boom);
});

for (const how of ['kill', 'drain']) {
  test(`the wait outlives a broker restart (${how}): UNAVAILABLE is not a rejection`, async () => {
    const q = uniqueQueue(`wait-${how}`);
    const { jobId } = await client.enqueue(q, 't', { n: 1 });
    const updates = [];
    let settled = false;
    const waiting = client.wait(q, jobId, { timeoutMs: 40_000, onUpdate: (j) => updates.push(j) });
    waiting.then(() => { settled = true; }, () => { settled = true; });
    await waitFor(() => updates.length > 0, { what: 'the first update' });
    if (how === 'kill') await stack.killBroker();
    else await stack.stopBroker();
    await sleep(1000);
    assert.equal(settled, false, 'the wait went on while the broker was down');
    await stack.restartBroker();
    await sleep(1000); // the wait resumes, sees PENDING again: not reported twice
    startWorker(q, { t: async (job) => job.json() });
    const job = await waiting;
    assert.equal(job.state, 'JOB_STATE_COMPLETED');
    assert.deepEqual(job.resultJson(), { n: 1 });
    const states = updates.map((u) => u.state);
    assert.equal(states[0], 'JOB_STATE_PENDING');
    assert.equal(states.at(-1), 'JOB_STATE_COMPLETED');
    assert.equal(states.filter((s) => s === 'JOB_STATE_PENDING').length, 1, states.join(','));
  });
}

test('a CANCELLED the client did not cause (a draining gRPC C++ broker, grpc/grpc#41785) is not a rejection: the wait calls again', async () => {
  const counts = { calls: 0, cancelled: 0 };
  const c = new Client({
    address: stack.address, timeoutMs: 5000, channelOptions: { interceptors: [brokerCancelsFirst('WaitJob', counts)] },
  });
  try {
    const q = uniqueQueue('wait-cancelled');
    const { jobId } = await client.enqueue(q, 't', { n: 2 });
    const updates = [];
    let settled = false;
    const waiting = c.wait(q, jobId, { timeoutMs: 30_000, onUpdate: (j) => updates.push(j) });
    waiting.then(() => { settled = true; }, () => { settled = true; });
    await waitFor(() => settled || (counts.cancelled === 1 && counts.calls >= 2), {
      what: 'the first call ended CANCELLED, and a second call',
    });
    await sleep(200);
    if (settled) assert.fail(`the wait settled after the CANCELLED: ${await waiting.then(String, String)}`);
    startWorker(q, { t: async (job) => job.json() });
    const job = await waiting;
    assert.equal(job.state, 'JOB_STATE_COMPLETED');
    assert.deepEqual(job.resultJson(), { n: 2 });
    assert.ok(counts.calls >= 2, `WaitJob calls: ${counts.calls}`);
    assert.equal(counts.cancelled, 1);
    const states = updates.map((u) => u.state);
    assert.equal(states[0], 'JOB_STATE_PENDING');
    assert.equal(states.at(-1), 'JOB_STATE_COMPLETED');
    assert.equal(states.filter((s) => s === 'JOB_STATE_PENDING').length, 1, states.join(','));
  } finally {
    c.close();
  }
});

test('a wait the client cancels (signal) rejects with the abort reason and never calls again', async () => {
  const counts = { calls: 0, cancelled: 0 };
  const c = new Client({
    address: stack.address, timeoutMs: 5000,
    channelOptions: { interceptors: [brokerCancelsFirst('WaitJob', counts, { cancelFirst: false })] },
  });
  try {
    const q = uniqueQueue('wait-abort-once');
    const { jobId } = await client.enqueue(q, 'nobody-handles-this');
    const ac = new AbortController();
    const updates = [];
    const waiting = c.wait(q, jobId, { signal: ac.signal, onUpdate: (j) => updates.push(j) });
    await waitFor(() => updates.length > 0, { what: 'the first update' });
    const reason = new Error('gave up');
    ac.abort(reason); // the call is cancelled: grpc-js ends it CANCELLED
    assert.equal(await rejection(waiting), reason);
    await sleep(500);
    assert.equal(counts.calls, 1, 'no WaitJob call after the client cancelled its own');
  } finally {
    c.close();
  }
});
