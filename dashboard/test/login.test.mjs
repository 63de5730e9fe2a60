// The dashboard in front of a broker that requires tokens (--require_login):
// every page asks for a login first; a wrong token and a token without the
// admin permission are refused with a clear message; an admin token opens
// the queues; a token limited to other queues sees PERMISSION_DENIED, and
// with admin alone opens its own queues' jobs and rates; the
// token never appears in served HTML, URLs or the dashboard's log, and the
// session cookie is HttpOnly and SameSite=Strict. The Workers page lists
// only the workers whose queues the token may all administer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startAll, startDashboard, formSession, screenshot, waitFor, Worker } from './helpers.mjs';

const ADMIN = crypto.randomBytes(24).toString('hex');
const PRODUCER = crypto.randomBytes(24).toString('hex');
const OTHER_ADMIN = crypto.randomBytes(24).toString('hex');
const WORKER = crypto.randomBytes(24).toString('hex');
const sha = (t) => crypto.createHash('sha256').update(t).digest('hex');

let dir, all, stack, client, stubs, dash, browser;
/** Every HTML body the browser received. */
const served = [];

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jw-dash-tokens-'));
  const tokensFile = path.join(dir, 'tokens.json');
  fs.writeFileSync(tokensFile, JSON.stringify({ tokens: [
    { name: 'ops', sha256: sha(ADMIN), admin: ['*'], enqueue: ['*'] },
    { name: 'producer', sha256: sha(PRODUCER), enqueue: ['*'] },
    { name: 'other-ops', sha256: sha(OTHER_ADMIN), admin: ['other.*'] },
    { name: 'worker', sha256: sha(WORKER), claim: ['*'] },
  ] }));
  all = await startAll({ brokerArgs: ['--metrics_listen=', `--auth_tokens_file=${tokensFile}`], dashArgs: ['--require_login'], token: ADMIN });
  ({ stack, client, stubs, dash, browser } = all);
  browser.on('response', async (res) => {
    if ((res.headers()['content-type'] ?? '').startsWith('text/html')) served.push(await res.text().catch(() => ''));
  });
});

