// Run control (broker.proto: Cancel of an ACTIVE job, ClaimResponse.stops,
// EnqueueRequest.timeout_ms, ReportProgress) as the Client and the Worker
// expose it, against a real redis-server + jobwire-broker: progress seen by
// getJob and Subscribe, a running job cancelled (pushed on the Claim stream,
// or learned from an ExtendLease / ReportProgress refusal), a run stopped at
// its deadline, and the broker's limits on a progress report.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { Client, Worker, JobwireError, JobCancelledError, Reason, Status } from '../dist/index.js';
import * as esm from '../dist/index.mjs';
import { makeStub } from '../dist/proto.js';
import { Job, JobAbort } from '../dist/job.js';
import { RunControl, stopReasonOf } from '../dist/run_control.js';
import { LeaseRenewer } from '../dist/lease_renewer.js';
import { startStack, uniqueQueue, waitFor, sleep, claimOne } from './harness.mjs';

let stack;
let client;
let stub;
const workers = [];
const subs = [];

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 5000 });
  stub = makeStub(stack.address);
});

after(async () => {
  for (const s of subs) s.close();
  await Promise.all(workers.map((w) => w.stop()));
  stub?.close();
  client?.close();
  await stack?.stop();
});

/** Starts a worker; returns { worker, outcomes, warnings }. Stopped after the file. */
function startWorker(opts, handlers) {
  const outcomes = [];
  const warnings = [];
  const worker = new Worker({
    address: stack.address, graceMs: 5000, ...opts,
    logger: { info() {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
    onOutcome: (o) => outcomes.push(o),
  });
  for (const [type, fn] of Object.entries(handlers)) worker.register(type, fn);
  workers.push(worker);
  void worker.run({ installSignalHandlers: false });
  return { worker, outcomes, warnings };
}

/** Collects the events of `queues` into an array (until the file ends). */
async function collectEvents(queues, options) {
  const sub = await client.subscribe(queues, options);
  subs.push(sub);
  const events = [];
  void (async () => { for await (const ev of sub) events.push(ev); })().catch(() => {});
  return events;
}

/** A promise with its resolve function. */
function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

/** Resolves with [signal.reason, Date.now()] once `signal` aborts. */
const aborted = (signal) => new Promise((resolve) => {
  if (signal.aborted) resolve([signal.reason, Date.now()]);
  else signal.addEventListener('abort', () => resolve([signal.reason, Date.now()]), { once: true });
});

const rejection = (p) => p.then((v) => assert.fail(`resolved with ${JSON.stringify(v)}`), (e) => e);

const finalJob = (q, jobId, what) => waitFor(async () => {
  const j = await client.getJob(q, jobId);
  return j.state === 'JOB_STATE_COMPLETED' || j.state === 'JOB_STATE_DEAD' ? j : undefined;
}, { what, timeoutMs: 15_000 });

/**
 * A client interceptor removing the StopRuns of Claim messages (a stream
 * that no longer reaches the worker), counting them in `dropped.n`: the
 * worker then learns of a cancel from its next ExtendLease / ReportProgress.
 */
function dropStops(dropped) {
  return (options, nextCall) => new grpc.InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      next(metadata, {
        onReceiveMessage(message, nextMessage) {
          if (message?.stops?.length) {
            dropped.n += message.stops.length;
            nextMessage({ ...message, stops: [] });
          } else {
            nextMessage(message);
          }
        },
      });
    },
  });
}

