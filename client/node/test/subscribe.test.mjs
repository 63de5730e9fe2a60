// Client.subscribe (Subscribe) against a real redis-server + jobwire-broker:
// the events of a job that completes and one that dies, the kinds filter,
// refused requests, a subscription that outlives a broker restart (with
// 'events_missed' for the gap) or a stream a draining gRPC C++ broker ends
// with CANCELLED, and the ways a subscription ends.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client, Worker, JobwireError, Subscription, EVENT_KINDS, Reason, Status } from '../dist/index.js';
import * as esm from '../dist/index.mjs';
import { SubscribeState } from '../dist/subscribe.js';
import { startStack, uniqueQueue, waitFor, sleep, sha256Hex, brokerCancelsFirst } from './harness.mjs';

let stack;
let client;
const workers = [];
const subs = [];

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 5000 });
});

after(async () => {
  for (const s of subs) s.close();
  await Promise.all(workers.map((w) => w.stop()));
  client?.close();
  await stack?.stop();
});

/** Starts a worker of queue q with the handlers; stopped after the file. */
function startWorker(address, q, handlers) {
  const worker = new Worker({ address, queues: [q], concurrency: 2, graceMs: 5000, logger: null });
  for (const [type, fn] of Object.entries(handlers)) worker.register(type, fn);
  workers.push(worker);
  worker.run({ installSignalHandlers: false });
  return worker;
}

async function subscribe(c, queues, options) {
  const sub = await c.subscribe(queues, options);
  subs.push(sub);
  return sub;
}

/** The next event; rejects (closing the subscription) after timeoutMs. */
async function nextEvent(sub, timeoutMs = 10_000) {
  const timer = setTimeout(() => sub.close(), timeoutMs);
  try {
    const r = await sub.next();
    assert.equal(r.done, false, `no event within ${timeoutMs} ms`);
    return r.value;
  } finally {
    clearTimeout(timer);
  }
}

const kindsOf = (events, id) => events.filter((e) => e.jobId === id).map((e) => e.kind);

function finishedBoth(...ids) {
  const seen = new Set();
  return (ev) => {
    if (ev.kind === 'completed' || ev.kind === 'dead') seen.add(ev.jobId);
    return ids.every((id) => seen.has(id));
  };
}

const rejection = (p) => p.then((v) => assert.fail(`resolved with ${v}`), (e) => e);

const MISSED = {
  kind: 'events_missed', queue: '', jobId: '', type: '', attempts: 0, atMs: 0, result: Buffer.alloc(0), error: '',
  progressPercent: undefined, progressData: Buffer.alloc(0),
};

test('subscribe sees each job\'s events in order, with details', async () => {
  const q = uniqueQueue('sub-order');
  const sub = await subscribe(client, [q], { includeDetails: true });
  assert.ok(sub instanceof Subscription && sub instanceof esm.Subscription);
  const ok = await client.enqueue(q, 'ok', { n: 6 });
  const bad = await client.enqueue(q, 'bad', null, { maxAttempts: 1 });
  startWorker(stack.address, q, {
    ok: async (job) => ({ twice: job.json().n * 2 }),
    bad: async () => { throw new Error('disk full'); },
  });
  const events = [];
  const done = finishedBoth(ok.jobId, bad.jobId);
  const timer = setTimeout(() => sub.close(), 20_000);
  for await (const ev of sub) {
    events.push(ev);
    if (done(ev)) break;
  }
  clearTimeout(timer);
  assert.equal(sub.closed, true, 'leaving for await closes it');
  assert.deepEqual(kindsOf(events, ok.jobId), ['enqueued', 'active', 'completed']);
  assert.deepEqual(kindsOf(events, bad.jobId), ['enqueued', 'active', 'dead']);
  for (const ev of events) {
    assert.equal(ev.queue, q);
    assert.equal(ev.type, ev.jobId === ok.jobId ? 'ok' : 'bad');
    assert.equal(ev.attempts, ev.kind === 'enqueued' ? 0 : 1);
    assert.equal(typeof ev.atMs, 'number');
    assert.ok(ev.atMs > 1.6e12, String(ev.atMs));
    assert.ok(Buffer.isBuffer(ev.result));
    if (ev.kind === 'completed') {
      assert.deepEqual(JSON.parse(ev.result.toString()), { twice: 12 });
      assert.equal(ev.error, '');
    } else if (ev.kind === 'dead') {
      assert.equal(ev.error, 'Error: disk full');
      assert.equal(ev.result.length, 0);
    } else {
      assert.equal(ev.result.length, 0);
      assert.equal(ev.error, '');
    }
  }
});