after(async () => {
  await all?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function logIn(page, token) {
  await page.goto(`${dash.url}/`);
  assert.equal(new URL(page.url()).pathname, '/login', 'a page without a login sends to /login');
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
}

test('a wrong token and a token without admin permission are refused with a clear message', async () => {
  const page = await browser.newPage();
  await logIn(page, 'not-a-token');
  assert.match(await page.getByRole('alert').innerText(), /did not accept this token \(UNAUTHENTICATED\)/);
  await logIn(page, PRODUCER);
  assert.match(await page.getByRole('alert').innerText(), /may not administer any queue \(PERMISSION_DENIED\)/);
  await screenshot(page, 'login-refused');
  await page.close();
});

test('an admin token opens the queues and its actions; the token appears nowhere it is served', async () => {
  await client.enqueue('secure', 'send', { n: 1 });
  await client.enqueue('secure', 'send', { n: 2 });
  const page = await browser.newPage();
  await logIn(page, ADMIN);
  assert.equal(new URL(page.url()).pathname, '/');
  assert.equal(await page.locator('tr[data-queue="secure"] td[data-col="pending_due"]').innerText(), '2');
  await page.locator('#live-status[data-state="open"]').waitFor({ timeout: 10_000 });

  await page.goto(`${dash.url}/queues/secure`);
  await page.getByRole('button', { name: 'Pause queue' }).click();
  assert.equal((await stubs.stats('secure')).paused, true);

  const cookies = await browser.cookies(dash.url);
  const session = cookies.find((c) => c.name === 'jw_session');
  assert.ok(session, 'a session cookie');
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');
  assert.notEqual(session.value, ADMIN);

  served.push(await page.content());
  assert.ok(served.length >= 4, `saw ${served.length} HTML bodies`);
  for (const body of served) assert.ok(!body.includes(ADMIN), 'the admin token in served HTML');
  assert.ok(!dash.log().includes(ADMIN), 'the admin token in the dashboard log');
  assert.ok(!dash.log().includes(PRODUCER), 'a refused token in the dashboard log');

  await page.getByRole('button', { name: 'Log out' }).click();
  assert.equal(new URL(page.url()).pathname, '/login');
  const res = await fetch(`${dash.url}/`, { redirect: 'manual', headers: { cookie: `jw_session=${session.value}` } });
  assert.equal(res.status, 303, 'the old session is gone after logout');
  await page.close();
});

test('a token that may administer other queues only sees PERMISSION_DENIED on this one', async () => {
  const page = await browser.newPage();
  await logIn(page, OTHER_ADMIN);
  assert.equal(new URL(page.url()).pathname, '/');
  assert.equal(await page.locator('tr[data-queue="secure"]').count(), 0, 'ListQueues lists only its queues');
  const res = await page.goto(`${dash.url}/queues/secure`);
  assert.equal(res.status(), 403);
  assert.match(await page.getByRole('alert').innerText(), /PERMISSION_DENIED/);

  // Its own queues, with admin alone: a job's page (GetJob) and the rates (Subscribe).
  const { jobId } = await client.enqueue('other.mine', 'send', { n: 3 });
  const job = await page.goto(`${dash.url}/queues/other.mine/jobs/${jobId}`);
  assert.equal(job.status(), 200);
  assert.equal(await page.locator('dd[data-field="Id"]').innerText(), jobId);
  await page.goto(`${dash.url}/`);
  await page.locator('tr[data-queue="other.mine"] td[data-col="enqueued_rate"][data-count]').waitFor({ timeout: 10_000 });
  await page.close();
});

test('the workers page lists only the workers whose queues the token may all administer', async () => {
  const worker = (workerId, queues) => {
    const w = new Worker({ address: stack.address, token: WORKER, queues, workerId, logger: null });
    w.register('t', async () => ({}));
    return w;
  };
  const workers = [worker('other-worker', ['other.jobs']), worker('secure-worker', ['secure']), worker('mixed-worker', ['other.jobs', 'secure'])];
  const runs = workers.map((w) => w.run());
  const page = await browser.newPage();
  const ids = () => page.locator('table.workers tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.worker).sort());
  try {
    await browser.clearCookies(); // log out of the tests before
    await logIn(page, ADMIN);
    await waitFor(async () => {
      await page.goto(`${dash.url}/workers`);
      return (await ids()).length === 3;
    }, { timeoutMs: 8000, intervalMs: 250, what: 'three workers listed for the admin of every queue' });
    assert.deepEqual(await ids(), ['mixed-worker', 'other-worker', 'secure-worker']);
    await page.getByRole('button', { name: 'Log out' }).click();
    await logIn(page, OTHER_ADMIN);
    await page.goto(`${dash.url}/workers`);
    assert.deepEqual(await ids(), ['other-worker'], 'a worker on a queue the token may not administer is left out');
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.allSettled(runs);
    await page.close();
  }
});

test('events and actions need a login', async () => {
  const { cookie, post } = await formSession(dash.url, '/login');
  const before = await stubs.stats('secure');
  for (const stream of ['/events', '/queues/secure/watch/events', '/queues/secure/jobs/some-job/events']) {
    const res = await fetch(`${dash.url}${stream}`, { headers: { cookie } });
    assert.equal(res.status, 401, stream);
  }
  for (const [path, fields] of [
    ['/queues/secure/resume', {}],
    ['/queues/secure/enqueue', { type: 'sneaked' }],
    ['/create-queue', { queue: 'sneaked' }],
    ['/schedules', { name: 'sneaked', queue: 'secure', type: 't', every_ms: '60000' }],
  ]) {
    assert.equal((await post(path, fields)).status, 401, path);
  }
  const s = await stubs.stats('secure');
  assert.equal(s.paused, true);
  assert.equal(s.pending_due + s.pending_scheduled, before.pending_due + before.pending_scheduled, 'nothing enqueued');
  assert.ok(!(await stubs.listQueues()).some((q) => q.queue === 'sneaked'));
  assert.ok(!(await stubs.listSchedules()).some((x) => x.schedule.name === 'sneaked'));
});

test('replicas given the same --session_key_file share sessions; logout replaces the cookie; another key knows none', async () => {
  const keyFile = path.join(dir, 'session.key');
  const otherKeyFile = path.join(dir, 'other-session.key');
  fs.writeFileSync(keyFile, crypto.randomBytes(48));
  fs.writeFileSync(otherKeyFile, crypto.randomBytes(48));
  const [one, two, stranger] = await Promise.all([
    startDashboard(stack.address, ['--require_login', `--session_key_file=${keyFile}`]),
    startDashboard(stack.address, ['--require_login', `--session_key_file=${keyFile}`]),
    startDashboard(stack.address, ['--require_login', `--session_key_file=${otherKeyFile}`]),
  ]);
  try {
    await client.enqueue('shared-sessions', 'send', {});
    const first = await formSession(one.url, '/login');
    const login = await first.post('/login', { token: ADMIN });
    assert.equal(login.status, 303);
    const cookie = login.headers.get('set-cookie').split(';')[0];
    assert.match(cookie, /^jw_session=s1\./);
    assert.ok(!cookie.includes(ADMIN), 'the token is not in the cookie as it is');

    // The other replica knows the session: its page, then an action with its CSRF token.
    const page = await fetch(`${two.url}/queues/shared-sessions`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(page.status, 200);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())[1];
    const pause = await fetch(`${two.url}/queues/shared-sessions/pause`, {
      method: 'POST', redirect: 'manual', body: new URLSearchParams({ csrf }),
      headers: { cookie, origin: two.url, 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(pause.status, 200);
    assert.equal((await stubs.stats('shared-sessions')).paused, true);

    // A replica with another key does not.
    const elsewhere = await fetch(`${stranger.url}/`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(elsewhere.status, 303);
    assert.equal(elsewhere.headers.get('location'), '/login');

    // Logging out on one replica replaces the browser's cookie with one no replica logs in with.
    const out = await fetch(`${one.url}/logout`, {
      method: 'POST', redirect: 'manual', body: new URLSearchParams({ csrf }),
      headers: { cookie, origin: one.url, 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(out.status, 303);
    const after = out.headers.get('set-cookie').split(';')[0];
    assert.notEqual(after, cookie);
    for (const replica of [one, two]) {
      const res = await fetch(`${replica.url}/`, { headers: { cookie: after }, redirect: 'manual' });
      assert.equal(res.status, 303, replica.url);
      assert.equal(res.headers.get('location'), '/login');
    }
    for (const replica of [one, two, stranger]) assert.ok(!replica.log().includes(ADMIN), 'the token is in no log');
  } finally {
    await Promise.all([one.stop(), two.stop(), stranger.stop()]);
  }
});
