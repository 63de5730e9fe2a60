// What the CLI's create-queue, enqueue, put-schedule, wait and watch do,
// done from the browser against a real redis-server and broker: each form
// changes the broker's state as the broker then reports it (independent
// gRPC calls), a refused form names its field and changes nothing, a job's
// page follows the job until it finishes, and a queue's watch page shows
// its events as real Node.js Workers run its jobs.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startAll, formSession, screenshot, waitFor, Worker } from './helpers.mjs';

let all, stack, client, stubs, dash, browser;

before(async () => {
  all = await startAll();
  ({ stack, client, stubs, dash, browser } = all);
});

after(async () => {
  await all?.stop();
});

/** A Worker of the stack on `queue` with `handlers` by type, running until stop(). */
function worker(queue, handlers) {
  const w = new Worker({ address: stack.address, queues: [queue], logger: null, leaseMs: 5000 });
  for (const [type, fn] of Object.entries(handlers)) w.register(type, fn);
  const run = w.run();
  return { stop: async () => { await w.stop(); await run; } };
}

describe('forms that create', () => {
  test('a queue is created from the queues page with its settings', async () => {
    const page = await browser.newPage();
    await page.goto(`${dash.url}/`);
    await page.getByText('Create a queue').click();
    await page.locator('#cq-queue').fill('made');
    await page.locator('#cq-max_active').fill('3');
    await page.locator('#cq-rate_count').fill('5');
    await page.locator('#cq-rate_interval_ms').fill('1000');
    await page.locator('#cq-key_rate_count').fill('2');
    await page.locator('#cq-key_rate_interval_ms').fill('60000');
    await page.getByRole('button', { name: 'Create queue' }).click();
    assert.match(await page.locator('main').innerText(), /Created queue made\./);
    const s = await stubs.stats('made');
    assert.equal(s.max_active, 3);
    assert.deepEqual(s.rate_limit, { count: 5, interval_ms: 1000, burst: 5 });
    assert.deepEqual(s.key_rate_limit, { count: 2, interval_ms: 60000, burst: 2 });
    await page.getByRole('link', { name: 'Go to queue made' }).click();
    assert.match(await page.locator('p.limits').innerText(),
      /at most 5 jobs per 1 s; at most 3 active jobs; at most 2 jobs per 60 s per concurrency key/);
    await page.close();
  });

  test('a refused create-queue names the field and creates nothing', async () => {
    const { post } = await formSession(dash.url);
    const cases = [
      [{ queue: 'not-made-1', partitions: 'two' }, /partitions must be a whole number/],
      [{ queue: 'not-made-2', max_active: '-1' }, /max_active/],
      [{ queue: 'not made', max_active: '1' }, /queue/],
      [{ queue: 'made' }, /It exists already \(ALREADY_EXISTS\)/],
    ];
    for (const [fields, message] of cases) {
      const res = await post('/create-queue', fields);
      assert.ok(res.status >= 400 && res.status < 500, `${JSON.stringify(fields)}: ${res.status}`);
      assert.match(await res.text(), message, JSON.stringify(fields));
    }
    const names = (await stubs.listQueues()).map((q) => q.queue);
    assert.ok(!names.some((n) => n.startsWith('not')), names.join(','));
    assert.equal((await stubs.stats('made')).max_active, 3, 'the existing queue kept its settings');
  });

  test("a job is enqueued from its queue's page with its options, and its page shows them", async () => {
    await stubs.createQueue({ queue: 'forms' });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/forms`);
    await page.getByText('Enqueue a job').click();
    await page.locator('#eq-type').fill('send');
    await page.locator('#eq-payload').fill('{"to": "ops@example.com"}');
    await page.locator('#eq-priority').fill('7');
    await page.locator('#eq-delay_ms').fill('3600000');
    await page.locator('#eq-max_attempts').fill('4');
    await page.locator('#eq-idempotency_key').fill('order-42');
    await page.getByRole('button', { name: 'Enqueue', exact: true }).click();
    const message = await page.locator('main [role="status"]').innerText();
    const id = /Enqueued job (\S+)\./.exec(message)?.[1];
    assert.ok(id, message);
    const job = await stubs.getJob('forms', id);
    assert.equal(job.type, 'send');
    assert.equal(Buffer.from(job.payload).toString(), '{"to": "ops@example.com"}');
    assert.equal(job.priority, 7);
    assert.equal(job.max_attempts, 4);
    assert.equal(job.idempotency_key, 'order-42');
    assert.ok(job.available_at_ms > Date.now() + 3_500_000, 'delayed by an hour');
    await page.getByRole('link', { name: 'Go to the job' }).click();
    assert.equal(await page.locator('dd[data-field="Priority"]').innerText(), '7');
    assert.match(await page.locator('pre.bytes').first().innerText(), /"to": "ops@example.com"/);

    // The same idempotency key again: the same job, nothing added.
    const { post } = await formSession(dash.url, '/queues/forms');
    const again = await post('/queues/forms/enqueue', { type: 'send', payload: '{}', payload_format: 'json', idempotency_key: 'order-42' });
    assert.equal(again.status, 200);
    assert.match(await again.text(), new RegExp(`A job with this idempotency key exists: ${id}\\. Nothing was added\\.`));
    assert.equal((await stubs.stats('forms')).pending_scheduled, 1);
    await page.close();
  });

  test('a refused enqueue names the field and adds nothing', async () => {
    const { post } = await formSession(dash.url, '/queues/forms');
    const before = await stubs.stats('forms');
    const cases = [
      [{ type: 'send', payload: '{"to":', payload_format: 'json' }, 400, /payload is not JSON/],
      [{ payload: '{}' }, 400, /type is required/],
      [{ type: 'send', priority: 'high' }, 400, /priority must be a whole number/],
      [{ type: 'send', priority: '5000' }, 400, /priority/],
      [{ type: 'send', max_attempts: '1001' }, 400, /max_attempts/],
    ];
    for (const [fields, status, message] of cases) {
      const res = await post('/queues/forms/enqueue', fields);
      assert.equal(res.status, status, JSON.stringify(fields));
      assert.match(await res.text(), message, JSON.stringify(fields));
    }
    const now = await stubs.stats('forms');
    assert.equal(now.pending_due + now.pending_scheduled, before.pending_due + before.pending_scheduled);
  });

  test('a schedule is created from the schedules page, then edited with its fields filled in', async () => {
    const page = await browser.newPage();
    await page.goto(`${dash.url}/schedules`);
    await page.locator('#ps-name').fill('nightly-report');
    await page.locator('#ps-cron').fill('0 3 * * *');
    await page.locator('#ps-time_zone').fill('Europe/Berlin');
    await page.locator('#ps-queue').fill('reports');
    await page.locator('#ps-type').fill('build');
    await page.locator('#ps-payload').fill('{"full": true}');
    await page.locator('#ps-max_attempts').fill('2');
    await page.getByRole('button', { name: 'Create schedule' }).click();
    assert.match(await page.locator('main').innerText(), /Created schedule nightly-report: its next run is at \d{4}-/);
    let [s] = (await stubs.listSchedules()).filter((x) => x.schedule.name === 'nightly-report');
    assert.equal(s.schedule.cron, '0 3 * * *');
    assert.equal(s.schedule.time_zone, 'Europe/Berlin');
    assert.equal(s.schedule.job.queue, 'reports');
    assert.equal(s.schedule.job.max_attempts, 2);

    await page.goto(`${dash.url}/schedules`);
    await page.getByRole('link', { name: 'Edit nightly-report' }).click();
    assert.equal(await page.locator('#schedule-form').innerText(), 'Edit schedule nightly-report');
    assert.equal(await page.locator('#ps-cron').inputValue(), '0 3 * * *');
    assert.equal(await page.locator('#ps-time_zone').inputValue(), 'Europe/Berlin');
    assert.equal(await page.locator('#ps-payload').inputValue(), '{"full": true}');
    assert.equal(await page.locator('#ps-max_attempts').inputValue(), '2');
    await page.locator('#ps-cron').fill('');
    await page.locator('#ps-every_ms').fill('60000');
    await page.locator('#ps-time_zone').fill('');
    await page.getByRole('button', { name: 'Save schedule' }).click();
    assert.match(await page.locator('main').innerText(), /Replaced schedule nightly-report/);
    [s] = (await stubs.listSchedules()).filter((x) => x.schedule.name === 'nightly-report');
    assert.equal(s.schedule.interval_ms, 60000);
    assert.ok(!s.schedule.cron, 'no cron with an interval');
    assert.equal(Buffer.from(s.schedule.job.payload).toString(), '{"full": true}', 'the payload kept');
    await page.close();
  });

  test('a refused schedule names the field and changes nothing', async () => {
    const { post } = await formSession(dash.url, '/schedules');
    const base = { name: 'refused', queue: 'reports', type: 'build' };
    const cases = [
      [{ ...base }, /exactly one of cron and every_ms/],
      [{ ...base, cron: 'every day' }, /cron/],
      [{ ...base, cron: '* * * * *', time_zone: 'Mars/Olympus' }, /time_zone/],
      [{ ...base, every_ms: '10' }, /interval_ms/],
      [{ ...base, cron: '* * * * *', start_at: 'soon' }, /start_at must be a date and time/],
    ];
    for (const [fields, message] of cases) {
      const res = await post('/schedules', fields);
      assert.equal(res.status, 400, JSON.stringify(fields));
      assert.match(await res.text(), message, JSON.stringify(fields));
    }
    assert.deepEqual((await stubs.listSchedules()).filter((x) => x.schedule.name === 'refused'), []);
    const edit = await fetch(`${dash.url}/schedules?edit=no-such-schedule`);
    assert.equal(edit.status, 404);
  });
});

describe('following jobs and queues', () => {
  test("a job's page follows the job until it finishes, without a reload", async () => {
    const { jobId } = await client.enqueue('followed', 'slow', { n: 1 });
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/followed/jobs/${jobId}`);
    await page.locator('#live-status[data-state="open"]').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('dd[data-field="State"]').innerText(), 'pending');
    let release;
    const held = new Promise((r) => { release = r; });
    const w = worker('followed', { slow: async () => { await held; return { done: true }; } });
    try {
      await page.locator('dd[data-field="State"]', { hasText: 'active' }).waitFor({ timeout: 10_000 });
      release();
      await page.locator('dd[data-field="State"]', { hasText: 'completed' }).waitFor({ timeout: 10_000 });
      await page.locator('#live-status[data-state="closed"]').waitFor({ timeout: 10_000 });
      assert.equal(await page.locator('#live-status').innerText(), 'Live updates: ended: the job finished');
      assert.match(await page.locator('pre.bytes').nth(1).innerText(), /"done": true/);
      assert.equal((await stubs.getJob('followed', jobId)).state, 'JOB_STATE_COMPLETED');
    } finally {
      release();
      await w.stop();
      await page.close();
    }
  });

  test("a job that failed every run shows each run's error, oldest first", async () => {
    let runs = 0;
    const w = worker('flaky', { charge: async () => { runs++; throw new Error(`card declined (run ${runs})`); } });
    try {
      const { jobId } = await client.enqueue('flaky', 'charge', { amount: 12 }, { maxAttempts: 3, backoffBaseMs: 10, backoffMaxMs: 10 });
      await waitFor(async () => (await stubs.getJob('flaky', jobId)).state === 'JOB_STATE_DEAD', { timeoutMs: 10_000, what: 'the job dead after 3 runs' });
      const page = await browser.newPage();
      await page.goto(`${dash.url}/queues/flaky/jobs/${jobId}`);
      const rows = await page.locator('table.errors tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.innerText)));
      assert.deepEqual(rows.map((r) => [r[0], r[2]]), [
        ['1', 'Error: card declined (run 1)'], ['2', 'Error: card declined (run 2)'], ['3', 'Error: card declined (run 3)'],
      ]);
      for (const r of rows) assert.match(r[1], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
      assert.equal(await page.locator('dd[data-field="Error"]').innerText(), 'Error: card declined (run 3)');
      await screenshot(page, 'job');
      await page.close();
    } finally {
      await w.stop();
    }
  });

  test("a finished job's page opens no stream; an unknown job's stream says NOT_FOUND", async () => {
    const { jobId } = await client.enqueue('followed', 'doomed', {});
    await client.cancel('followed', jobId);
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/followed/jobs/${jobId}`);
    assert.equal(await page.locator('[data-events]').count(), 0);
    assert.equal(await page.locator('#live-status').count(), 0);
    await page.close();
    const res = await fetch(`${dash.url}/queues/followed/jobs/no-such-job/events`);
    assert.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const text = await res.text();
    assert.match(text, /event: end\ndata: stopped\. Not found \(NOT_FOUND\)\./);
  });

  test("the watch page shows the queue's events as they happen, errors included", async () => {
    const page = await browser.newPage();
    await page.goto(`${dash.url}/queues/watched`);
    await page.getByRole('link', { name: 'Live events of this queue' }).click();
    assert.equal(await page.locator('h1').innerText(), 'Events of queue watched');
    await page.locator('#live-status[data-state="open"]').waitFor({ timeout: 10_000 });
    const w = worker('watched', {
      ok: async () => ({ fine: true }),
      bad: async () => { throw new Error('printer on fire'); },
    });
    try {
      const { jobId: good } = await client.enqueue('watched', 'ok', {});
      const { jobId: bad } = await client.enqueue('watched', 'bad', {}, { maxAttempts: 1 });
      const row = (id, kind) => page.locator(`#events-live tr[data-job="${id}"][data-kind="${kind}"]`);
      for (const kind of ['enqueued', 'active', 'completed']) await row(good, kind).waitFor({ timeout: 10_000 });
      await row(bad, 'dead').waitFor({ timeout: 10_000 });
      assert.match(await row(bad, 'dead').innerText(), /printer on fire/);
      assert.match(await row(good, 'completed').innerText(), /\bok\b/);
      // Newest first: the completion is above the enqueue.
      const order = await page.locator(`#events-live tr[data-job="${good}"]`).evaluateAll((trs) => trs.map((t) => t.dataset.kind));
      assert.deepEqual(order.filter((k) => ['enqueued', 'active', 'completed'].includes(k)), ['completed', 'active', 'enqueued']);
      await screenshot(page, 'watch');
    } finally {
      await w.stop();
      await page.close();
    }
  });
});
