// MinuteSeries (src/minute_series.ts, built into dist/): values merged per
// minute (summed, or the highest kept), an hour kept, gaps filled as asked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HISTORY_MINUTES, MinuteSeries, minuteOf } from '../dist/minute_series.js';

const MIN = 60_000;
const t0 = Date.UTC(2026, 11, 5, 10, 0, 0);

test('a minute sums or keeps the highest; a gap is 0 or the minute before', () => {
  const counts = new MinuteSeries((a, b) => a + b);
  const depth = new MinuteSeries(Math.max);
  for (const [at, v] of [[t0, 3], [t0 + 10_000, 4], [t0 + 2 * MIN, 1]]) {
    counts.add(at, v);
    depth.add(at, v);
  }
  assert.deepEqual(counts.span(), { first: minuteOf(t0), last: minuteOf(t0) + 2 });
  assert.deepEqual(counts.range(minuteOf(t0), minuteOf(t0) + 2, () => 0), [7, 0, 1]);
  assert.deepEqual(depth.range(minuteOf(t0), minuteOf(t0) + 2, (before) => before ?? 0), [4, 4, 1]);
  assert.deepEqual(depth.range(minuteOf(t0) - 1, minuteOf(t0), (before) => before ?? 0), [0, 4], 'nothing before: 0');
  assert.equal(new MinuteSeries(Math.max).span(), undefined);
});

test('minutes older than the history are forgotten', () => {
  const s = new MinuteSeries((a, b) => a + b);
  s.add(t0, 1);
  s.add(t0 + (HISTORY_MINUTES - 1) * MIN, 1);
  assert.equal(s.span().first, minuteOf(t0));
  s.prune(t0 + HISTORY_MINUTES * MIN);
  assert.deepEqual(s.span(), { first: minuteOf(t0) + HISTORY_MINUTES - 1, last: minuteOf(t0) + HISTORY_MINUTES - 1 });
  s.add(t0 + 3 * HISTORY_MINUTES * MIN, 5);
  assert.deepEqual(s.span(), { first: minuteOf(t0) + 3 * HISTORY_MINUTES, last: minuteOf(t0) + 3 * HISTORY_MINUTES });
});
