// Pages rendered from the broker's answers (src/pages.ts and
// src/workers_page.ts, built into dist/), without a broker: the Workers page
// (rows, weights, types, the replicas and their truncated flag, the empty and
// error states, escaping), the watch page's event rows, a job page's live
// stream, and the schedule form filled in for an edit. The same pages against
// a real broker and real workers: dashboard.test.mjs, replicas.test.mjs,
// create_and_follow.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventRows, jobPage, schedulesPage, streamEnd } from '../dist/pages.js';
import { workersPage } from '../dist/workers_page.js';

const ctx = { csrf: 'c', readOnly: false, loggedIn: false };
const now = Date.UTC(2026, 0, 2, 3, 4, 5);
const stream = (over) => ({
  broker: 'broker-0:50051', worker_id: 'w1', queues: ['high', 'low'], types: [], weights: [3, 1],
  max_in_flight: 4, in_flight: 1, opened_at_ms: now - 300_000, peer: 'ipv4:10.0.0.7:51234', ...over,
});
const report = (over) => ({ broker: 'broker-0:50051', reported_at_ms: now - 2_000, expires_at_ms: now + 28_000, streams: 2, truncated: false, ...over });

test('one row per stream with its queues and weights, types, in flight, since and peer; the replicas below', () => {
  const page = workersPage(ctx, { now, workers: {
    streams: [stream(), stream({ worker_id: 'w2', queues: ['solo'], weights: [], types: ['email', 'sms'], in_flight: 0, max_in_flight: 1 })],
    brokers: [report()],
  } }).text;
  assert.match(page, /<a href="\/workers">Workers<\/a>/, 'in the navigation');
  assert.match(page, /<caption id="workers-caption" class="sr-only">/);
  assert.match(page, /<th scope="row">w1<\/th>/);
  assert.match(page, /<td data-col="queues"><span class="nowrap"><a href="\/queues\/high">high<\/a> ×3<\/span>, <span class="nowrap"><a href="\/queues\/low">low<\/a> ×1<\/span><\/td>/);
  assert.match(page, /<td data-col="types">all<\/td>/);
  assert.match(page, /<td data-col="in_flight" class="nowrap">1 \/ 4<\/td>/);
  assert.match(page, /<td data-col="since"><time datetime="2026-01-02T02:59:05.000Z">2026-01-02T02:59:05Z<\/time> <span class="muted">\(5 min ago\)<\/span><\/td>/);
  assert.match(page, /<td data-col="peer">ipv4:10.0.0.7:51234<\/td>/);
  assert.match(page, /<td data-col="queues"><span class="nowrap"><a href="\/queues\/solo">solo<\/a><\/span><\/td>/);
  assert.match(page, /<td data-col="types">email, sms<\/td>/);
  assert.match(page, /<td data-col="in_flight" class="nowrap">0 \/ 1<\/td>/);
  assert.match(page, /<li data-broker="broker-0:50051"><strong>broker-0:50051<\/strong>: <span data-col="streams">2 streams<\/span>, reported <time[^>]*>2026-01-02T03:04:03Z<\/time> <span class="muted">\(2 s ago\)<\/span><\/li>/);
  assert.doesNotMatch(page, /truncated/);
  assert.doesNotMatch(page, /No worker is connected/);
});

test('no worker, a truncated replica, and values holding markup', () => {
  const empty = workersPage(ctx, { now, workers: { streams: [], brokers: [report({ streams: 0 })] } }).text;
  assert.match(empty, /No worker is connected\./);
  assert.doesNotMatch(empty, /<table/);
  assert.match(empty, /0 streams/);
  const none = workersPage(ctx, { now, workers: { streams: [], brokers: [] } }).text;
  assert.match(none, /No replica is reporting\./);
  const page = workersPage(ctx, { now, workers: {
    streams: [stream({ worker_id: '<b id="x">w</b>', queues: ['q'], weights: [], peer: '"><script>' })],
    brokers: [report({ broker: '<i>b</i>', streams: 1200, truncated: true })],
  } }).text;
  assert.match(page, /<th scope="row">&lt;b id=&quot;x&quot;&gt;w&lt;\/b&gt;<\/th>/);
  assert.match(page, /&quot;&gt;&lt;script&gt;/);
  assert.doesNotMatch(page, /<script>|<b id|<i>b/);
  assert.match(page, /1200 streams<\/span>, reported .* <span class="badge truncated">truncated<\/span><\/li>/);
  assert.match(page, /the table lists its first 1,000/);
});

