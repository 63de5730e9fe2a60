// The dashboard against a real redis-server and broker, open (no tokens):
// what the browser shows matches what the test enqueued, live updates
// arrive without a reload, and actions change the broker's state only after
// a confirmation and only with the session's CSRF token from this origin.
// The Workers page lists the Claim streams of real Node.js Workers and drops
// one once it stops, and says so when the broker cannot be reached. The same
// dashboard read-only: read_only.test.mjs; behind an Ingress:
// public_origin.test.mjs; with two broker replicas: replicas.test.mjs.
import * as fs from 'node:fs';
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startAll, startDashboard, formSession, screenshot, seed, sleep, freePort, workersUntil, Worker } from './helpers.mjs';

let all, stack, client, stubs, dash, browser, metricsPort;

before(async () => {
  metricsPort = await freePort();
  all = await startAll({ brokerArgs: [`--metrics_listen=127.0.0.1:${metricsPort}`] });
  ({ stack, client, stubs, dash, browser } = all);
});

after(async () => {
  await all?.stop();
});

/** The cell texts of a queue's row on the queues page. */
async function row(page, queue) {
  const r = page.locator(`tr[data-queue="${queue}"]`);
  const cell = (c) => r.locator(`td[data-col="${c}"]`).innerText();
  return { due: await cell('pending_due'), scheduled: await cell('pending_scheduled'), active: await cell('active'), dead: await cell('dead') };
}

