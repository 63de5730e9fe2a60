// Weighted fair claiming (WorkerOptions.weights -> ClaimRequest.weights)
// against a real redis-server + jobwire-broker: a Worker on two busy queues
// weighted 3:1 handles about three jobs of the first for one of the second;
// and the weights the constructor refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '../dist/index.js';
import { claimWeights } from '../dist/claim_weights.js';
import { useStack, uniqueQueue } from './harness.mjs';

const suite = useStack();

/** Enqueues n jobs of type 't' into q, in EnqueueBatch calls of at most 1000 (the batch limit). */
async function enqueueMany(q, n) {
  for (let done = 0; done < n; done += 1000) {
    const jobs = Array.from({ length: Math.min(1000, n - done) }, (_, i) => ({ type: 't', payload: { n: done + i } }));
    const res = await suite.client.enqueueBatch(q, jobs);
    assert.ok(res.every((r) => r.ok), JSON.stringify(res.filter((r) => !r.ok)));
  }
}

test('weights { heavy: 3, light: 1 }, concurrency 10: of the first 1,200 jobs handled, about 900 are heavy and 300 light', async () => {
  const heavy = uniqueQueue('fair-heavy');
  const light = uniqueQueue('fair-light');
  // Enough of both that neither runs dry within the 1,200 counted (light
  // alone would have to supply 300, heavy 900).
  await enqueueMany(heavy, 1300);
  await enqueueMany(light, 600);

  const COUNTED = 1200;
  const handled = []; // the queue of each job, in the order the handler ran them
  const worker = new Worker({
    address: suite.stack.address, queues: [heavy, light], weights: { [heavy]: 3, [light]: 1 },
    concurrency: 10, graceMs: 5000, logger: null,
  });
  worker.register('t', async (job) => {
    handled.push(job.queue);
    if (handled.length === COUNTED) void worker.stop();
  });
  suite.workers.push(worker);
  const started = Date.now();
  await worker.run({ installSignalHandlers: false });

  assert.ok(handled.length >= COUNTED, `only ${handled.length} jobs handled`);
  const first = handled.slice(0, COUNTED);
  const nHeavy = first.filter((q) => q === heavy).length;
  const nLight = first.filter((q) => q === light).length;
  assert.equal(nHeavy + nLight, COUNTED, 'every handled job came from one of the two queues');
  const summary = `heavy ${nHeavy}, light ${nLight} of the first ${COUNTED} (${handled.length} handled in ${Date.now() - started} ms)`;
  assert.ok(Math.abs(nHeavy - 900) <= 60, summary);
  assert.ok(Math.abs(nLight - 300) <= 60, summary);
  // The split holds all along, not only on the whole: each 400 jobs are also about 3:1.
  for (let i = 0; i < COUNTED; i += 400) {
    const part = first.slice(i, i + 400).filter((q) => q === heavy).length;
    assert.ok(Math.abs(part - 300) <= 40, `jobs ${i}..${i + 399}: ${part} heavy; ${summary}`);
  }
  console.log(`# weighted claim: ${summary}`);
});

test('a Claim carries the weights in the order of queues, none without weights', () => {
  assert.deepEqual(claimWeights(['heavy', 'light', 'bulk'], { bulk: 1, light: 2, heavy: 1000 }), [1000, 2, 1]);
  assert.deepEqual(claimWeights(['a'], { a: 1 }), [1]);
  assert.deepEqual(claimWeights(['a', 'b'], undefined), []);
  assert.deepEqual(claimWeights(['a', 'b'], {}), []);
});

test('the Worker refuses weights that do not give every queue, and only those, an integer 1..1000', () => {
  const make = (weights) => new Worker({ address: '127.0.0.1:1', queues: ['heavy', 'light'], weights, logger: null });
  const cases = [
    { what: 'a queue without a weight', weights: { heavy: 3 }, message: /options\.weights has no weight for queue "light"/ },
    { what: 'a weight for a queue not in queues', weights: { heavy: 3, light: 1, other: 2 }, message: /options\.weights names queue "other", which is not one of options\.queues/ },
    { what: '0', weights: { heavy: 0, light: 1 }, message: /options\.weights\["heavy"\] must be an integer 1\.\.1000, got 0$/ },
    { what: '1001', weights: { heavy: 3, light: 1001 }, message: /options\.weights\["light"\] must be an integer 1\.\.1000, got 1001$/ },
    { what: '2.5', weights: { heavy: 2.5, light: 1 }, message: /options\.weights\["heavy"\] must be an integer 1\.\.1000, got 2\.5$/ },
    { what: 'a string', weights: { heavy: '3', light: 1 }, message: /options\.weights\["heavy"\] must be an integer 1\.\.1000, got "3"$/ },
    { what: 'a negative weight', weights: { heavy: 3, light: -1 }, message: /options\.weights\["light"\] must be an integer 1\.\.1000, got -1$/ },
    { what: 'NaN', weights: { heavy: NaN, light: 1 }, message: /options\.weights\["heavy"\] must be an integer 1\.\.1000, got NaN$/ },
    { what: 'an array', weights: [3, 1], message: /options\.weights must be a plain object .* 1\.\.1000\), got an array$/ },
    { what: 'a Map', weights: new Map([['heavy', 3], ['light', 1]]), message: /options\.weights must be a plain object/ },
  ];
  for (const c of cases) {
    assert.throws(() => make(c.weights), (e) => {
      assert.ok(e instanceof TypeError, `${c.what}: ${e?.constructor?.name} ${e?.message}`);
      assert.match(e.message, /^jobwire Worker: options\.weights/, c.what);
      assert.match(e.message, c.message, c.what);
      return true;
    }, c.what);
  }
  // The limits themselves are taken, and so are no weights.
  for (const weights of [{ heavy: 1, light: 1000 }, { light: 7, heavy: 2 }, {}, undefined, null]) {
    assert.doesNotThrow(() => make(weights), JSON.stringify(weights));
  }
});
