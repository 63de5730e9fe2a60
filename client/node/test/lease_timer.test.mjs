// LeaseRenewer's one shared timer (src/lease_renewer.ts), against a fake stub:
// each held job is renewed every third of its own lease, stop() ends its
// renewals, and the timer holds the process open only while a job waits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseRenewer } from '../dist/lease_renewer.js';
import { sleep } from './harness.mjs';

function fakeStub(calls) {
  return {
    ExtendLease(req, _metadata, _options, cb) {
      calls.push({ jobId: req.jobId, at: performance.now() });
      setImmediate(() => cb(null, { leaseExpiresAtMs: Date.now() + 1000 }));
      return { cancel() {} };
    },
  };
}

function held(id, leaseMs) {
  return {
    job: { id, queue: 'q', leaseMs, leaseExpiresAtMs: 0 }, token: 't', leaseMs,
    localLeaseDeadline: Date.now() + leaseMs, renewAt: 0, renewQueue: undefined,
    renewing: false, finished: false, leaseLost: false, abandoned: false, abort: null,
  };
}

const renewer = (calls) => new LeaseRenewer({
  stub: fakeStub(calls), metadata: () => undefined, timeoutMs: 10_000, requestLeaseMs: 0, log: null,
});

test('each job is renewed every third of its own lease; stop() ends it', async () => {
  const calls = [];
  const r = renewer(calls);
  const a = held('a', 150); // every 50 ms
  const b = held('b', 300); // every 100 ms
  const t0 = performance.now();
  r.start(a);
  r.start(b);
  await sleep(330);
  a.finished = true;
  r.stop(a);
  const aCalls = calls.filter((c) => c.jobId === 'a').length;
  const bCalls = calls.filter((c) => c.jobId === 'b').length;
  assert.ok(aCalls >= 4 && aCalls <= 7, `a renewed ${aCalls} times in 330 ms (every 50 ms)`);
  assert.ok(bCalls >= 2 && bCalls <= 4, `b renewed ${bCalls} times in 330 ms (every 100 ms)`);
  const firstB = calls.find((c) => c.jobId === 'b');
  assert.ok(firstB.at - t0 >= 95, `b's first renewal after ${firstB.at - t0} ms, not before its third`);
  await sleep(150);
  assert.equal(calls.filter((c) => c.jobId === 'a').length, aCalls, 'a not renewed after stop()');
  assert.ok(calls.filter((c) => c.jobId === 'b').length > bCalls, 'b still renewed');
  b.finished = true;
  r.stop(b);
  r.close();
});

test('the shared timer is unref\'d while no job waits', async () => {
  const calls = [];
  const r = renewer(calls);
  const a = held('a', 60_000);
  r.start(a);
  assert.equal(r.timer.hasRef(), true, 'a waiting job keeps the process alive');
  r.stop(a);
  assert.equal(r.timer.hasRef(), false, 'no waiting job: the timer keeps nothing alive');
  r.start(a);
  assert.equal(r.timer.hasRef(), true);
  r.stop(a);
  r.close();
  assert.equal(r.timer, undefined);
});

test('job.signal is made on first read, and reads as aborted when aborted before that', async () => {
  const { Job, JobAbort } = await import('../dist/job.js');
  const cj = { leaseToken: 't', leaseExpiresAtMs: 0, leaseMs: 30_000, job: { id: '1', queue: 'q', type: 't', attempts: 1, maxAttempts: 3, priority: 0, leaseExpiresAtMs: 0 } };
  const early = new JobAbort();
  const j1 = new Job(cj, early);
  const reason = new Error('lost');
  early.abort(reason);
  assert.equal(j1.signal.aborted, true);
  assert.equal(j1.signal.reason, reason);
  assert.equal(j1.signal, j1.signal, 'one signal per job');

  const late = new JobAbort();
  const j2 = new Job(cj, late);
  const signal = j2.signal;
  assert.equal(signal.aborted, false);
  let seen;
  signal.addEventListener('abort', () => { seen = signal.reason; });
  late.abort(reason);
  assert.equal(seen, reason);

  const ac = new AbortController();
  assert.equal(new Job(cj, ac.signal).signal, ac.signal, 'a given AbortSignal is kept as is');
});
