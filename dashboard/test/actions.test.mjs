// purge-dead's age field (src/actions.ts, built into dist/), without a
// broker: whole numbers of a known unit, or a refusal naming the field. The
// action itself against a real broker: dashboard.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseOlderThan, MAX_AGE_UNITS } from '../dist/actions.js';

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
