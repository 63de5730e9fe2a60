// The per-call options of the Client's unary calls (`signal`, `timeoutMs`):
// against the real broker, against an HTTP/2 server that takes the gRPC call
// and never answers (it sees whether a call was sent, and its cancellation),
// and against a TCP server that accepts and never says anything.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { Client, JobwireError, Status } from '../dist/index.js';
import { startStack, uniqueQueue, waitFor, adminQueueStats } from './harness.mjs';

let stack;
let client;

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 5000 });
});

after(async () => {
  client?.close();
  await stack?.stop();
});

/**
 * An HTTP/2 server that accepts gRPC calls and never answers them. `streams`
 * lists each call received: { path, closed, rstCode }.
 */
async function silentGrpcServer() {
  const server = http2.createServer();
  const sessions = new Set();
  const streams = [];
  server.on('session', (s) => { sessions.add(s); s.on('close', () => sessions.delete(s)); });
  server.on('stream', (stream, headers) => {
    const rec = { path: headers[':path'], closed: false, rstCode: undefined };
    streams.push(rec);
    stream.on('error', () => {});
    stream.on('close', () => { rec.closed = true; rec.rstCode = stream.rstCode; });
    stream.resume(); // read the request, answer nothing
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${server.address().port}`,
    streams,
    async close() {
      for (const s of sessions) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A TCP server that accepts connections and never writes a byte. */
async function mutePort() {
  const sockets = new Set();
  const server = net.createServer((sock) => { sockets.add(sock); sock.on('error', () => {}); });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${server.address().port}`,
    accepted: () => sockets.size,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * The error `promise` rejects with; fails when it resolves, or is still
 * pending after `ms` (so a call that ignores its signal fails, not hangs).
 */
async function rejection(promise, what, ms = 3000) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new assert.AssertionError({ message: `${what}: still pending after ${ms} ms` })), ms);
  });
  try {
    return await Promise.race([promise.then(() => assert.fail(`${what} resolved`), (e) => e), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Every call of the Client, with arguments and a last CallOptions: the unary
 * calls, wait (a stream; its WaitOptions add onUpdate, and its timeoutMs
 * limits the whole wait: wait.test.mjs) and subscribe (a stream; its
 * timeoutMs limits the wait for the broker's confirmation, and its signal
 * also ends the subscription later: subscribe.test.mjs).
 */
const CALLS = {
  enqueue: (c, o) => c.enqueue('q', 't', { a: 1 }, { priority: 1, ...o }),
  enqueueBatch: (c, o) => c.enqueueBatch('q', [{ type: 't', payload: 1 }], o),
  getJob: (c, o) => c.getJob('q', 'some-id', o),
  getJobByIdempotencyKey: (c, o) => c.getJobByIdempotencyKey('q', 'some-key', o),
  cancel: (c, o) => c.cancel('q', 'some-id', o),
  reportProgress: (c, o) => c.reportProgress('q', 'some-id', 'tok', { percent: 5 }, o),
  ackBatch: (c, o) => c.ackBatch([{ queue: 'q', jobId: 'some-id', leaseToken: 'tok' }], o),
  wait: (c, o) => c.wait('q', 'some-id', o),
  subscribe: (c, o) => c.subscribe(['q'], o),
};

test('every call takes a last CallOptions (the list above is all of them)', () => {
  const methods = Object.getOwnPropertyNames(Client.prototype)
    .filter((m) => m !== 'constructor' && m !== 'close' && typeof Client.prototype[m] === 'function');
  assert.deepEqual(methods.sort(), Object.keys(CALLS).sort());
});

test('an already aborted signal: every call rejects at once with its reason, nothing is sent', async () => {
  const srv = await silentGrpcServer();
  const c = new Client({ address: srv.address, timeoutMs: 60_000 });
  try {
    // The control: the server does see a call that is sent.
    const sent = new AbortController();
    const pending = rejection(CALLS.getJob(c, { signal: sent.signal }), 'the control call');
    await waitFor(() => srv.streams.length === 1, { what: 'the control call to reach the server' });
    sent.abort();
    await pending;

    for (const [name, call] of Object.entries(CALLS)) {
      const ac = new AbortController();
      const reason = new Error(`stop ${name}`);
      ac.abort(reason);
      const t0 = Date.now();
      const err = await rejection(call(c, { signal: ac.signal }), name);
      assert.equal(err, reason, `${name} rejects with the signal's reason`);
      assert.ok(Date.now() - t0 < 1000, `${name} rejected at once`);
    }
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(srv.streams.map((s) => s.path), ['/jobwire.v1.BrokerService/GetJob'], 'only the control call reached the server');
  } finally {
    c.close();
    await srv.close();
  }
});

test('enqueue with an aborted signal stores nothing on the broker', async () => {
  const q = uniqueQueue('abort-enq');
  const ac = new AbortController();
  ac.abort(); // default reason: a DOMException named AbortError
  const err = await client.enqueue(q, 't', { n: 1 }, { idempotencyKey: 'k1', signal: ac.signal })
    .then(() => assert.fail('enqueue resolved'), (e) => e);
  assert.equal(err.name, 'AbortError');
  assert.equal(err, ac.signal.reason);
  assert.ok(!(err instanceof JobwireError));
  const err2 = await client.enqueueBatch(q, [{ type: 't', payload: 2 }], { signal: ac.signal })
    .then(() => assert.fail('enqueueBatch resolved'), (e) => e);
  assert.equal(err2.name, 'AbortError');

  const stats = await adminQueueStats(stack.address, q);
  assert.equal(stats.pendingDue + stats.pendingScheduled + stats.active + stats.completed + stats.dead, 0,
    `queue ${q} is empty: ${JSON.stringify(stats)}`);
  // The idempotency key was never seen either.
  const again = await client.enqueue(q, 't', { n: 1 }, { idempotencyKey: 'k1' });
  assert.equal(again.duplicate, false);
  assert.equal((await adminQueueStats(stack.address, q)).pendingDue, 1);
});

test('an abort while in flight cancels the gRPC call and rejects at once', async () => {
  const srv = await silentGrpcServer();
  const c = new Client({ address: srv.address, timeoutMs: 60_000 });
  try {
    const ac = new AbortController();
    const t0 = Date.now();
    const pending = rejection(c.getJob('q', 'id-1', { signal: ac.signal }), 'getJob');
    await waitFor(() => srv.streams.length === 1, { what: 'the call to reach the server' });
    ac.abort();
    const err = await pending;
    assert.ok(Date.now() - t0 < 5000, 'rejected long before the 60 s deadline');
    assert.equal(err.name, 'AbortError');
    assert.equal(err, ac.signal.reason);
    // The server sees the stream reset with CANCEL (HTTP/2 error code 8).
    await waitFor(() => srv.streams[0].closed, { what: 'the server to see the stream end' });
    assert.equal(srv.streams[0].rstCode, http2.constants.NGHTTP2_CANCEL);

    // A reason that is not an Error: an AbortError whose cause is the reason.
    const ac2 = new AbortController();
    const p2 = rejection(c.enqueue('q', 't', 1, { signal: ac2.signal }), 'enqueue');
    await waitFor(() => srv.streams.length === 2, { what: 'the second call to reach the server' });
    ac2.abort('user gave up');
    const err2 = await p2;
    assert.ok(err2 instanceof Error);
    assert.equal(err2.name, 'AbortError');
    assert.equal(err2.cause, 'user gave up');
    await waitFor(() => srv.streams[1].closed, { what: 'the server to see the second stream end' });
    assert.equal(srv.streams[1].rstCode, http2.constants.NGHTTP2_CANCEL);

    // wait (a server stream) is cancelled the same way.
    const ac3 = new AbortController();
    const p3 = rejection(c.wait('q', 'id-3', { signal: ac3.signal }), 'wait');
    await waitFor(() => srv.streams.length === 3, { what: 'the wait to reach the server' });
    assert.equal(srv.streams[2].path, '/jobwire.v1.BrokerService/WaitJob');
    ac3.abort();
    assert.equal((await p3).name, 'AbortError');
    await waitFor(() => srv.streams[2].closed, { what: 'the server to see the wait end' });
    assert.equal(srv.streams[2].rstCode, http2.constants.NGHTTP2_CANCEL);

    // So is subscribe, while it waits for the broker's confirmation.
    const ac4 = new AbortController();
    const p4 = rejection(c.subscribe(['q'], { signal: ac4.signal }), 'subscribe');
    await waitFor(() => srv.streams.length === 4, { what: 'the subscribe to reach the server' });
    assert.equal(srv.streams[3].path, '/jobwire.v1.BrokerService/Subscribe');
    ac4.abort();
    assert.equal((await p4).name, 'AbortError');
    await waitFor(() => srv.streams[3].closed, { what: 'the server to see the subscribe end' });
    assert.equal(srv.streams[3].rstCode, http2.constants.NGHTTP2_CANCEL);
  } finally {
    c.close();
    await srv.close();
  }
});

test('an abort rejects promptly against a port that accepts and never answers', async () => {
  const mute = await mutePort();
  const c = new Client({ address: mute.address, timeoutMs: 60_000 });
  try {
    const ac = new AbortController();
    const pending = rejection(c.getJob('q', 'id', { signal: ac.signal }), 'getJob', 5000);
    await waitFor(() => mute.accepted() > 0, { what: 'the client to connect' });
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    ac.abort();
    const err = await pending;
    assert.ok(Date.now() - t0 < 1000, `rejected ${Date.now() - t0} ms after the abort`);
    assert.equal(err.name, 'AbortError');
  } finally {
    c.close();
    await mute.close();
  }
});

test('a call that settles removes its abort listener, and a later abort changes nothing', async () => {
  const ac = new AbortController();
  const q = uniqueQueue('listener');
  const { jobId } = await client.enqueue(q, 't', 1, { signal: ac.signal });
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0, 'listener removed after success');
  await assert.rejects(client.getJob(q, 'no-such-job', { signal: ac.signal }), (e) => e instanceof JobwireError && e.code === Status.NOT_FOUND);
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0, 'listener removed after failure');
  ac.abort();
  assert.equal((await client.getJob(q, jobId)).state, 'JOB_STATE_PENDING');
});

test('timeoutMs: 1 on a call gives DEADLINE_EXCEEDED', async () => {
  const c = new Client({ address: stack.address, timeoutMs: 10_000 });
  try {
    await assert.rejects(c.getJob(uniqueQueue('t1'), 'no-such-job', { timeoutMs: 1 }),
      (e) => e instanceof JobwireError && e.code === Status.DEADLINE_EXCEEDED);
  } finally {
    c.close();
  }
});

test('a call\'s timeoutMs overrides the client\'s, both ways', async () => {
  // Longer: a client whose own deadline (1 ms) nothing could meet reaches
  // the broker (NOT_FOUND) with the call's 5 s.
  const short = new Client({ address: stack.address, timeoutMs: 1 });
  try {
    await assert.rejects(short.getJob(uniqueQueue('long'), 'no-such-job', { timeoutMs: 5000 }),
      (e) => e instanceof JobwireError && e.code === Status.NOT_FOUND);
  } finally {
    short.close();
  }
  // Shorter: against a server that never answers, the call's 300 ms, not
  // the client's 60 s.
  const srv = await silentGrpcServer();
  const c = new Client({ address: srv.address, timeoutMs: 60_000 });
  try {
    const t0 = Date.now();
    const err = await rejection(c.cancel('q', 'id', { timeoutMs: 300 }), 'cancel');
    const took = Date.now() - t0;
    assert.ok(err instanceof JobwireError && err.code === Status.DEADLINE_EXCEEDED, String(err));
    assert.ok(took >= 250 && took < 5000, `took ${took} ms`);
    // subscribe: the broker has timeoutMs to confirm; the call is cancelled.
    const t1 = Date.now();
    const err2 = await rejection(c.subscribe(['q'], { timeoutMs: 300 }), 'subscribe');
    const took2 = Date.now() - t1;
    assert.ok(err2 instanceof JobwireError && err2.code === Status.DEADLINE_EXCEEDED && err2.reason === '', String(err2));
    assert.ok(took2 >= 250 && took2 < 5000, `took ${took2} ms`);
  } finally {
    c.close();
    await srv.close();
  }
});

test('an invalid timeoutMs or signal rejects with TypeError', async () => {
  for (const timeoutMs of [0, -5, Number.NaN, Infinity, '100']) {
    await assert.rejects(client.getJob('q', 'id', { timeoutMs }), TypeError, `timeoutMs ${String(timeoutMs)}`);
  }
  await assert.rejects(client.cancel('q', 'id', { signal: { aborted: true } }), TypeError);
});