test('runTimeoutMs is the job\'s timeout_ms; the run control fields of JobInfo', async () => {
  const q = uniqueQueue('rc-fields');
  // runTimeoutMs (the job's) and timeoutMs (the call's deadline) side by side.
  const { jobId } = await client.enqueue(q, 't', {}, { runTimeoutMs: 5000, timeoutMs: 3000, delayMs: 60_000 });
  const job = await client.getJob(q, jobId);
  assert.equal(job.timeoutMs, 5000);
  assert.equal(job.runDeadlineMs, 0, 'not running');
  assert.equal(job.cancelRequestedAtMs, 0);
  assert.equal(job.progressPercent, undefined);
  assert.ok(Buffer.isBuffer(job.progressData) && job.progressData.length === 0);
  assert.equal(job.progressJson(), undefined);
  assert.equal((await client.getJob(q, (await client.enqueue(q, 't', {})).jobId)).timeoutMs, 0, 'none by default');

  const [r] = await client.enqueueBatch(q, [{ type: 't', options: { runTimeoutMs: 7000, delayMs: 60_000 } }]);
  assert.equal(r.ok, true);
  assert.equal((await client.getJob(q, r.jobId)).timeoutMs, 7000);

  for (const runTimeoutMs of [-1, 604_800_001]) {
    const err = await rejection(client.enqueue(q, 't', {}, { runTimeoutMs }));
    assert.ok(err instanceof JobwireError, String(err));
    assert.equal(err.code, Status.INVALID_ARGUMENT, `${runTimeoutMs}: ${err.message}`);
    assert.match(err.details, /timeout_ms/);
  }
  assert.equal(esm.JobCancelledError, JobCancelledError, 'the ES-module entry exports JobCancelledError');
});

test('progress reported by a handler is seen by getJob and Subscribe while it runs', async () => {
  const q = uniqueQueue('rc-progress');
  const events = await collectEvents([q], { kinds: ['progress'], includeDetails: true });
  const step = deferred();
  const release = deferred();
  const { outcomes } = startWorker({ queues: [q] }, {
    t: async (job) => {
      await job.reportProgress({ percent: 40, data: { step: 'download' } });
      await step.promise;
      await job.reportProgress({ data: Buffer.from('raw') }); // replaces it whole: no percent now
      await release.promise;
      return 'done';
    },
  });
  const { jobId } = await client.enqueue(q, 't', {});
  const updates = [];
  const waited = client.wait(q, jobId, { timeoutMs: 20_000, onUpdate: (j) => updates.push(j.progressPercent) });
  const first = await waitFor(async () => {
    const j = await client.getJob(q, jobId);
    return j.progressPercent === 40 ? j : undefined;
  }, { what: 'progress 40' });
  assert.equal(first.state, 'JOB_STATE_ACTIVE');
  assert.deepEqual(first.progressJson(), { step: 'download' });

  step.resolve();
  const second = await waitFor(async () => {
    const j = await client.getJob(q, jobId);
    return j.progressData.toString() === 'raw' ? j : undefined;
  }, { what: 'the second report' });
  assert.equal(second.state, 'JOB_STATE_ACTIVE');
  assert.equal(second.progressPercent, undefined, 'a report without percent clears it');

  await waitFor(() => events.length >= 2, { what: 'two progress events' });
  assert.deepEqual(events.map((e) => [e.kind, e.jobId, e.progressPercent]), [['progress', jobId, 40], ['progress', jobId, undefined]]);
  assert.deepEqual(JSON.parse(events[0].progressData.toString()), { step: 'download' });
  assert.equal(events[1].progressData.toString(), 'raw');

  release.resolve();
  await waitFor(() => outcomes.find((o) => o.job.id === jobId), { what: 'the outcome' });
  assert.equal(outcomes[0].kind, 'ack_ok');
  assert.equal((await waited).state, 'JOB_STATE_COMPLETED');
  assert.ok(updates.includes(40), `wait's onUpdate saw the progress: ${JSON.stringify(updates)}`);
});