describe('open broker', () => {
  test('the queues page shows the counts the test enqueued', async () => {
    await seed(client, 'counts', { due: 3, scheduled: 2, dead: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/`);
    assert.deepEqual(await row(page, 'counts'), { due: '3', scheduled: '2', active: '0', dead: '1' });
    assert.equal(await page.locator('tr[data-queue="counts"] td[data-col="depth"] svg.spark').count(), 1);
    await page.close();
  });

  test('a new queue appears by server-sent events without a reload, with the connection state shown', async () => {
    const page = await browser.newPage();
    const problems = [];
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(`${dash.url}/`);
    await page.locator('#live-status[data-state="open"]').waitFor({ timeout: 10_000 });
    assert.match(await page.locator('#live-status').innerText(), /connected/);
    await page.evaluate(() => { window.notReloaded = true; });
    await seed(client, 'live', { due: 2 });
    await page.locator('tr[data-queue="live"] td[data-col="pending_due"]', { hasText: '2' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.evaluate(() => window.notReloaded), true);
    assert.deepEqual(problems, [], 'no script error and no Content-Security-Policy violation');
    await page.close();
  });

  test("the queues table shows each queue's rates and completed-per-minute history from the event stream", async () => {
    await client.enqueue('rated', 'ok', { first: true }); // the queue exists: the next poll follows it
    const page = await browser.newPage();
    await page.goto(`${dash.url}/`);
    const cell = (col, count) => page.locator(`tr[data-queue="rated"] td[data-col="${col}"]${count === undefined ? '' : `[data-count="${count}"]`}`);
    await cell('enqueued_rate', 0).waitFor({ timeout: 10_000 }); // subscribed: counting from here
    for (let i = 0; i < 9; i++) await client.enqueue('rated', 'ok', { i });
    for (let i = 0; i < 3; i++) await client.enqueue('rated', 'bad', { i }, { maxAttempts: 1 });
    const w = new Worker({ address: stack.address, queues: ['rated'], concurrency: 4, workerId: 'rated-worker', logger: null });
    w.register('ok', async () => ({}));
    w.register('bad', async () => { throw new Error('boom'); });
    const run = w.run();
    try {
      // The first job, enqueued before the subscription, is not counted in but is counted done.
      await cell('completed_rate', 10).waitFor({ timeout: 15_000 });
      await cell('failed_rate', 3).waitFor({ timeout: 15_000 });
      assert.equal(await cell('enqueued_rate').getAttribute('data-count'), '12');
      assert.match(await cell('enqueued_rate').innerText(), /^(\d+(\.\d)?|<0\.1)\/s$/);
      assert.match(await cell('completed_rate').getAttribute('title'), /^10 in the last \d+ s$/);
      assert.match(await page.locator('tr[data-queue="rated"] td[data-col="throughput"] svg').getAttribute('aria-label'),
        /^Jobs of rated completed per minute over the last \d+ min: 10 in all$/);
      // The queue's page: its last hour, depth and completed per minute.
      await page.goto(`${dash.url}/queues/rated`);
      assert.match(await page.locator('figure[data-chart="completed"] svg').getAttribute('aria-label'),
        /^Jobs of rated completed per minute over the last \d+ min: 10 in all$/);
      const depth = /, at most (\d+)$/.exec(await page.locator('figure[data-chart="depth"] svg').getAttribute('aria-label'));
      assert.ok(depth && Number(depth[1]) >= 1, 'the pending job was polled: depth 1 at least');
    } finally {
      await w.stop();
      await run;
      await page.close();
    }
  });

  test('a dead job shows its error; retrying it in the browser moves it to pending', async () => {
    const [id] = await seed(client, 'retry', { dead: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/retry?state=dead`);
    await page.getByRole('link', { name: id }).click();
    assert.equal(await page.locator('dd[data-field="Error"]').innerText(), 'cancelled');
    assert.equal(await page.locator('dd[data-field="State"]').innerText(), 'dead');
    assert.match(await page.locator('pre.bytes').first().innerText(), /"n": 0/);
    assert.deepEqual(await page.locator('table.errors tbody td:last-child').allInnerTexts(), ['cancelled'], 'the cancel in the error history');
    await page.getByRole('button', { name: 'Retry this job' }).click();
    assert.match(await page.locator('p.confirm').innerText(), /This affects 1 job\./);
    assert.equal((await stubs.getJob('retry', id)).state, 'JOB_STATE_DEAD', 'nothing happens before the confirmation');
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    assert.match(await page.locator('main').innerText(), /Moved 1 job back to pending/);
    assert.equal((await stubs.getJob('retry', id)).state, 'JOB_STATE_PENDING');
    await page.close();
  });

  test('retry all and purge ask first, showing how many dead jobs they affect', async () => {
    await seed(client, 'bulk', { dead: 3 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/bulk`);
    await page.getByRole('button', { name: 'Purge dead jobs (3)' }).click();
    assert.match(await page.locator('p.confirm').innerText(), /This affects 3 jobs\./);
    await page.getByRole('link', { name: 'No, go back' }).click();
    assert.equal((await stubs.stats('bulk')).dead, 3);
    await page.getByRole('button', { name: 'Retry all dead jobs (3)' }).click();
    assert.match(await page.locator('p.confirm').innerText(), /This affects 3 jobs\./);
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    const s = await stubs.stats('bulk');
    assert.equal(s.dead, 0);
    assert.equal(s.pending_due, 3);
    await page.close();
  });

  test('retry of the selected dead jobs, and of every dead job of one type, each asked with its count', async () => {
    const doomed = await seed(client, 'pick', { dead: 3 });
    const others = [];
    for (let i = 0; i < 2; i++) {
      const { jobId } = await client.enqueue('pick', 'other', { i });
      await client.cancel('pick', jobId);
      others.push(jobId);
    }
    const state = async (id) => (await stubs.getJob('pick', id)).state.replace('JOB_STATE_', '');
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/pick?state=dead`);
    await page.getByRole('checkbox', { name: `Select job ${doomed[0]}` }).check();
    await page.getByRole('checkbox', { name: `Select job ${doomed[2]}` }).check();
    await page.getByRole('button', { name: 'Retry selected' }).click();
    assert.match(await page.locator('p.confirm').innerText(), /Move the 2 selected dead jobs of queue pick back to pending\? This affects 2 jobs/);
    assert.equal((await stubs.stats('pick')).dead, 5, 'nothing happens before the confirmation');
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    assert.match(await page.locator('main').innerText(), /Moved 2 jobs back to pending/);
    assert.deepEqual(await Promise.all([...doomed, ...others].map(state)), ['PENDING', 'DEAD', 'PENDING', 'DEAD', 'DEAD']);

    await page.goto(`${dash.url}/queues/pick?state=dead&type=other`);
    await page.getByRole('button', { name: 'Retry all dead jobs of type other' }).click();
    assert.match(await page.locator('p.confirm').innerText(), /Move all dead jobs of type other of queue pick back to pending\? This affects 2 jobs\./);
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    assert.deepEqual(await Promise.all([...doomed, ...others].map(state)), ['PENDING', 'DEAD', 'PENDING', 'PENDING', 'PENDING']);
    await page.close();
  });

  test('a purge of the dead jobs older than an age counts and removes only those', async () => {
    const old = await seed(client, 'aged', { dead: 2 });
    await sleep(4000);
    const [young] = await seed(client, 'aged', { dead: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/aged`);
    await page.getByLabel('Purge dead jobs that died more than').fill('3');
    await page.getByLabel('Unit').selectOption('s');
    await page.getByRole('button', { name: 'Purge older' }).click();
    assert.match(await page.locator('p.confirm').innerText(), /Remove the dead jobs of queue aged that died more than 3 s ago, for good\? This affects 2 jobs\./);
    assert.equal((await stubs.stats('aged')).dead, 3, 'nothing happens before the confirmation');
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    assert.match(await page.locator('main').innerText(), /Removed 2 jobs\./);
    for (const id of old) await assert.rejects(stubs.getJob('aged', id), (e) => e.code === 5);
    assert.equal((await stubs.getJob('aged', young)).state, 'JOB_STATE_DEAD');
    await page.close();
  });

  test('bad action forms are refused with the field named, and change nothing', async () => {
    await seed(client, 'badform', { dead: 2 });
    const session = await formSession(dash.url, '/queues/badform');
    const post = (action, fields) => session.post(`/queues/badform/${action}`, [['confirm', 'yes'], ...fields]);
    const cases = [
      ['purge-dead', [['older_than', '0'], ['unit', 'd']], /older_than must be a whole number from 1 to 100000/],
      ['purge-dead', [['older_than', '5'], ['unit', 'weeks']], /unit must be one of s, min, h, d/],
      ['retry-dead', [], /Select at least one dead job \(job_id missing\)/],
      ['retry-dead', Array.from({ length: 1001 }, (_, i) => ['job_id', `id-${i}`]), /job_id: at most 1000 jobs at a time \(1001 selected\)/],
      ['delete-job', [['job_id', 'a'], ['job_id', 'b']], /One job at a time: job_id is given 2 times/],
    ];
    for (const [action, fields, message] of cases) {
      const res = await post(action, fields);
      assert.equal(res.status, 400, `${action} ${fields.length} fields`);
      assert.match(await res.text(), message);
    }
    assert.equal((await stubs.stats('badform')).dead, 2);
  });

  test("a job's payload beyond what the page shows downloads whole", async () => {
    const big = { data: 'x'.repeat(20_000), n: 7 };
    const { jobId } = await client.enqueue('download', 'big', big);
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/download/jobs/${jobId}`);
    assert.match(await page.locator('main').innerText(), /more characters not shown/);
    const link = page.getByRole('link', { name: /^Download payload \(\d+ bytes\)$/ });
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), `${jobId}-payload.bin`);
    assert.deepEqual(JSON.parse(fs.readFileSync(await download.path(), 'utf8')), big);
    assert.equal(await page.getByRole('link', { name: /^Download result/ }).count(), 0, 'no result: no link');
    const res = await page.request.get(`${dash.url}/queues/download/jobs/${jobId}/result`);
    assert.equal(res.status(), 200);
    assert.equal((await res.body()).length, 0);
    assert.equal((await page.request.get(`${dash.url}/queues/download/jobs/no-such-job/payload`)).status(), 404);
    await page.close();
  });

  test('a job is found by the idempotency key it was enqueued with', async () => {
    const { jobId } = await client.enqueue('idem', 'charge', { order: 9 }, { idempotencyKey: 'order 9/ä' });
    await client.enqueue('idem', 'charge', { order: 10 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/idem`);
    await page.getByLabel('Idempotency key', { exact: true }).fill('order 9/ä');
    await page.getByRole('button', { name: 'Find job' }).click();
    assert.equal(new URL(page.url()).pathname, `/queues/idem/jobs/${jobId}`);
    assert.equal(await page.locator('dd[data-field="Idempotency key"]').innerText(), 'order 9/ä');
    const res = await page.goto(`${dash.url}/queues/idem?idempotency_key=order-11`);
    assert.equal(res.status(), 404);
    assert.match(await page.getByRole('alert').innerText(), /Not found \(NOT_FOUND\)[\s\S]*no job in queue idem holds idempotency key order-11/);
    await page.close();
  });

  test("a queue's settings change from its page; a value the broker refuses is shown with its field and changes nothing", async () => {
    await seed(client, 'tuned', { due: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/tuned`);
    await page.getByText('Change settings').click();
    await page.getByLabel('Max active jobs').fill('3');
    await page.getByLabel('Max active per concurrency key').fill('2');
    await page.getByLabel('Rate limit: jobs').fill('5');
    await page.getByLabel('per (ms)').fill('1000');
    await page.getByRole('button', { name: 'Save settings' }).click();
    assert.match(await page.locator('main').innerText(), /Queue tuned updated: max active 3, max active per key 2, rate limit 5 per 1000 ms\./);
    let s = await stubs.stats('tuned');
    assert.deepEqual([s.max_active, s.max_active_per_key, s.rate_limit?.count, s.rate_limit?.interval_ms], [3, 2, 5, 1000]);
    await page.goto(`${dash.url}/queues/tuned`);
    assert.equal(await page.locator('main p.limits').innerText(),
      'Limits: at most 5 jobs per 1 s; at most 3 active jobs; at most 2 active jobs per concurrency key.');
    await page.getByText('Change settings').click();
    await page.getByLabel('Max active jobs').fill('2000000');
    await page.getByRole('button', { name: 'Save settings' }).click();
    assert.match(await page.getByRole('alert').innerText(), /INVALID_ARGUMENT[\s\S]*max_active/);
    s = await stubs.stats('tuned');
    assert.equal(s.max_active, 3, 'the refused value changed nothing');
    await page.close();
  });

  test('delete queue asks with its job count, then removes the queue and its jobs', async () => {
    await seed(client, 'doomed-q', { due: 2, dead: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/doomed-q`);
    await page.getByRole('button', { name: 'Delete queue' }).click();
    assert.match(await page.locator('p.confirm').innerText(), /Delete queue doomed-q and every job it holds, for good\? This affects 3 jobs\./);
    assert.equal((await stubs.stats('doomed-q')).pending_due, 2, 'nothing happens before the confirmation');
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    assert.match(await page.locator('main').innerText(), /Deleted queue doomed-q: 3 jobs removed\./);
    const s = await stubs.stats('doomed-q');
    assert.deepEqual([s.pending_due, s.dead], [0, 0]);
    await page.goto(`${dash.url}/`);
    await page.waitForFunction(() => !document.querySelector('tr[data-queue="doomed-q"]'), null, { timeout: 10_000 });
    await page.close();
  });

  test('a schedule is deleted from the schedules page after a confirmation', async () => {
    await stubs.putSchedule({ name: 'nightly-report', interval_ms: 3_600_000, job: { queue: 'reports', type: 'build' } });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/schedules`);
    await page.getByRole('button', { name: 'Delete nightly-report' }).click();
    assert.match(await page.locator('p.confirm').innerText(), /Delete schedule nightly-report\?/);
    assert.equal((await stubs.listSchedules()).filter((x) => x.schedule.name === 'nightly-report').length, 1, 'nothing happens before the confirmation');
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    assert.match(await page.locator('main').innerText(), /Deleted schedule nightly-report\./);
    assert.equal((await stubs.listSchedules()).filter((x) => x.schedule.name === 'nightly-report').length, 0);
    await page.close();
  });

  test('delete and cancel of one job, confirmed', async () => {
    const { jobId: a } = await client.enqueue('single', 'x', { a: 1 });
    const { jobId: b } = await client.enqueue('single', 'x', Buffer.from([0, 1, 2, 255]));
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/single/jobs/${b}`);
    assert.equal(await page.locator('pre.bytes').first().innerText(), '00 01 02 ff', 'non-JSON payload shown as hex');
    await page.getByRole('button', { name: 'Cancel this job' }).click();
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    assert.equal((await stubs.getJob('single', b)).state, 'JOB_STATE_DEAD');
    await page.goto(`${dash.url}/queues/single?job_id=${a}`);
    await page.getByRole('button', { name: 'Delete this job' }).click();
    await page.getByRole('button', { name: 'Yes, do it' }).click();
    await assert.rejects(stubs.getJob('single', a), (e) => e.code === 5);
    await page.close();
  });

  test('values from the broker are shown as text, never as markup', async () => {
    const { jobId } = await client.enqueue('escape', '<b id="injected">t</b>', { x: '<img id=injected2 src=x>' });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/escape/jobs/${jobId}`);
    assert.equal(await page.locator('dd[data-field="Type"]').innerText(), '<b id="injected">t</b>');
    assert.match(await page.locator('pre.bytes').first().innerText(), /<img id=injected2 src=x>/);
    assert.equal(await page.locator('#injected, #injected2').count(), 0);
    await page.goto(`${dash.url}/queues/escape`);
    assert.equal(await page.locator('#injected, #injected2').count(), 0);
    await page.close();
  });

  test('pause shows the queue paused and the broker reports it; resume undoes it', async () => {
    await seed(client, 'pausable', { due: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/pausable`);
    await page.getByRole('button', { name: 'Pause queue' }).click();
    assert.match(await page.locator('main').innerText(), /Queue pausable is paused/);
    assert.equal((await stubs.stats('pausable')).paused, true);
    await page.goto(`${dash.url}/queues/pausable`);
    assert.equal(await page.locator('main .badge.paused').count(), 1);
    await page.goto(`${dash.url}/`);
    await page.locator('tr[data-queue="pausable"] .badge.paused').waitFor();
    await page.goto(`${dash.url}/queues/pausable`);
    await page.getByRole('button', { name: 'Resume queue' }).click();
    assert.match(await page.locator('main').innerText(), /Queue pausable is resumed\./);
    assert.equal((await stubs.stats('pausable')).paused, false);
    await page.close();
  });

  test("a queue's page shows its rate limit and max_active, or that it has none", async () => {
    await stubs.createQueue({ queue: 'limited', rate_limit: { count: 5, interval_ms: 1000, burst: 10 }, max_active: 3 });
    await seed(client, 'limited', { due: 1 });
    await seed(client, 'unlimited', { due: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/limited`);
    assert.equal(await page.locator('main p.limits').innerText(),
      'Limits: at most 5 jobs per 1 s (bursts of 10); at most 3 active jobs.');
    await page.goto(`${dash.url}/queues/unlimited`);
    assert.equal(await page.locator('main p.limits').innerText(), 'Limits: no rate limit; no limit on active jobs.');
    await page.close();
  });

  test('the keyboard alone reaches and presses the actions', async () => {
    await seed(client, 'keys', { due: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/keys`);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');
    let focused = '';
    for (let i = 0; i < 20 && focused !== 'Pause queue'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement.textContent);
    }
    assert.equal(focused, 'Pause queue');
    await page.keyboard.press('Enter');
    await page.getByText('Queue keys is paused').waitFor();
    assert.equal((await stubs.stats('keys')).paused, true);
    await page.close();
  });

  test('a POST without the CSRF token, or from another origin, is refused and changes nothing', async () => {
    await seed(client, 'csrf', { due: 1 });
    const { cookie, csrf } = await formSession(dash.url, '/queues/csrf');
    const post = (body, headers) =>
      fetch(`${dash.url}/queues/csrf/pause`, {
        method: 'POST', redirect: 'manual', body: new URLSearchParams(body),
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      });
    assert.equal((await post({}, { origin: dash.url })).status, 403, 'no CSRF token');
    assert.equal((await post({ csrf: 'wrong' }, { origin: dash.url })).status, 403, 'wrong CSRF token');
    assert.equal((await post({ csrf }, { origin: 'http://evil.example' })).status, 403, 'foreign Origin');
    assert.equal((await post({ csrf }, {})).status, 403, 'neither Origin nor Referer');
    assert.equal((await stubs.stats('csrf')).paused, false);
    assert.equal((await post({ csrf }, { origin: dash.url })).status, 200, 'the same request with both passes');
    assert.equal((await stubs.stats('csrf')).paused, true);
  });

  test('one shared poll feeds every viewer: ten event streams cost the broker no more ListQueues calls than one', async () => {
    const listQueuesCalls = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return [...text.matchAll(/^jobwire_rpc_requests_total\{[^}]*method="ListQueues"[^}]*\} (\S+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    };
    const { cookie } = await formSession(dash.url);
    const viewers = await Promise.all(Array.from({ length: 10 }, async () => {
      const ctl = new AbortController();
      const res = await fetch(`${dash.url}/events`, { headers: { cookie }, signal: ctl.signal });
      const viewer = { events: 0, stop: () => ctl.abort() };
      (async () => {
        const decoder = new TextDecoder();
        try {
          for await (const chunk of res.body) viewer.events += (decoder.decode(chunk).match(/^event: queues$/gm) ?? []).length;
        } catch { /* aborted */ }
      })();
      return viewer;
    }));
    const before = await listQueuesCalls();
    await sleep(3000); // the dashboard polls every 500 ms here
    const calls = (await listQueuesCalls()) - before;
    for (const v of viewers) v.stop();
    assert.ok(calls >= 1 && calls <= 9, `${calls} ListQueues calls in 3 s for 10 viewers`);
    for (const v of viewers) assert.ok(v.events >= 2, `a viewer got ${v.events} updates in 3 s`);
  });

  test('the workers page lists each Claim stream (queues and weights, types, in flight, broker) and drops a stopped worker', async () => {
    const noWorker = await browser.newPage();
    await noWorker.goto(`${dash.url}/workers`);
    assert.equal(await noWorker.locator('main p.empty').innerText(), 'No worker is connected.');
    await noWorker.close();

    let release;
    const held = new Promise((r) => { release = r; });
    let started;
    const holding = new Promise((r) => { started = r; });
    const a = new Worker({
      address: stack.address, queues: ['wq1', 'wq2'], weights: { wq1: 3, wq2: 1 }, concurrency: 4,
      workerId: 'dash-worker-a', logger: null,
    });
    a.register('hold', async () => { started(); await held; return { ok: true }; });
    const b = new Worker({ address: stack.address, queues: ['wq3'], workerId: 'dash-worker-b', logger: null });
    b.register('noop', async () => ({}));
    b.register('other', async () => ({}));
    const runs = [a.run(), b.run()];
    const page = await browser.newPage();
    try {
      await client.enqueue('wq1', 'hold', {});
      await holding;
      const url = `${dash.url}/workers`;
      const rows = await workersUntil(page, url,
        (r) => r['dash-worker-a']?.in_flight === '1 / 4' && r['dash-worker-b'], 'both workers listed, one job held by a');
      assert.equal(rows['dash-worker-a'].queues, 'wq1 ×3, wq2 ×1');
      assert.equal(rows['dash-worker-a'].types, 'hold');
      assert.equal(rows['dash-worker-b'].queues, 'wq3', 'no weights: the names alone');
      assert.equal(rows['dash-worker-b'].types, 'noop, other');
      assert.equal(rows['dash-worker-b'].in_flight, '0 / 1');
      const brokerName = rows['dash-worker-a'].broker;
      assert.match(brokerName, new RegExp(`:${stack.brokerPort}$`), 'the replica is named <host>:<port>');
      assert.equal(rows['dash-worker-b'].broker, brokerName);
      for (const w of ['dash-worker-a', 'dash-worker-b']) {
        assert.match(rows[w].since, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z \(\d+ (ms|s) ago\)$/, w);
        assert.match(rows[w].peer, /127\.0\.0\.1:\d+/, w);
      }
      assert.equal(await page.locator('table.workers caption').count(), 1);
      assert.equal(await page.locator('table.workers thead th[scope="col"]').count(), 7);
      assert.equal(await page.locator('table.workers tbody th[scope="row"]').count(), 2);
      const replica = page.locator(`ul.replicas li[data-broker="${brokerName}"]`);
      assert.equal(await page.locator('ul.replicas li').count(), 1);
      assert.match(await replica.innerText(), /: 2 streams, reported \d{4}-.*Z \(\d+ (ms|s) ago\)$/);
      await page.getByRole('link', { name: 'wq1' }).click();
      assert.equal(new URL(page.url()).pathname, '/queues/wq1', 'a queue links to its page');
      await page.goto(url);
      await screenshot(page, 'workers');
      await page.setViewportSize({ width: 375, height: 740 });
      await page.goto(url);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `the workers page is wider than a phone by ${overflow}px`);
      await screenshot(page, 'workers-phone');

      release();
      await b.stop();
      const after = await workersUntil(page, url, (r) => !r['dash-worker-b'] && r['dash-worker-a']?.in_flight === '0 / 4',
        'worker b gone, the held job settled');
      assert.deepEqual(Object.keys(after), ['dash-worker-a']);
    } finally {
      release();
      await Promise.all([a.stop(), b.stop()]);
      await Promise.allSettled(runs);
      await page.close();
    }
  });

  test('the workers page is in the navigation and reached with the keyboard alone', async () => {
    const page = await browser.newPage();
    await page.goto(`${dash.url}/`);
    let focused = '';
    for (let i = 0; i < 10 && focused !== 'Workers'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement.textContent);
    }
    assert.equal(focused, 'Workers');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${dash.url}/workers`);
    assert.equal(await page.locator('h1').innerText(), 'Workers');
    await page.close();
  });

  test('/healthz answers ok without a session', async () => {
    const res = await fetch(`${dash.url}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok\n');
    assert.equal(res.headers.get('set-cookie'), null);
    // A browser asks for /favicon.ico on its own: no 404 in its console.
    const icon = await fetch(`${dash.url}/favicon.ico`);
    assert.equal(icon.status, 204);
    assert.equal(icon.headers.get('set-cookie'), null);
  });

  test('the pages work at phone width', async () => {
    const page = await browser.newPage();
    await page.setViewportSize({ width: 375, height: 740 });
    await page.goto(`${dash.url}/queues/counts`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `page wider than the phone by ${overflow}px`);
    await screenshot(page, 'queue-phone');
    await page.close();
  });

  test('screenshots of the queues page once a few polls made history', async () => {
    const page = await browser.newPage();
    await page.goto(`${dash.url}/`);
    await page.locator('#live-status[data-state="open"]').waitFor({ timeout: 10_000 });
    await screenshot(page, 'queues');
    await page.goto(`${dash.url}/queues/counts`);
    await screenshot(page, 'queue');
    await page.close();
  });
});

describe('a broker that cannot be reached', () => {
  let gone;
  before(async () => { gone = await startDashboard(`127.0.0.1:${await freePort()}`); });
  after(async () => { await gone?.stop(); });

  test('the workers page says UNAVAILABLE in an alert, with status 503', async () => {
    const page = await browser.newPage();
    const res = await page.goto(`${gone.url}/workers`);
    assert.equal(res.status(), 503);
    assert.equal(await page.locator('h1').innerText(), 'Workers');
    assert.match(await page.getByRole('alert').innerText(), /cannot be reached right now \(UNAVAILABLE\)/);
    await page.close();
  });
});