test('kinds: only those kinds are delivered', async () => {
  const q = uniqueQueue('sub-kinds');
  const sub = await subscribe(client, q, { kinds: ['completed'] });
  startWorker(stack.address, q, {
    ok: async () => undefined,
    bad: async () => { throw new Error('no'); },
  });
  const first = await client.enqueue(q, 'ok');
  const bad = await client.enqueue(q, 'bad', null, { maxAttempts: 1 });
  const got = [await nextEvent(sub)];
  await waitFor(async () => (await client.getJob(q, bad.jobId)).state === 'JOB_STATE_DEAD', { what: 'dead' });
  // Events of one queue come in order: had the dead job's events been sent,
  // they would come before this job's completion.
  const last = await client.enqueue(q, 'ok');
  got.push(await nextEvent(sub));
  assert.deepEqual(got.map((e) => [e.kind, e.jobId]), [['completed', first.jobId], ['completed', last.jobId]]);
  sub.close();
});

test('bad queues: INVALID_ARGUMENT from the broker; bad kinds and options: TypeError, sending nothing', async () => {
  for (const [queues, field] of [[[], 'queues'], [['bad queue!'], 'queues[0]']]) {
    const err = await rejection(client.subscribe(queues));
    assert.ok(err instanceof JobwireError, String(err));
    assert.equal(err.code, Status.INVALID_ARGUMENT);
    assert.equal(err.reason, Reason.INVALID_FIELD);
    assert.equal(err.field, field);
  }
  assert.deepEqual([...EVENT_KINDS], ['enqueued', 'active', 'completed', 'retry', 'dead', 'cancelled',
    'lease_expired', 'released', 'redriven', 'deleted', 'progress', 'cancel_requested', 'timed_out']);
  for (const kinds of [['finished'], ['events_missed'], ['Completed'], [3]]) {
    const err = await rejection(client.subscribe(['q'], { kinds }));
    assert.ok(err instanceof TypeError, String(err));
    assert.match(err.message, new RegExp(JSON.stringify(kinds[0])));
  }
  await assert.rejects(client.subscribe(['q'], { kinds: 'completed' }), TypeError);
  await assert.rejects(client.subscribe([1]), TypeError);
  await assert.rejects(client.subscribe(['q'], { timeoutMs: 0 }), TypeError);
  await assert.rejects(client.subscribe(['q'], { signal: {} }), TypeError);
});

test('beyond --max_subscriptions: RESOURCE_EXHAUSTED, TOO_MANY_SUBSCRIPTIONS, retryDelayMs 1000', async () => {
  const own = await startStack({ brokerArgs: ['--max_subscriptions=1'] });
  const c = new Client({ address: own.address, timeoutMs: 5000 });
  try {
    const sub = await c.subscribe([uniqueQueue('sub-max')]);
    const err = await rejection(c.subscribe([uniqueQueue('sub-max')]));
    assert.equal(err.code, Status.RESOURCE_EXHAUSTED);
    assert.equal(err.reason, Reason.TOO_MANY_SUBSCRIPTIONS);
    assert.equal(err.retryDelayMs, 1000);
    sub.close();
  } finally {
    c.close();
    await own.stop();
  }
});

for (const how of ['kill', 'drain']) {
  test(`a subscription outlives a broker restart (${how}): 'events_missed', then later events`, async () => {
    const own = await startStack();
    const c = new Client({ address: own.address, timeoutMs: 3000 });
    try {
      const q = uniqueQueue(`sub-${how}`);
      const sub = await subscribe(c, [q]);
      const before = await c.enqueue(q, 't');
      assert.deepEqual(await nextEvent(sub).then((e) => [e.kind, e.jobId]), ['enqueued', before.jobId]);
      if (how === 'kill') await own.killBroker();
      else await own.stopBroker();
      await sleep(500);
      await own.restartBroker();
      assert.deepEqual(await nextEvent(sub, 15_000), MISSED);
      const later = await c.enqueue(q, 't');
      const ev = await nextEvent(sub);
      assert.deepEqual([ev.kind, ev.queue, ev.jobId], ['enqueued', q, later.jobId]);
      sub.close();
    } finally {
      c.close();
      await own.stop();
    }
  });
}