test('cancel of a running job: the Claim stream stops it at once (lease 30 s), and it ends DEAD "cancelled"', async () => {
  const q = uniqueQueue('rc-cancel');
  const events = await collectEvents([q], { kinds: ['cancel_requested', 'cancelled'], includeDetails: true });
  const started = deferred();
  let seen;
  const { outcomes } = startWorker({ queues: [q], leaseMs: 30_000 }, {
    t: async (job) => {
      started.resolve();
      seen = await aborted(job.signal);
      job.throwIfCancelled();
      return 'not reached';
    },
  });
  const { jobId } = await client.enqueue(q, 't', {}, { maxAttempts: 5 });
  await started.promise;
  await sleep(100);
  const t0 = Date.now();
  assert.equal(await client.cancel(q, jobId), true, 'cancel_requested');
  await waitFor(() => seen, { what: 'the signal aborted', timeoutMs: 3000 });
  const [reason, at] = seen;
  assert.ok(at - t0 < 3000, `aborted ${at - t0} ms after cancel`);
  assert.ok(reason instanceof JobCancelledError, String(reason));
  assert.equal(reason.reason, 'cancelled');
  assert.equal(reason.jobId, jobId);
  assert.equal(reason.queue, q);
  assert.equal(reason.cause, undefined, 'told by the stream, not by a refusal');

  const job = await finalJob(q, jobId, 'the job finished');
  assert.equal(job.state, 'JOB_STATE_DEAD', 'DEAD whatever attempts remain');
  assert.equal(job.error, 'cancelled');
  assert.equal(job.attempts, 1);
  await waitFor(() => outcomes.length >= 1, { what: 'the outcome' });
  assert.equal(outcomes[0].kind, 'fail_ok');
  assert.equal(outcomes[0].failText, 'cancelled');
  assert.equal(outcomes[0].failOutcome, 'DEAD');
  assert.equal(outcomes[0].job.signal.reason, reason);
  await waitFor(() => events.length >= 2, { what: 'cancel_requested and cancelled events' });
  assert.deepEqual(events.map((e) => [e.kind, e.jobId]), [['cancel_requested', jobId], ['cancelled', jobId]]);
});

test('a cancel the stream did not bring is learned from ExtendLease (JOB_CANCEL_REQUESTED)', async () => {
  const q = uniqueQueue('rc-cancel-renew');
  const dropped = { n: 0 };
  const started = deferred();
  let seen;
  const { outcomes } = startWorker({ queues: [q], leaseMs: 2000, channelOptions: { interceptors: [dropStops(dropped)] } }, {
    t: async (job) => {
      started.resolve();
      seen = await aborted(job.signal);
      throw new Error('stopping');
    },
  });
  const { jobId } = await client.enqueue(q, 't', {});
  await started.promise;
  const t0 = Date.now();
  assert.equal(await client.cancel(q, jobId), true);
  await waitFor(() => seen, { what: 'the signal aborted', timeoutMs: 5000 });
  const [reason, at] = seen;
  assert.ok(at - t0 < 2000, `aborted ${at - t0} ms after cancel (renewals every ~667 ms)`);
  assert.ok(reason instanceof JobCancelledError, String(reason));
  assert.equal(reason.reason, 'cancelled');
  assert.ok(reason.cause instanceof JobwireError, 'told by a refusal');
  assert.equal(reason.cause.code, Status.FAILED_PRECONDITION);
  assert.equal(reason.cause.reason, Reason.JOB_CANCEL_REQUESTED);
  assert.ok(dropped.n >= 1, 'the broker pushed a StopRun (dropped here)');

  const job = await finalJob(q, jobId, 'the job finished');
  assert.equal(job.state, 'JOB_STATE_DEAD');
  assert.equal(job.error, 'cancelled');
  await waitFor(() => outcomes.length >= 1, { what: 'the outcome' });
  assert.equal(outcomes[0].kind, 'fail_ok');
  assert.equal(outcomes[0].failText, 'cancelled', 'the stop reason, not the thrown text');
  assert.equal(outcomes[0].leaseLost, false, 'a stop is not a lost lease');
});

test('a cancel learned from ReportProgress: it rejects with JobCancelledError and aborts the signal', async () => {
  const q = uniqueQueue('rc-cancel-progress');
  const dropped = { n: 0 };
  const started = deferred();
  let rejected;
  let signal;
  const { outcomes } = startWorker({ queues: [q], leaseMs: 30_000, channelOptions: { interceptors: [dropStops(dropped)] } }, {
    t: async (job) => {
      signal = job.signal;
      started.resolve();
      for (let i = 0; ; i++) {
        try {
          await job.reportProgress({ percent: i % 101 });
        } catch (e) {
          rejected = e;
          throw e;
        }
        await sleep(50);
      }
    },
  });
  const { jobId } = await client.enqueue(q, 't', {});
  await started.promise;
  assert.equal(await client.cancel(q, jobId), true);
  await waitFor(() => rejected, { what: 'reportProgress rejected', timeoutMs: 3000 });
  assert.ok(rejected instanceof JobCancelledError, String(rejected));
  assert.equal(rejected.reason, 'cancelled');
  assert.equal(rejected.cause?.reason, Reason.JOB_CANCEL_REQUESTED);
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason, rejected, 'the signal aborted with the same error');

  const job = await finalJob(q, jobId, 'the job finished');
  assert.equal(job.state, 'JOB_STATE_DEAD');
  assert.equal(job.error, 'cancelled');
  await waitFor(() => outcomes.length >= 1, { what: 'the outcome' });
  assert.equal(outcomes[0].kind, 'fail_ok');
});

