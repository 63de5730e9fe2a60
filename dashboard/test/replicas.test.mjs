// Two broker replicas on one Redis (each reporting its Claim streams every
// 200 ms), and a dashboard talking to the first: its Workers page lists a
// real Node.js Worker connected to the second under that replica's name, and
// drops the replica and its worker once it is killed.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, startDashboard, startStack, workersUntil, Worker } from './helpers.mjs';

describe('two broker replicas on one Redis', () => {
  const fast = ['--worker_report_interval_ms=200'];
  let browser, one, two, dash, worker, run;
  before(async () => {
    browser = await launchBrowser();
    one = await startStack({ brokerArgs: fast });
    two = await startStack({ brokerArgs: fast, redisPort: one.redisPort });
    dash = await startDashboard(one.address);
  });
  after(async () => {
    await worker?.stop();
    await run?.catch(() => {});
    await dash?.stop();
    await two?.stop();
    await one?.stop();
    await browser?.close();
  });

  test("the workers page shows another replica's workers from its report, and drops the replica once it stops reporting", async () => {
    worker = new Worker({ address: two.address, queues: ['remote'], workerId: 'remote-worker', logger: null });
    worker.register('t', async () => ({}));
    run = worker.run();
    const page = await browser.newPage();
    const url = `${dash.url}/workers`;
    const replicas = () => page.locator('ul.replicas li').evaluateAll((lis) => lis.map((li) => li.dataset.broker));
    const rows = await workersUntil(page, url, (r) => r['remote-worker'], 'the worker on the other replica listed');
    assert.match(rows['remote-worker'].broker, new RegExp(`:${two.brokerPort}$`));
    // The replica the dashboard talks to has no stream, and a replica
    // without streams reports nothing: only the other one is listed.
    assert.deepEqual(await replicas(), [rows['remote-worker'].broker]);
    assert.match(await page.locator(`ul.replicas li[data-broker="${rows['remote-worker'].broker}"]`).innerText(), /: 1 stream, reported /);
    await two.killBroker();
    await workersUntil(page, url, (r) => !r['remote-worker'], 'the killed replica and its worker gone');
    assert.equal((await replicas()).length, 0);
    assert.equal(await page.locator('main p.empty').innerText(), 'No worker is connected.');
    assert.match(await page.locator('main').innerText(), /No replica is reporting\./);
    await page.close();
  });
});
