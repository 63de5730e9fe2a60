// Worker.run() and process signals: no listener unless asked
// (installSignalHandlers: true), and none left once run() has ended.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '../dist/index.js';
import { startStack, uniqueQueue, sleep } from './harness.mjs';

let stack;

before(async () => {
  stack = await startStack();
});

after(async () => {
  await stack?.stop();
});

const SIGNALS = ['SIGTERM', 'SIGINT'];
const listeners = () => Object.fromEntries(SIGNALS.map((s) => [s, process.listeners(s)]));

function newWorker() {
  return new Worker({ address: stack.address, queues: [uniqueQueue('sig')], logger: null, graceMs: 2000 })
    .register('t', async () => null);
}

test('run() without options installs no signal listener', async () => {
  const before = listeners();
  const worker = newWorker();
  const running = worker.run();
  try {
    await sleep(200);
    assert.deepEqual(listeners(), before, 'listeners while running');
  } finally {
    await worker.stop();
    await running;
  }
  assert.deepEqual(listeners(), before, 'listeners after run()');
});

test('installSignalHandlers: false installs none either', async () => {
  const before = listeners();
  const worker = newWorker();
  const running = worker.run({ installSignalHandlers: false });
  try {
    await sleep(100);
    assert.deepEqual(listeners(), before);
  } finally {
    await worker.stop();
    await running;
  }
});

test('installSignalHandlers: true adds one listener per signal, removed after stop()', async () => {
  const before = listeners();
  const worker = newWorker();
  const running = worker.run({ installSignalHandlers: true });
  try {
    for (const s of SIGNALS) {
      const now = process.listeners(s);
      assert.equal(now.length, before[s].length + 1, `${s}: one more listener`);
      assert.deepEqual(now.slice(0, -1), before[s], `${s}: the others untouched`);
    }
  } finally {
    await worker.stop();
    await running;
  }
  assert.deepEqual(listeners(), before, 'removed once run() ended');
});

test('installSignalHandlers: true: the SIGTERM listener stops the worker, then is removed', async () => {
  const before = listeners();
  const worker = newWorker();
  let settled = false;
  const running = worker.run({ installSignalHandlers: true }).finally(() => { settled = true; });
  try {
    await sleep(100);
    assert.equal(settled, false);
    // Call the worker's own listener (a real SIGTERM would also reach the
    // test runner's listeners).
    const ours = process.listeners('SIGTERM').filter((l) => !before.SIGTERM.includes(l));
    assert.equal(ours.length, 1);
    ours[0]('SIGTERM');
    await Promise.race([running, sleep(3000).then(() => assert.fail('run() still running 3 s after SIGTERM'))]);
  } finally {
    await worker.stop();
    await running;
  }
  assert.deepEqual(listeners(), before);
});