test('a run past its timeout: signal aborted "timeout" at job.deadline; a late Ack is refused, the job ends DEAD "timeout"', async () => {
  const q = uniqueQueue('rc-timeout');
  const events = await collectEvents([q], { kinds: ['timed_out', 'dead', 'completed'], includeDetails: true });
  const started = deferred();
  let info;
  let seen;
  const { outcomes, warnings } = startWorker({ queues: [q], leaseMs: 30_000 }, {
    slow: async (job) => {
      info = { startedAt: Date.now(), deadline: job.deadline, timeoutMs: job.timeoutMs, leaseMs: job.leaseMs };
      started.resolve();
      void aborted(job.signal).then((s) => { seen = s; });
      await sleep(2500); // ignores the signal
      return 'late result';
    },
    fast: async () => 'ok',
  });
  const { jobId } = await client.enqueue(q, 'slow', {}, { runTimeoutMs: 1000, maxAttempts: 1 });
  await started.promise;
  const active = await client.getJob(q, jobId);
  assert.equal(active.state, 'JOB_STATE_ACTIVE');
  assert.equal(active.timeoutMs, 1000);
  assert.ok(active.runDeadlineMs > 0, 'runDeadlineMs set while ACTIVE');
  assert.ok(active.leaseExpiresAtMs <= active.runDeadlineMs, 'the lease is capped at the deadline');
  assert.equal(info.timeoutMs, 1000);
  assert.ok(info.leaseMs <= 1000, `lease ${info.leaseMs} ms capped at the timeout`);
  assert.equal(typeof info.deadline, 'number');
  const lead = info.deadline - info.startedAt;
  assert.ok(lead > 800 && lead <= 1000, `job.deadline is ${lead} ms after the handler started`);

  await waitFor(() => seen, { what: 'the signal aborted', timeoutMs: 3000 });
  const [reason, at] = seen;
  assert.ok(reason instanceof JobCancelledError, String(reason));
  assert.equal(reason.reason, 'timeout');
  assert.ok(at - info.startedAt >= 700 && at - info.startedAt < 2000, `aborted ${at - info.startedAt} ms after the start`);

  await waitFor(() => outcomes.length >= 1, { what: 'the outcome of the late Ack', timeoutMs: 10_000 });
  assert.equal(outcomes[0].kind, 'ack_error', 'the Ack past the deadline is refused');
  assert.equal(outcomes[0].code, Status.FAILED_PRECONDITION);
  assert.ok(warnings.some((w) => w.includes(jobId) && w.includes('refused')), warnings.join('\n'));
  const job = await finalJob(q, jobId, 'the job finished');
  assert.equal(job.state, 'JOB_STATE_DEAD', 'not COMPLETED');
  assert.equal(job.error, 'timeout');
  assert.equal(job.result.length, 0);

  // The worker goes on: no crash, no retry loop.
  const next = await client.enqueue(q, 'fast', {});
  await waitFor(() => outcomes.find((o) => o.job.id === next.jobId), { what: 'the next job' });
  assert.equal(outcomes.filter((o) => o.job.id === jobId).length, 1, 'one outcome for the timed-out job');
  assert.equal(outcomes.find((o) => o.job.id === next.jobId).kind, 'ack_ok');
  await waitFor(() => events.some((e) => e.jobId === jobId && e.kind === 'dead'), { what: 'the dead event' });
  const mine = events.filter((e) => e.jobId === jobId);
  assert.deepEqual(mine.map((e) => e.kind), ['timed_out', 'dead']);
  assert.equal(mine[1].error, 'timeout');
});

