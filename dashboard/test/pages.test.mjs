// The Workers page rendered from ListWorkers answers (src/pages.ts, built
// into dist/), without a broker: rows, weights, types, the replicas and
// their truncated flag, the empty and error states, and escaping. The same
// page against a real broker and real workers: dashboard.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workersPage } from '../dist/pages.js';

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