test('a stream ended CANCELLED by the broker (a draining gRPC C++ broker, grpc/grpc#41785): \'events_missed\', then later events', async () => {
  const counts = { calls: 0, cancelled: 0 };
  const c = new Client({
    address: stack.address, timeoutMs: 3000, channelOptions: { interceptors: [brokerCancelsFirst('Subscribe', counts)] },
  });
  try {
    const q = uniqueQueue('sub-cancelled');
    const sub = await subscribe(c, [q]);
    assert.deepEqual(await nextEvent(sub), MISSED);
    assert.equal(counts.cancelled, 1, 'the first stream ended CANCELLED');
    assert.ok(counts.calls >= 2, `Subscribe calls: ${counts.calls}`);
    assert.equal(sub.closed, false);
    const later = await client.enqueue(q, 't');
    const ev = await nextEvent(sub);
    assert.deepEqual([ev.kind, ev.queue, ev.jobId], ['enqueued', q, later.jobId]);
    sub.close();
  } finally {
    c.close();
  }
});

test('a stream the client cancels (close(), the signal) is never subscribed again', async () => {
  const counts = { calls: 0, cancelled: 0 };
  const c = new Client({
    address: stack.address, timeoutMs: 3000,
    channelOptions: { interceptors: [brokerCancelsFirst('Subscribe', counts, { cancelFirst: false })] },
  });
  try {
    const q = uniqueQueue('sub-own-cancel');
    const drain = async (sub) => {
      const got = [];
      for await (const ev of sub) got.push(ev);
      return got;
    };
    let sub = await subscribe(c, [q]);
    let consumer = drain(sub);
    await sleep(200);
    sub.close(); // cancels the call: grpc-js ends it CANCELLED
    assert.deepEqual(await consumer, []);
    const ac = new AbortController();
    sub = await subscribe(c, [q], { signal: ac.signal });
    consumer = drain(sub);
    await sleep(200);
    ac.abort(new Error('enough'));
    assert.deepEqual(await consumer, []);
    await sleep(500);
    assert.equal(counts.calls, 2, 'one Subscribe call per subscription');
  } finally {
    c.close();
  }
});