test('a handler that stops at its timeout is failed "timeout" and retried as any failure', async () => {
  const q = uniqueQueue('rc-timeout-retry');
  const { outcomes } = startWorker({ queues: [q] }, {
    t: async (job) => {
      if (job.attempt > 1) return `attempt ${job.attempt}`;
      await aborted(job.signal);
      job.throwIfCancelled();
      return 'not reached';
    },
  });
  const { jobId } = await client.enqueue(q, 't', {}, { runTimeoutMs: 1000, maxAttempts: 2, backoffBaseMs: 100 });
  const job = await finalJob(q, jobId, 'the job finished');
  assert.equal(job.state, 'JOB_STATE_COMPLETED');
  assert.equal(job.attempts, 2);
  assert.equal(job.resultJson(), 'attempt 2');
  await waitFor(() => outcomes.length >= 2, { what: 'two outcomes' });
  assert.deepEqual(outcomes.map((o) => o.job.attempt), [1, 2]);
  // The Fail is sent at job.deadline (receipt + timeout), just after the
  // broker's deadline (claim + timeout), where the capped lease ends: the
  // broker's reaper may have failed the attempt first (then the Fail is
  // refused). Either way the attempt failed with "timeout" and was retried.
  assert.ok(['fail_ok', 'fail_error'].includes(outcomes[0].kind), outcomes[0].kind);
  if (outcomes[0].kind === 'fail_ok') assert.equal(outcomes[0].failOutcome, 'RETRY_SCHEDULED');
  assert.equal(outcomes[0].failText, 'timeout');
  assert.equal(outcomes[1].kind, 'ack_ok');
  assert.ok(outcomes[0].job.signal.reason instanceof JobCancelledError);
  assert.equal(outcomes[1].job.signal.aborted, false, 'the second run finished in time');
});

test('job.reportProgress with percent 101 or 4097 bytes of data: INVALID_ARGUMENT, the job unchanged', async () => {
  const q = uniqueQueue('rc-progress-limits');
  const checked = deferred();
  const release = deferred();
  startWorker({ queues: [q] }, {
    t: async (job) => {
      await job.reportProgress({ percent: 10, data: 'ok' });
      const errors = [];
      for (const p of [{ percent: 101 }, { percent: -1 }, { data: Buffer.alloc(4097, 0x61) }, { percent: 50, data: Buffer.alloc(4097, 0x61) }, {}]) {
        errors.push(await job.reportProgress(p).then(() => undefined, (e) => e));
      }
      checked.resolve({ errors, aborted: job.signal.aborted });
      await release.promise;
      return null;
    },
  });
  const { jobId } = await client.enqueue(q, 't', {});
  const { errors, aborted: wasAborted } = await checked.promise;
  try {
    const fields = ['percent', 'percent', 'data', 'data', undefined];
    errors.forEach((err, i) => {
      assert.ok(err instanceof JobwireError, `report ${i}: ${String(err)}`);
      assert.equal(err.code, Status.INVALID_ARGUMENT, `report ${i}: ${err.message}`);
      if (fields[i] !== undefined) {
        assert.equal(err.reason, Reason.INVALID_FIELD, `report ${i}`);
        assert.match(err.details, new RegExp(fields[i]), `report ${i} names ${fields[i]}`);
      }
    });
    assert.equal(wasAborted, false, 'a refused report does not stop the run');
    const job = await client.getJob(q, jobId);
    assert.equal(job.state, 'JOB_STATE_ACTIVE');
    assert.equal(job.progressPercent, 10, 'unchanged');
    assert.equal(job.progressJson(), 'ok', 'unchanged');
  } finally {
    release.resolve();
  }
});

