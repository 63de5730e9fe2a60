// How bytes, times, durations, limits and a worker's claim are shown (src/format.ts, built into dist/):
// JSON pretty-printed, anything else in hex, both cut with the rest counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { showAgo, showBytes, showDuration, showLimits, showQueueWeights, showRate, showTime, showTypes, MAX_SHOWN_BYTES } from '../dist/format.js';

test('UTF-8 JSON is pretty-printed; other bytes are hex; nothing is empty', () => {
  assert.deepEqual(showBytes(Buffer.from('{"a":[1,2]}')), { kind: 'json', text: '{\n  "a": [\n    1,\n    2\n  ]\n}', omitted: 0 });
  assert.deepEqual(showBytes(Buffer.from([0xde, 0xad, 0xbe, 0xef])), { kind: 'hex', text: 'de ad be ef', omitted: 0 });
  assert.equal(showBytes(Buffer.from('plain text')).kind, 'hex');
  assert.equal(showBytes(Buffer.alloc(0)).kind, 'empty');
  assert.equal(showBytes(undefined).kind, 'empty');
});

test('large values are cut and the rest counted', () => {
  const big = Buffer.from(JSON.stringify({ s: 'x'.repeat(100_000) }));
  const j = showBytes(big);
  assert.equal(j.kind, 'json');
  assert.equal(j.text.length, MAX_SHOWN_BYTES);
  assert.ok(j.omitted > 80_000);
  const bin = showBytes(Buffer.alloc(100_000, 0xff));
  assert.equal(bin.kind, 'hex');
  assert.equal(bin.omitted, 100_000 - MAX_SHOWN_BYTES / 4);
  assert.equal(bin.text.split('\n')[0], 'ff '.repeat(15) + 'ff');
});

test('times and durations', () => {
  assert.equal(showTime(0), '');
  assert.equal(showTime(Date.UTC(2026, 0, 2, 3, 4, 5)), '2026-01-02T03:04:05Z');
  assert.equal(showDuration(850), '850 ms');
  assert.equal(showDuration(12_000), '12 s');
  assert.equal(showDuration(3 * 60_000), '3 min');
  assert.equal(showDuration(5 * 3600_000), '5 h');
  assert.equal(showDuration(3 * 86400_000), '3 d');
});

test('showLimits states a rate exactly and says when there is no limit', () => {
  const cases = [
    [null, 0, 'no rate limit; no limit on active jobs'],
    [{ count: 5, interval_ms: 1000, burst: 5 }, 0, 'at most 5 jobs per 1 s; no limit on active jobs'],
    [{ count: 1, interval_ms: 250, burst: 1 }, 0, 'at most 1 job per 250 ms; no limit on active jobs'],
    [{ count: 5, interval_ms: 1500, burst: 10 }, 3, 'at most 5 jobs per 1500 ms (bursts of 10); at most 3 active jobs'],
    [{ count: 100, interval_ms: 60000, burst: 0 }, 1, 'at most 100 jobs per 60 s; at most 1 active job'],
    [null, 0, 'no rate limit; no limit on active jobs; at most 2 active jobs per concurrency key', 2],
    [null, 4, 'no rate limit; at most 4 active jobs; at most 1 active job per concurrency key', 1],
    [null, 0, 'no rate limit; no limit on active jobs; at most 2 jobs per 1 s (bursts of 4) per concurrency key',
      0, { count: 2, interval_ms: 1000, burst: 4 }],
  ];
  for (const [rate, max, want, perKey, keyRate] of cases) {
    assert.equal(showLimits(rate, max, perKey, keyRate), want);
  }
});

test("a worker's queues with their weights, its types, and how long ago", () => {
  assert.deepEqual(showQueueWeights(['high', 'low'], [3, 1]), ['high ×3', 'low ×1']);
  assert.equal(showQueueWeights(['high', 'low'], [3, 1]).join(', '), 'high ×3, low ×1');
  assert.deepEqual(showQueueWeights(['high', 'low'], []), ['high', 'low'], 'strict order: names alone');
  assert.deepEqual(showQueueWeights(['a', 'b'], [2]), ['a', 'b'], 'not one weight per queue: names alone');
  assert.deepEqual(showQueueWeights([], []), []);
  assert.equal(showTypes([]), 'all');
  assert.equal(showTypes(undefined), 'all');
  assert.equal(showTypes(['email', 'sms']), 'email, sms');
  const now = Date.UTC(2026, 0, 2, 3, 4, 5);
  assert.equal(showAgo(now - 12_000, now), '12 s ago');
  assert.equal(showAgo(now - 3 * 3600_000, now), '3 h ago');
  assert.equal(showAgo(now + 400, now), '0 ms ago', "a replica's clock ahead of ours");
  assert.equal(showAgo(0, now), '');
});

test('rates: jobs over a window in seconds, one decimal below 10 a second', () => {
  assert.equal(showRate(0, 60), '0/s');
  assert.equal(showRate(1, 60), '<0.1/s');
  assert.equal(showRate(3, 60), '0.1/s');
  assert.equal(showRate(12, 60), '0.2/s');
  assert.equal(showRate(5, 1), '5.0/s');
  assert.equal(showRate(599, 60), '10/s');
  assert.equal(showRate(7200, 60), '120/s');
  assert.equal(showRate(4, 0), '4.0/s', 'a window under a second counts as one');
});