test('PERMISSION_DENIED, UNAVAILABLE and UNIMPLEMENTED are explained in an alert', () => {
  const err = (code, details) => workersPage(ctx, { now, error: { code, details } }).text;
  assert.match(err(7, 'no admin permission'), /role="alert"><strong>Your token may not list the workers \(PERMISSION_DENIED\)[^<]*<\/strong><p>no admin permission<\/p>/);
  assert.match(err(14, 'redis down'), /role="alert"><strong>The broker or its Redis cannot be reached right now \(UNAVAILABLE\)/);
  assert.match(err(12, ''), /role="alert"><strong>This broker cannot list workers \(UNIMPLEMENTED\)/);
  assert.doesNotMatch(err(14, ''), /<table|No worker/);
});

test('event rows: newest first, kind and details as text, a gap marked', () => {
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);
  const rows = eventRows('q<1>', [
    { kind: 'EVENT_KIND_ENQUEUED', queue: 'q<1>', job_id: 'j1', at_ms: at, type: '<b>t</b>', attempts: 0 },
    { kind: 'EVENT_KIND_LEASE_EXPIRED', queue: 'q<1>', job_id: 'j"2', at_ms: at + 1, type: 't', attempts: 1, error: '<img src=x>' },
    { kind: 'EVENT_KIND_PROGRESS', queue: 'q<1>', job_id: 'j3', at_ms: at + 2, type: 't', attempts: 1, progress_percent: 40 },
  ], true).text;
  const kinds = [...rows.matchAll(/data-kind="([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual(kinds, ['progress', 'lease expired', 'enqueued']);
  assert.match(rows, /<td class="error">40%<\/td>/);
  assert.match(rows, /<td class="error">&lt;img src=x&gt;<\/td>/);
  assert.match(rows, /<td>&lt;b&gt;t&lt;\/b&gt;<\/td>/);
  assert.match(rows, /<a href="\/queues\/q%3C1%3E\/jobs\/j%222">j&quot;2<\/a>/);
  assert.match(rows, /<tr class="missed"><td colspan="6">Events may have been missed here/);
  assert.doesNotMatch(eventRows('q', [], false).text, /missed/);
});

/** A Job as the broker answers it, with `over` replacing fields. */
const baseJob = (over) => ({
  id: 'j1', queue: 'q', type: 't', payload: Buffer.from('{}'), priority: 0, state: 'JOB_STATE_PENDING', attempts: 0, max_attempts: 3,
  available_at_ms: 0, lease_expires_at_ms: 0, result: Buffer.alloc(0), error: '', idempotency_key: '', created_at_ms: 0,
  finished_at_ms: 0, backoff_base_ms: 0, backoff_max_ms: 0, worker_id: '', timeout_ms: 0, run_deadline_ms: 0,
  cancel_requested_at_ms: 0, progress_data: Buffer.alloc(0), headers: {}, errors: [], ...over,
});

test("a job page streams the job's changes until it finishes; a finished one does not", () => {
  const job = (state) => baseJob({ state });
  for (const state of ['JOB_STATE_PENDING', 'JOB_STATE_ACTIVE']) {
    const page = jobPage(ctx, job(state)).text;
    assert.match(page, /<div id="job-live" data-events="\/queues\/q\/jobs\/j1\/events" data-event="job">/, state);
    assert.match(page, /id="live-status"/, state);
  }
  for (const state of ['JOB_STATE_COMPLETED', 'JOB_STATE_DEAD']) {
    const page = jobPage(ctx, job(state)).text;
    assert.doesNotMatch(page, /data-events|live-status/, state);
  }
  assert.equal(streamEnd(0, '', 'ended: the job finished').text, 'ended: the job finished');
  assert.match(streamEnd(7, 'no <admin>', 'x').text, /^stopped\. Your token may not do this \(PERMISSION_DENIED\).* no &lt;admin&gt;$/);
});

test('the schedule form is filled in from the schedule edited; a payload that is not text is said so', () => {
  const info = (over) => ({
    schedule: {
      name: 'nightly', cron: '0 3 * * *', interval_ms: 0, time_zone: 'Europe/Berlin', jitter_ms: 500,
      start_at_ms: Date.UTC(2027, 0, 2, 3, 4), end_at_ms: 0, catch_up: 'CATCH_UP_ONCE',
      job: { queue: 'reports', type: 'build', payload: Buffer.from('plain "words"'), priority: 2, max_attempts: 0, timeout_ms: 0 },
      ...over,
    },
    next_run_at_ms: 0, last_run_at_ms: 0, last_job_id: '',
  });
  const page = schedulesPage(ctx, [info()], info()).text;
  assert.match(page, /<h2 id="schedule-form" tabindex="-1">Edit schedule nightly<\/h2>/);
  assert.match(page, /id="ps-cron" name="cron" value="0 3 \* \* \*"/);
  assert.match(page, /id="ps-time_zone" name="time_zone" value="Europe\/Berlin"/);
  assert.match(page, /id="ps-jitter_ms" name="jitter_ms" inputmode="numeric" pattern="-\?\[0-9\]\*" value="500"/);
  assert.match(page, /id="ps-start_at" name="start_at" type="datetime-local" value="2027-01-02T03:04"/);
  assert.match(page, /id="ps-max_attempts" name="max_attempts" inputmode="numeric" pattern="-\?\[0-9\]\*" value=""/);
  assert.match(page, />plain &quot;words&quot;<\/textarea>/);
  assert.match(page, /<option value="text" selected>/, 'not JSON: sent as text');
  assert.match(page, /<option value="once" selected>/);
  assert.match(page, /<a href="\/schedules\?edit=nightly#schedule-form">Edit nightly<\/a>/);
  const binary = schedulesPage(ctx, [], info({ job: { queue: 'q', type: 't', payload: Buffer.from([0xff, 0x00]), priority: 0, max_attempts: 0, timeout_ms: 0 } })).text;
  assert.match(binary, /Its payload is not UTF-8 text/);
  assert.match(binary, /<\/textarea>/);
  const fresh = schedulesPage(ctx, [], undefined).text;
  assert.match(fresh, /New schedule<\/h2>/);
  assert.match(fresh, /<button type="submit">Create schedule<\/button>/);
  assert.doesNotMatch(schedulesPage({ ...ctx, readOnly: true }, [info()], undefined).text, /<form/);
});

test("a job page lists the error history oldest first, as text; none when the job never failed", () => {
  const job = (errors) => baseJob({ state: 'JOB_STATE_DEAD', attempts: 2, max_attempts: 2, error: 'second <b>', errors });
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);
  const page = jobPage(ctx, job([{ attempt: 1, at_ms: at, error: 'first' }, { attempt: 2, at_ms: at + 1000, error: 'second <b>' }])).text;
  const rows = [...page.matchAll(/<tr><td>([^<]*)<\/td><td><time[^>]*>([^<]*)<\/time><\/td><td class="error">([^<]*)<\/td><\/tr>/g)].map((m) => m.slice(1));
  assert.deepEqual(rows, [['1', '2026-01-02T03:04:05Z', 'first'], ['2', '2026-01-02T03:04:06Z', 'second &lt;b&gt;']]);
  assert.match(page, /<h2 id="errors">Error history<\/h2>/);
  assert.doesNotMatch(jobPage(ctx, job([])).text, /Error history/);
  assert.match(jobPage(ctx, job([{ attempt: 0, at_ms: at, error: 'cancelled' }])).text, /<tr><td>–<\/td>/, 'a cancel before any run');
});

