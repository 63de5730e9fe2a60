// Worker.use (handler middleware) against a real redis-server +
// jobwire-broker: the order of two layers around the handler, a layer that
// changes the result (the stored result), a layer that throws (the job fails
// with its error) or turns an error into a result, next() called twice,
// and use() refused once run() was called.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '../dist/index.js';
import { useStack, uniqueQueue } from './harness.mjs';

const suite = useStack();

/** A Worker on `q` with `layers` (in order) and the handler of type 't'; running. */
function startWorker(q, layers, handler) {
  const worker = new Worker({ address: suite.stack.address, queues: [q], graceMs: 2000, logger: null });
  for (const mw of layers) worker.use(mw);
  worker.register('t', handler);
  suite.workers.push(worker);
  void worker.run({ installSignalHandlers: false });
  return worker;
}

test('two middlewares: the first used is the outermost; both see the handler\'s job', async () => {
  const q = uniqueQueue('mw-order');
  const trail = [];
  const jobs = [];
  startWorker(q, [
    async (job, next) => {
      jobs.push(job);
      trail.push('outer before');
      const r = await next();
      trail.push(`outer after ${JSON.stringify(r)}`);
      return r;
    },
    async (job, next) => {
      jobs.push(job);
      trail.push('inner before');
      const r = await next();
      trail.push('inner after');
      return { ...r, inner: true };
    },
  ], (job) => {
    jobs.push(job);
    trail.push('handler');
    return { n: job.json().n };
  });
  const { jobId } = await suite.client.enqueue(q, 't', { n: 7 }, { headers: { tenant: 'acme' } });
  const done = await suite.client.wait(q, jobId, { timeoutMs: 10_000 });
  assert.deepEqual(trail, ['outer before', 'inner before', 'handler', 'inner after', 'outer after {"n":7,"inner":true}']);
  assert.deepEqual(done.resultJson(), { n: 7, inner: true });
  assert.equal(jobs.length, 3);
  for (const j of jobs) assert.equal(j, jobs[2], 'the same Job object');
  assert.equal(jobs[0].id, jobId);
  assert.equal(jobs[0].type, 't');
  assert.equal(jobs[0].queue, q);
  assert.equal(jobs[0].attempt, 1);
  assert.deepEqual(jobs[0].headers, { tenant: 'acme' });
  assert.ok(jobs[0].signal instanceof AbortSignal);
});

test('a middleware changes the result: the stored result is its value', async () => {
  const q = uniqueQueue('mw-result');
  startWorker(q, [async (job, next) => ({ wrapped: await next(), by: 'mw' })], () => 'raw');
  const { jobId } = await suite.client.enqueue(q, 't', {});
  const done = await suite.client.wait(q, jobId, { timeoutMs: 10_000 });
  assert.equal(done.state, 'JOB_STATE_COMPLETED');
  assert.deepEqual(done.resultJson(), { wrapped: 'raw', by: 'mw' });
  assert.deepEqual((await suite.client.getJob(q, jobId)).resultJson(), { wrapped: 'raw', by: 'mw' });
});

test('a middleware that throws: the job fails with its error, the handler never runs', async () => {
  const q = uniqueQueue('mw-throw');
  let ran = 0;
  startWorker(q, [
    () => { throw new RangeError('refused by middleware'); },
  ], () => { ran++; return 'never'; });
  const { jobId } = await suite.client.enqueue(q, 't', {}, { maxAttempts: 1 });
  const dead = await suite.client.wait(q, jobId, { timeoutMs: 10_000 }).then(
    () => assert.fail('the job completed'), (e) => e.job);
  assert.equal(dead.state, 'JOB_STATE_DEAD');
  assert.equal(dead.error, 'RangeError: refused by middleware');
  assert.equal(ran, 0);
});

test('a middleware turns the handler\'s error into a result, or rethrows its own', async () => {
  const q = uniqueQueue('mw-catch');
  startWorker(q, [
    async (job, next) => {
      try {
        return await next();
      } catch (e) {
        if (job.json().swallow) return { recovered: e.message };
        throw new Error(`wrapped: ${e.message}`);
      }
    },
  ], () => { throw new Error('handler failed'); });
  const a = await suite.client.enqueue(q, 't', { swallow: true }, { maxAttempts: 1 });
  const b = await suite.client.enqueue(q, 't', { swallow: false }, { maxAttempts: 1 });
  const done = await suite.client.wait(q, a.jobId, { timeoutMs: 10_000 });
  assert.deepEqual(done.resultJson(), { recovered: 'handler failed' });
  const dead = await suite.client.wait(q, b.jobId, { timeoutMs: 10_000 }).then(() => assert.fail('completed'), (e) => e.job);
  assert.equal(dead.error, 'Error: wrapped: handler failed');
});

test('next() called twice rejects the second time; the handler runs once', async () => {
  const q = uniqueQueue('mw-twice');
  let ran = 0;
  let second;
  startWorker(q, [
    async (job, next) => {
      const r = await next();
      second = await next().then(() => 'resolved', (e) => e.message);
      return r;
    },
  ], () => ++ran);
  const { jobId } = await suite.client.enqueue(q, 't', {});
  const done = await suite.client.wait(q, jobId, { timeoutMs: 10_000 });
  assert.equal(done.resultJson(), 1);
  assert.equal(ran, 1);
  assert.equal(second, 'jobwire Worker: a middleware called next() more than once');
});

test('use() after run() throws, and so does a middleware that is not a function', async () => {
  const worker = new Worker({ address: suite.stack.address, queues: [uniqueQueue('mw-late')], graceMs: 1000, logger: null });
  assert.throws(() => worker.use('nope'), TypeError);
  worker.register('t', () => 'ok');
  const running = worker.run({ installSignalHandlers: false });
  assert.throws(() => worker.use(async (j, next) => next()), /use\(\) must be called before run\(\)/);
  await worker.stop();
  await running;
  assert.throws(() => worker.use(async (j, next) => next()), /use\(\) must be called before run\(\)/);
});