test('Client.reportProgress with a lease token: limits, percent 0, a stale token, a cancelled run', async () => {
  const q = uniqueQueue('rc-progress-client');
  const { jobId } = await client.enqueue(q, 't', {});
  const held = await claimOne(stub, q);
  assert.equal(held.jobId, jobId);

  await client.reportProgress(q, jobId, held.leaseToken, { percent: 0, data: Buffer.alloc(4096, 0x62) });
  let job = await client.getJob(q, jobId);
  assert.equal(job.progressPercent, 0, 'percent 0 is a percentage, not "none"');
  assert.equal(job.progressData.length, 4096);

  for (const p of [{ percent: 101 }, { data: Buffer.alloc(4097) }]) {
    const err = await rejection(client.reportProgress(q, jobId, held.leaseToken, p));
    assert.equal(err.code, Status.INVALID_ARGUMENT, err.message);
  }
  for (const p of [{ percent: 50.5 }, { percent: '50' }, null]) {
    await assert.rejects(client.reportProgress(q, jobId, held.leaseToken, p), TypeError, JSON.stringify(p));
  }
  job = await client.getJob(q, jobId);
  assert.equal(job.progressPercent, 0, 'unchanged');
  assert.equal(job.progressData.length, 4096, 'unchanged');

  const stale = await rejection(client.reportProgress(q, jobId, 'not-the-token', { percent: 5 }));
  assert.equal(stale.code, Status.FAILED_PRECONDITION);
  assert.equal(stale.reason, Reason.LEASE_STALE);

  assert.equal(await client.cancel(q, jobId), true);
  const refused = await rejection(client.reportProgress(q, jobId, held.leaseToken, { percent: 5 }));
  assert.equal(refused.code, Status.FAILED_PRECONDITION);
  assert.equal(refused.reason, Reason.JOB_CANCEL_REQUESTED);
  job = await client.getJob(q, jobId);
  assert.equal(job.progressPercent, 0, 'unchanged');
  assert.ok(job.cancelRequestedAtMs > 0);
});

// ---- RunControl on its own (no broker): the deadline timer, the stops of a
// Claim message, a stopped run's progress report, the refusal reasons. ----

/** A HeldJob as the Worker makes it, for a fake job. */
function fakeHeld({ id = '1', token = 'tok', timeoutMs = 0 } = {}) {
  const abort = new JobAbort();
  const cj = {
    job: { id, queue: 'q', type: 't', payload: Buffer.alloc(0), attempts: 1, maxAttempts: 3, priority: 0, leaseExpiresAtMs: 0, timeoutMs },
    leaseToken: token, leaseExpiresAtMs: 0, leaseMs: 30_000,
  };
  const job = new Job(cj, abort, { receivedAt: Date.now(), reportProgress: async () => {} });
  return { job, token, abort, finished: false, abandoned: false, leaseLost: false, stopped: undefined, deadlineTimer: undefined };
}

function fakeControl() {
  const renewalsStopped = [];
  const noStub = new Proxy({}, { get: () => { throw new Error('no call expected'); } });
  const control = new RunControl({
    stub: noStub, metadata: () => new grpc.Metadata(), timeoutMs: 1000, log: null,
    renewer: { stop: (h) => renewalsStopped.push(h) },
  });
  return { control, renewalsStopped };
}

test('RunControl: at job.deadline the signal aborts with JobCancelledError "timeout" and renewal stops', async () => {
  const { control, renewalsStopped } = fakeControl();
  const h = fakeHeld({ timeoutMs: 50 });
  assert.ok(Math.abs(h.job.deadline - (Date.now() + 50)) <= 20, `deadline ${h.job.deadline - Date.now()} ms ahead`);
  control.start(h);
  assert.equal(h.job.signal.aborted, false);
  h.job.throwIfCancelled(); // nothing yet
  await sleep(120);
  assert.equal(h.job.signal.aborted, true);
  const reason = h.job.signal.reason;
  assert.ok(reason instanceof JobCancelledError);
  assert.equal(reason.reason, 'timeout');
  assert.equal(reason.cause, undefined);
  assert.equal(h.stopped, reason);
  assert.deepEqual(renewalsStopped, [h]);
  assert.throws(() => h.job.throwIfCancelled(), (e) => e === reason);

  // Settled before its deadline: nothing fires. No timeout: no deadline.
  const early = fakeHeld({ timeoutMs: 50 });
  control.start(early);
  control.end(early);
  const none = fakeHeld();
  assert.equal(none.job.deadline, undefined);
  control.start(none);
  assert.equal(none.deadlineTimer, undefined);
  await sleep(120);
  assert.equal(early.job.signal.aborted, false);
});

