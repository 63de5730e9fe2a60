// Job dependencies (docs/semantics.md, "Dependencies") as the Client and the
// Worker expose them, against a real redis-server + jobwire-broker: a child
// enqueued with `dependsOn` waits, PENDING, until its parent completed; then
// a Worker's handler gets it with the parent's result in
// `job.dependencyResults`. An id that names no job of the queue is refused
// NOT_FOUND, reason DEPENDENCY_NOT_FOUND (enqueue rejects; enqueueBatch
// answers it per job); what is not an array of strings is a TypeError,
// nothing sent. In enqueueBatch, `dependsOnBatchIndex` names parents among
// the batch's earlier jobs by index (a graph stored by one call).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker, JobwireError, Reason, Status } from '../dist/index.js';
import { useStack, uniqueQueue, waitFor, sleep } from './harness.mjs';

const UNKNOWN_JOB_ID = '999999999999';

const suite = useStack();

/** A job's dependencyResults with each result as a string. */
const asText = (results) => Object.fromEntries(Object.entries(results).map(([id, r]) => [id, r.toString()]));

const rejection = (p) => p.then((v) => assert.fail(`resolved with ${JSON.stringify(v)}`), (e) => e);

test('the child runs after its parent, with the parent\'s result', async () => {
  const { client } = suite;
  const q = uniqueQueue('deps');
  const parent = (await client.enqueue(q, 'parent', { n: 1 })).jobId;
  const child = (await client.enqueue(q, 'child', null, { dependsOn: [parent] })).jobId;
  const anyway = (await client.enqueue(q, 'child', null, { dependsOn: [parent], runAfterFailedDependency: true })).jobId;
  const waiting = await client.getJob(q, child);
  assert.equal(waiting.state, 'JOB_STATE_PENDING');
  assert.deepEqual(waiting.dependsOn, [parent]);
  assert.equal(waiting.dependenciesLeft, 1);
  assert.deepEqual(waiting.dependencyResults, {});
  assert.equal(waiting.runAfterFailedDependency, false);
  assert.equal((await client.getJob(q, anyway)).runAfterFailedDependency, true);

  // [job id, its dependencyResults], in the order the handlers started.
  const runs = [];
  const worker = new Worker({ address: suite.stack.address, queues: [q], concurrency: 4, graceMs: 2000, logger: null });
  worker.register('parent', async (job) => {
    runs.push([job.id, asText(job.dependencyResults)]);
    await sleep(200); // free slots meanwhile: a child delivered early would start
    return { sum: job.json().n + 41 };
  });
  let buffers = true; // every result a handler got was a Buffer
  worker.register('child', (job) => {
    buffers &&= Object.values(job.dependencyResults).every((r) => Buffer.isBuffer(r));
    runs.push([job.id, asText(job.dependencyResults)]);
    return undefined;
  });
  suite.workers.push(worker);
  void worker.run({ installSignalHandlers: false });
  await waitFor(() => runs.length === 3, { what: 'three runs' });
  for (const id of [parent, child, anyway]) {
    await waitFor(async () => (await client.getJob(q, id)).state === 'JOB_STATE_COMPLETED', { what: `job ${id} completed` });
  }
  await worker.stop();

  const result = '{"sum":42}';
  assert.deepEqual(runs[0], [parent, {}]);
  assert.deepEqual(runs.slice(1).sort(), [[child, { [parent]: result }], [anyway, { [parent]: result }]].sort());
  assert.ok(buffers, 'the handler got the results as Buffers');
  const done = await client.getJob(q, child);
  assert.equal(done.dependenciesLeft, 0);
  assert.deepEqual(asText(done.dependencyResults), { [parent]: result });
});

