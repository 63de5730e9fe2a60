// A queue with 100,000 pending jobs, against a real broker and Redis: the
// queue page shows the count and its first page of 50 jobs, and following
// "Next page" or filtering by a type no job has stays one bounded read. "No
// full scan" is judged from Redis' own counters (INFO commandstats counts the
// commands the broker's scripts run too): a page that looked at every job
// would run at least 100,000 commands; these pages run a few hundred. The
// time each page took is reported (t.diagnostic), not asserted: the machine
// is shared, and the command count is what a full scan cannot hide.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startAll, formSession } from './helpers.mjs';

const QUEUE = 'big';
const JOBS = 100_000;
const BATCH = 1000;
// Commands Redis may run while one page loads: the page's own reads (about
// ten per job shown) plus what the broker's refreshers and the dashboard's
// poller do meanwhile. A scan of the queue would need at least JOBS.
const MAX_COMMANDS_PER_PAGE = 3000;

let all;
let session;

before(async () => {
  all = await startAll({ browser: false });
  const payload = { order: 1, note: 'x'.repeat(40) };
  for (let n = 0; n < JOBS; n += BATCH) {
    const jobs = Array.from({ length: BATCH }, () => ({ type: 'email', payload }));
    const results = await all.client.enqueueBatch(QUEUE, jobs, { timeoutMs: 30_000 });
    assert.equal(results.filter((r) => r.ok).length, BATCH, `batch at ${n}`);
  }
  session = await formSession(all.dash.url);
});

after(async () => {
  await all?.stop();
});

/** Redis' count of every command run so far (scripts' commands included). */
function redisCommands() {
  const info = execFileSync('redis-cli', ['-p', String(all.stack.redisPort), 'INFO', 'commandstats'], { encoding: 'utf8' });
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) calls += Number(m[1]);
  return calls;
}

/** GET `path` with the session's cookie: { text, commands, ms }. */
async function load(path) {
  const before = redisCommands();
  const start = performance.now();
  const res = await fetch(`${all.dash.url}${path}`, { headers: { cookie: session.cookie } });
  const text = await res.text();
  const ms = performance.now() - start;
  // The INFO call itself counts as one command; the difference is the page's.
  const commands = redisCommands() - before - 1;
  assert.equal(res.status, 200, text.slice(0, 500));
  return { text, commands, ms };
}

const jobLinks = (text) => [...text.matchAll(new RegExp(`<td><a href="/queues/${QUEUE}/jobs/([^"]+)">`, 'g'))].map((m) => m[1]);
const nextLink = (text) => /<a href="([^"]+)" rel="next">Next page<\/a>/.exec(text)?.[1]?.replaceAll('&amp;', '&');

test('the first page of 100,000 pending jobs: the count, 50 jobs and a next page, without a scan', async (t) => {
  const first = await load(`/queues/${QUEUE}?state=pending`);
  t.diagnostic(`first page: ${first.ms.toFixed(0)} ms, ${first.commands} Redis commands, ${first.text.length} bytes`);
  assert.match(first.text, new RegExp(`<span class="count" data-state="pending">${JOBS}</span>`));
  const ids = jobLinks(first.text);
  assert.equal(ids.length, 50);
  assert.equal(new Set(ids).size, 50);
  assert.ok(first.commands < MAX_COMMANDS_PER_PAGE, `the first page ran ${first.commands} Redis commands`);

  const next = nextLink(first.text);
  assert.ok(next, 'a Next page link');
  const second = await load(next);
  t.diagnostic(`second page: ${second.ms.toFixed(0)} ms, ${second.commands} Redis commands`);
  const more = jobLinks(second.text);
  assert.equal(more.length, 50);
  assert.deepEqual(more.filter((id) => ids.includes(id)), [], 'the second page repeats no job of the first');
  assert.ok(second.commands < MAX_COMMANDS_PER_PAGE, `the second page ran ${second.commands} Redis commands`);
});

test('a type filter no job matches looks at a bounded stretch, not the whole queue', async (t) => {
  const page = await load(`/queues/${QUEUE}?state=pending&type=sms`);
  t.diagnostic(`filtered page: ${page.ms.toFixed(0)} ms, ${page.commands} Redis commands`);
  assert.equal(jobLinks(page.text).length, 0);
  assert.match(page.text, /No pending jobs of type sms on this page\./);
  assert.ok(nextLink(page.text), 'the page offers to look further');
  assert.ok(page.commands < MAX_COMMANDS_PER_PAGE, `the filtered page ran ${page.commands} Redis commands`);
});
