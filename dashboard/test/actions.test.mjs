// The action forms' fields (src/actions.ts, built into dist/), without a
// broker: purge-dead's age (whole numbers of a known unit) and update-queue's
// settings (whole numbers, only those given), or a refusal naming the field.
// The actions themselves against a real broker: dashboard.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseOlderThan, parseQueueSettings, MAX_AGE_UNITS } from '../dist/actions.js';

test('older_than in seconds, minutes, hours and days; nothing given means every dead job', () => {
  assert.equal(parseOlderThan(null, null), 0);
  assert.equal(parseOlderThan('', null), 0);
  assert.equal(parseOlderThan('3', 's'), 3000);
  assert.equal(parseOlderThan(' 90 ', 'min'), 5_400_000);
  assert.equal(parseOlderThan('2', 'h'), 7_200_000);
  assert.equal(parseOlderThan('7', 'd'), 604_800_000);
  assert.equal(parseOlderThan(String(MAX_AGE_UNITS), 'd'), MAX_AGE_UNITS * 86_400_000);
});

test('anything else is refused with the field named', () => {
  for (const v of ['0', '-1', '1.5', 'ten', '', '1e3', String(MAX_AGE_UNITS + 1), '9999999']) {
    const r = parseOlderThan(v, 'd');
    assert.equal(typeof r, 'object', `"${v}" accepted`);
    assert.match(r.error, /^older_than must be a whole number from 1 to 100000/, v);
  }
  for (const u of ['weeks', '', 'S', null]) {
    const r = parseOlderThan('3', u);
    assert.equal(typeof r, 'object', `unit "${u}" accepted`);
    assert.match(r.error, /^unit must be one of s, min, h, d/, String(u));
  }
});

test('update-queue sends only the settings given, as whole numbers; a rate limit needs its count and interval', () => {
  const form = (fields) => (name) => fields[name] ?? null;
  assert.deepEqual(parseQueueSettings(form({ max_active: '3', max_active_per_key: ' 0 ' })), { max_active: 3, max_active_per_key: 0 });
  assert.deepEqual(parseQueueSettings(form({ rate_count: '5', rate_interval_ms: '1000', partitions: '' })), { rate_limit: { count: 5, interval_ms: 1000, burst: 0 } });
  assert.deepEqual(parseQueueSettings(form({ rate_count: '0' })), { rate_limit: { count: 0, interval_ms: 0, burst: 0 } }, 'count 0 removes the limit');
  assert.deepEqual(parseQueueSettings(form({ key_rate_count: '3', key_rate_interval_ms: '60000', key_rate_burst: '1' })),
    { key_rate_limit: { count: 3, interval_ms: 60000, burst: 1 } });
  assert.deepEqual(parseQueueSettings(form({ key_rate_count: '0' })), { key_rate_limit: { count: 0, interval_ms: 0, burst: 0 } },
    'count 0 removes the limit per key');
  assert.deepEqual(parseQueueSettings(form({ default_job_timeout_ms: '-1', partitions: '4' })), { partitions: 4, default_job_timeout_ms: -1 });
  const refused = [
    [{}, /^Nothing to change/],
    [{ max_active: '' }, /^Nothing to change/],
    [{ max_active: 'three' }, /^max_active must be a whole number \(got "three"\)/],
    [{ partitions: '1.5' }, /^partitions must be a whole number/],
    [{ rate_interval_ms: '1000' }, /^rate_count is required/],
    [{ rate_count: '5' }, /^rate_interval_ms is required/],
  ];
  for (const [fields, message] of refused) {
    const r = parseQueueSettings(form(fields));
    assert.equal(typeof r.error, 'string', JSON.stringify(fields));
    assert.match(r.error, message, JSON.stringify(fields));
  }
});