test('RunControl: a StopRun stops the held run with its job id and lease token only', () => {
  const { control } = fakeControl();
  const a = fakeHeld({ id: '1', token: 'new' });
  const b = fakeHeld({ id: '2', token: 'tok2' });
  const c = fakeHeld({ id: '3', token: 'tok3' });
  control.onStops([
    { queue: 'q', jobId: '1', leaseToken: 'old', reason: 'REASON_CANCEL_REQUESTED' }, // an earlier run of job 1
    { queue: 'q', jobId: '2', leaseToken: 'tok2', reason: 'REASON_CANCEL_REQUESTED' },
    { queue: 'q', jobId: '3', leaseToken: 'tok3', reason: 7 }, // a reason this client does not know
    { queue: 'q', jobId: '9', leaseToken: 'gone', reason: 'REASON_CANCEL_REQUESTED' }, // no longer held
  ], [a, b, c]);
  assert.equal(a.job.signal.aborted, false, 'a stop of another run');
  for (const h of [b, c]) {
    assert.ok(h.job.signal.reason instanceof JobCancelledError);
    assert.equal(h.job.signal.reason.reason, 'cancelled');
  }
  // Once per run; a finished run is left alone.
  const first = b.job.signal.reason;
  assert.equal(control.stop(b, 'timeout'), first);
  const done = fakeHeld({ id: '4' });
  done.finished = true;
  assert.equal(control.stop(done, 'cancelled').reason, 'cancelled');
  assert.equal(done.job.signal.aborted, false);
});

test('RunControl: a stopped run\'s progress report rejects with its JobCancelledError, calling nothing; refusal reasons', async () => {
  const { control } = fakeControl();
  const h = fakeHeld();
  const err = control.stop(h, 'cancelled');
  await assert.rejects(control.reportProgress(h, { percent: 1 }), (e) => e === err);
  const refusal = (code, reason) => new JobwireError(code, 'x', { reason });
  assert.equal(stopReasonOf(refusal(Status.FAILED_PRECONDITION, Reason.JOB_CANCEL_REQUESTED)), 'cancelled');
  assert.equal(stopReasonOf(refusal(Status.FAILED_PRECONDITION, Reason.RUN_TIMED_OUT)), 'timeout');
  assert.equal(stopReasonOf(refusal(Status.FAILED_PRECONDITION, Reason.LEASE_STALE)), undefined);
  assert.equal(stopReasonOf(refusal(Status.NOT_FOUND, Reason.JOB_CANCEL_REQUESTED)), undefined);
  const alone = new Job({ job: { id: '5', queue: 'q', timeoutMs: 0 }, leaseToken: 't' }, new AbortController().signal);
  await assert.rejects(alone.reportProgress({ percent: 1 }), /delivered by a Worker/);
});

test('LeaseRenewer: a lease that already reaches the run deadline is not renewed (the broker would refuse)', () => {
  const renewer = new LeaseRenewer({ stub: null, metadata: () => new grpc.Metadata(), timeoutMs: 1000, requestLeaseMs: 0, log: null });
  try {
    const capped = { ...fakeHeld({ timeoutMs: 1000 }), leaseMs: 1000, renewQueue: undefined };
    capped.job.leaseExpiresAtMs = 5000;
    capped.runDeadlineMs = 5000;
    renewer.start(capped);
    assert.equal(capped.renewQueue, undefined, 'no renewal scheduled');
    const longer = { ...fakeHeld({ timeoutMs: 60_000 }), leaseMs: 1000, renewQueue: undefined };
    longer.job.leaseExpiresAtMs = 5000;
    longer.runDeadlineMs = 9000;
    renewer.start(longer);
    assert.notEqual(longer.renewQueue, undefined, 'renewed until the lease reaches the deadline');
    renewer.stop(longer);
  } finally {
    renewer.close();
  }
});
