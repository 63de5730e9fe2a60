// A --read_only dashboard against a real redis-server and broker: its pages
// (the Workers page included) show no form, and every action and every form
// that creates or changes something answers 403 before any other check, with
// nothing changed in the broker.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startAll, formSession, seed } from './helpers.mjs';

describe('read-only dashboard', () => {
  let all, client, stubs, dash, browser;
  before(async () => {
    all = await startAll({ dashArgs: ['--read_only'] });
    ({ client, stubs, dash, browser } = all);
  });
  after(async () => { await all?.stop(); });

  test('shows no action and refuses every action with 403', async () => {
    const [id] = await seed(client, 'readonly', { due: 1, dead: 1 });
    const page = await browser.newPage();
    await stubs.putSchedule({ name: 'ro-schedule', interval_ms: 3_600_000, job: { queue: 'readonly', type: 'build' } });
    for (const p of ['/workers', '/schedules', '/', '/queues/readonly', '/queues/readonly?state=dead', `/queues/readonly/jobs/${id}`]) {
      const res = await page.goto(`${dash.url}${p}`);
      assert.equal(res.status(), 200, p);
      assert.equal(await page.locator('form[method="post"]').count(), 0, `${p} shows a POST form`);
      if (p === '/workers') assert.equal(await page.locator('h1').innerText(), 'Workers');
    }
    assert.match(await page.locator('dd[data-field="Error"]').innerText(), /cancelled/);
    await page.close();
    // Read-only pages carry no form; the refusal comes before any other check.
    const { csrf, post } = await formSession(dash.url, '/queues/readonly');
    assert.equal(csrf, null);
    const refused = [
      ...[['pause', {}], ['purge-dead', { confirm: 'yes' }], ['retry-dead', { all: '1', confirm: 'yes' }], ['delete-job', { job_id: id, confirm: 'yes' }],
        ['cancel', { job_id: id, confirm: 'yes' }], ['delete-queue', { confirm: 'yes' }], ['update-queue', { max_active: '1' }],
        ['enqueue', { type: 'sneaked' }]].map(([action, body]) => [`/queues/readonly/${action}`, body]),
      ['/schedules/ro-schedule/delete', { confirm: 'yes' }],
      ['/schedules', { name: 'ro-schedule', queue: 'readonly', type: 'other', every_ms: '60000' }],
      ['/create-queue', { queue: 'ro-created' }],
    ];
    for (const [path, body] of refused) {
      const res = await post(path, body);
      assert.equal(res.status, 403, path);
      assert.match(await res.text(), /read-only/, path);
    }
    const [kept] = (await stubs.listSchedules()).filter((x) => x.schedule.name === 'ro-schedule');
    assert.equal(kept.schedule.job.type, 'build');
    assert.ok(!(await stubs.listQueues()).some((q) => q.queue === 'ro-created'));
    const s = await stubs.stats('readonly');
    assert.equal(s.paused, false);
    assert.equal(s.dead, 1);
    assert.equal(s.pending_due, 1);
  });
});