test("a job page links its parents, says how many are left, and shows the results it holds", () => {
  const page = jobPage(ctx, baseJob({
    id: '000000000003', depends_on: ['000000000001', '000000000002'], dependencies_left: 1,
    dependency_results: { '000000000001': Buffer.from('{"rows":7}') },
  })).text;
  assert.match(page, /<h2 id="dependencies">Dependencies<\/h2>/);
  assert.match(page, /Waiting for 1 of 2 parents; a dead parent makes this job dead\./);
  assert.match(page, /<li><a href="\/queues\/q\/jobs\/000000000001">000000000001<\/a><\/li><li><a href="\/queues\/q\/jobs\/000000000002">000000000002<\/a><\/li>/);
  assert.match(page, /<h2>Result of 000000000001 <span class="muted">\(JSON\)<\/span><\/h2>\s*<pre class="bytes" tabindex="0">\{\n  &quot;rows&quot;: 7\n\}<\/pre>/);
  const anyway = jobPage(ctx, baseJob({ depends_on: ['000000000001'], dependencies_left: 0, run_after_failed_dependency: true })).text;
  assert.match(anyway, /No parent left to wait for; a dead parent counts as done\./);
  assert.doesNotMatch(jobPage(ctx, baseJob({})).text, /Dependencies/);
});