test('an unknown parent is refused: NOT_FOUND, reason DEPENDENCY_NOT_FOUND', async () => {
  const { client } = suite;
  const q = uniqueQueue('deps-unknown');
  const parent = (await client.enqueue(q, 't', null)).jobId;
  const err = await rejection(client.enqueue(q, 't', null, { dependsOn: [parent, UNKNOWN_JOB_ID] }));
  assert.ok(err instanceof JobwireError, String(err));
  assert.equal(err.code, Status.NOT_FOUND);
  assert.equal(err.reason, Reason.DEPENDENCY_NOT_FOUND);
  assert.equal(err.metadata.job_id, UNKNOWN_JOB_ID);

  const [refused, stored] = await client.enqueueBatch(q, [
    { type: 't', options: { dependsOn: [UNKNOWN_JOB_ID] } },
    { type: 't', options: { dependsOn: [parent] } },
  ]);
  assert.equal(refused.ok, false);
  assert.equal(refused.code, Status.NOT_FOUND);
  assert.equal(refused.reason, Reason.DEPENDENCY_NOT_FOUND);
  assert.ok(stored.ok);
  assert.deepEqual((await client.getJob(q, stored.jobId)).dependsOn, [parent]);

  for (const bad of [parent, [parent, 7]]) {
    await assert.rejects(client.enqueue(q, 't', null, { dependsOn: bad }), (e) => e instanceof TypeError && /dependsOn/.test(e.message));
  }
});

test('a batch stores a graph by index; the join gets both children\'s results', async () => {
  const { client } = suite;
  const q = uniqueQueue('deps-graph');
  // Fan-out / fan-in: a root, two children of index 0, a join of 1 and 2;
  // then a child naming a refused job of the batch (priority 5000).
  const results = await client.enqueueBatch(q, [
    { type: 'step', payload: { n: 0 } },
    { type: 'step', payload: { n: 1 }, options: { dependsOnBatchIndex: [0] } },
    { type: 'step', payload: { n: 2 }, options: { dependsOnBatchIndex: [0] } },
    { type: 'step', payload: { n: 3 }, options: { dependsOnBatchIndex: [1, 2] } },
    { type: 'step', options: { priority: 5000 } },
    { type: 'step', options: { dependsOnBatchIndex: [4] } },
  ]);
  assert.deepEqual(results.map((r) => r.ok), [true, true, true, true, false, false]);
  const [root, left, right, join] = results.slice(0, 4).map((r) => r.jobId);
  assert.deepEqual((await client.getJob(q, left)).dependsOn, [root]);
  assert.deepEqual((await client.getJob(q, right)).dependsOn, [root]);
  const waiting = await client.getJob(q, join);
  assert.equal(waiting.state, 'JOB_STATE_PENDING');
  assert.deepEqual(waiting.dependsOn, [left, right]);
  assert.equal(results[4].code, Status.INVALID_ARGUMENT);
  const orphan = results[5];
  assert.equal(orphan.code, Status.INVALID_ARGUMENT);
  assert.match(orphan.message, /jobs\[5\]\.depends_on_batch_index\[0\]/);
  assert.match(orphan.message, /names jobs\[4\], which was refused/);

  const runs = new Map(); // n -> the dependencyResults its handler saw
  const worker = new Worker({ address: suite.stack.address, queues: [q], concurrency: 4, graceMs: 2000, logger: null });
  worker.register('step', (job) => {
    const { n } = job.json();
    runs.set(n, asText(job.dependencyResults));
    return { from: n };
  });
  suite.workers.push(worker);
  void worker.run({ installSignalHandlers: false });
  await waitFor(async () => (await client.getJob(q, join)).state === 'JOB_STATE_COMPLETED', { timeoutMs: 15_000, what: 'the join completed' });
  await worker.stop();

  assert.deepEqual([...runs.keys()].sort(), [0, 1, 2, 3]);
  assert.deepEqual(runs.get(0), {});
  assert.deepEqual(runs.get(1), { [root]: '{"from":0}' });
  assert.deepEqual(runs.get(2), { [root]: '{"from":0}' });
  assert.deepEqual(runs.get(3), { [left]: '{"from":1}', [right]: '{"from":2}' });
});

test('dependsOnBatchIndex is for batches, and takes an array of integers', async () => {
  const { client } = suite;
  const q = uniqueQueue('deps-index');
  const err = await rejection(client.enqueue(q, 't', null, { dependsOnBatchIndex: [0] }));
  assert.ok(err instanceof JobwireError, String(err));
  assert.equal(err.code, Status.INVALID_ARGUMENT);
  assert.match(err.details, /depends_on_batch_index/);
  for (const bad of [0, '0', [0, '1'], [1.5], [2 ** 31], [null]]) {
    await assert.rejects(client.enqueueBatch(q, [{ type: 't' }, { type: 't', options: { dependsOnBatchIndex: bad } }]),
      (e) => e instanceof TypeError && /dependsOnBatchIndex/.test(e.message));
  }
});