test('an error that is not a gap rejects the iteration and ends it', async () => {
  // Subscribing again after a restart, the broker refuses the token.
  const token = 'subscriber-token';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jobwire-node-sub-'));
  const tokens = path.join(dir, 'tokens.json');
  const allow = (pattern) => fs.writeFileSync(tokens, JSON.stringify({
    tokens: [{ name: 's', sha256: sha256Hex(token), enqueue: [pattern] }],
  }));
  allow('*');
  const own = await startStack({ brokerArgs: [`--auth_tokens_file=${tokens}`] });
  const c = new Client({ address: own.address, timeoutMs: 3000, token });
  try {
    const sub = await subscribe(c, [uniqueQueue('sub-denied')]);
    allow('other.*');
    await own.killBroker();
    await own.restartBroker();
    const timer = setTimeout(() => sub.close(), 15_000);
    const err = await rejection(sub.next());
    clearTimeout(timer);
    assert.ok(err instanceof JobwireError, String(err));
    assert.equal(err.code, Status.PERMISSION_DENIED);
    assert.equal(err.reason, Reason.TOKEN_NOT_PERMITTED);
    assert.equal(sub.closed, true);
    assert.deepEqual(await sub.next(), { done: true, value: undefined });
  } finally {
    c.close();
    await own.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('close() and the signal end the iteration promptly', async () => {
  const q = uniqueQueue('sub-close');
  const drain = async (sub) => {
    const got = [];
    for await (const ev of sub) got.push(ev);
    return got;
  };

  let sub = await subscribe(client, [q]);
  let consumer = drain(sub);
  await sleep(300);
  let t0 = Date.now();
  sub.close();
  assert.deepEqual(await consumer, []);
  assert.ok(Date.now() - t0 < 1000, `took ${Date.now() - t0} ms`);
  sub.close(); // again: no-op
  assert.deepEqual(await sub.next(), { done: true, value: undefined });

  // Events read but not taken are dropped by close().
  sub = await subscribe(client, [q]);
  await client.enqueue(q, 't');
  await client.enqueue(q, 't');
  assert.equal((await nextEvent(sub)).kind, 'enqueued');
  sub.close();
  assert.deepEqual(await drain(sub), []);

  // The signal: aborted later, it ends the iteration; aborted first, subscribe rejects.
  // (A queue of its own: events of the jobs above may still be on their way
  // to a stream subscribed after they were published.)
  const ac = new AbortController();
  sub = await subscribe(client, [uniqueQueue('sub-close-signal')], { signal: ac.signal });
  consumer = drain(sub);
  await sleep(300);
  t0 = Date.now();
  ac.abort(new Error('enough'));
  assert.deepEqual(await consumer, []);
  assert.ok(Date.now() - t0 < 1000);
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
  const ac2 = new AbortController();
  (await subscribe(client, [q], { signal: ac2.signal })).close();
  assert.equal(getEventListeners(ac2.signal, 'abort').length, 0, 'close() removes the abort listener');
  const reason = new Error('never mind');
  const err = await rejection(client.subscribe([q], { signal: AbortSignal.abort(reason) }));
  assert.equal(err, reason);

  // close() also ends a next() that waits to subscribe again.
  const own = await startStack();
  const c = new Client({ address: own.address, timeoutMs: 3000 });
  try {
    sub = await subscribe(c, [q]);
    await own.killBroker();
    let settled = false;
    consumer = drain(sub).finally(() => { settled = true; });
    await sleep(1000);
    assert.equal(settled, false);
    t0 = Date.now();
    sub.close();
    assert.deepEqual(await consumer, []);
    assert.ok(Date.now() - t0 < 1000);
  } finally {
    c.close();
    await own.stop();
  }
});

test('the rules: the errors after which it subscribes again, and where \'events_missed\' goes', async () => {
  const state = new SubscribeState();
  const gap = [
    new JobwireError(Status.UNAVAILABLE, 'gone'),
    new JobwireError(Status.UNAVAILABLE, 'draining', { reason: Reason.BROKER_SHUTTING_DOWN }),
    new JobwireError(Status.RESOURCE_EXHAUSTED, 'slow', { reason: Reason.SUBSCRIBER_TOO_SLOW }),
    new JobwireError(Status.RESOURCE_EXHAUSTED, 'full', { reason: Reason.TOO_MANY_SUBSCRIPTIONS }),
    new JobwireError(Status.DEADLINE_EXCEEDED, 'not confirmed in time'),
    new JobwireError(Status.CANCELLED, 'CANCELLED'), // a draining gRPC C++ broker (grpc/grpc#41785)
  ];
  for (const err of gap) {
    for (let i = 0; i < 8; i++) {
      const d = state.retryDelay(err);
      assert.ok(d >= 0 && d <= 5000, `${err.message}: ${d}`);
    }
  }
  const full = new JobwireError(Status.RESOURCE_EXHAUSTED, 'full', { reason: Reason.TOO_MANY_SUBSCRIPTIONS, retryDelayMs: 7000 });
  assert.equal(state.retryDelay(full), 7000, "the broker's RetryInfo when larger");
  for (const err of [
    new JobwireError(Status.RESOURCE_EXHAUSTED, 'oom', { reason: Reason.REDIS_OUT_OF_MEMORY }),
    new JobwireError(Status.INVALID_ARGUMENT, 'queues', { reason: Reason.INVALID_FIELD }),
    new JobwireError(Status.PERMISSION_DENIED, 'no', { reason: Reason.TOKEN_NOT_PERMITTED }),
    new JobwireError(Status.INTERNAL, 'ended'),
    new JobwireError(Status.CANCELLED, 'Cancelled on client'), // grpc-js: the client's own cancel
  ]) {
    assert.throws(() => state.retryDelay(err), (e) => e === err);
  }

  // 'events_missed' once: for a broker message that says so, and for the
  // confirmation after a gap.
  const s2 = new SubscribeState();
  const ev = { kind: 'EVENT_KIND_ENQUEUED', queue: 'q', jobId: '7', type: 't', attempts: 0, atMs: 1, result: Buffer.alloc(0), error: '' };
  const kinds = (msg) => s2.take({ events: [], subscribed: false, eventsMissed: false, ...msg }).map((e) => e.kind);
  assert.deepEqual(kinds({ subscribed: true }), []);
  assert.deepEqual(kinds({ events: [ev, ev] }), ['enqueued', 'enqueued']);
  assert.deepEqual(kinds({ eventsMissed: true, events: [ev] }), ['events_missed', 'enqueued']);
  assert.throws(() => s2.retryDelay(new JobwireError(Status.INTERNAL, 'x')));
  s2.retryDelay(new JobwireError(Status.UNAVAILABLE, 'gone'));
  assert.deepEqual(kinds({ subscribed: true, eventsMissed: true }), ['events_missed']);
  assert.deepEqual(kinds({ events: [{ ...ev, kind: 99 }] }), ['unknown']);
});
