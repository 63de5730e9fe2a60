// SealedSessions (src/sealed_sessions.ts, built into dist/), without a
// server: a session survives the trip through its cookie to another
// instance with the same key (another replica), and no cookie sealed with
// another key, altered, cut or expired is a session. Two dashboards sharing
// a key file, end to end: login.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SealedSessions } from '../dist/sealed_sessions.js';

const KEY = Buffer.from('k'.repeat(40));
const HOUR = 3600_000;

function clock(start = Date.UTC(2026, 11, 5)) {
  const c = { t: start, now: () => c.t };
  return c;
}

test('a session, its CSRF token and its token come back from its cookie on another instance with the same key', () => {
  const c = clock();
  const a = new SealedSessions(KEY, 8 * HOUR, 24 * HOUR, 60_000, c.now);
  const b = new SealedSessions(Buffer.from(KEY), 8 * HOUR, 24 * HOUR, 60_000, c.now);
  const s = a.create('secret-token');
  const cookie = a.cookie(s);
  assert.match(cookie, /^s1\.[A-Za-z0-9_-]+$/);
  assert.ok(!cookie.includes('secret-token') && !Buffer.from(cookie.slice(3), 'base64url').toString('latin1').includes('secret-token'), 'the token is not readable in the cookie');
  const back = b.get(cookie);
  assert.deepEqual({ id: back.id, csrf: back.csrf, token: back.token }, { id: s.id, csrf: s.csrf, token: 'secret-token' });
  assert.equal(b.needsCookie(back), false);
  assert.notEqual(a.cookie(s), cookie, 'a fresh IV each time');
  const open = a.create();
  assert.equal(b.get(a.cookie(open)).token, undefined);
});

test('another key, an altered or cut cookie, or garbage is no session', () => {
  const a = new SealedSessions(KEY);
  const other = new SealedSessions(Buffer.from('x'.repeat(40)));
  const cookie = a.cookie(a.create('t'));
  assert.equal(other.get(cookie), undefined);
  const raw = Buffer.from(cookie.slice(3), 'base64url');
  for (const i of [0, 12, raw.length - 1]) {
    const bad = Buffer.from(raw);
    bad[i] ^= 1;
    assert.equal(a.get(`s1.${bad.toString('base64url')}`), undefined, `byte ${i} flipped`);
  }
  for (const bad of [cookie.slice(0, -4), 's1.', 's2.' + cookie.slice(3), '', undefined, 'plain-id', 's1.!!!']) {
    assert.equal(a.get(bad), undefined, String(bad));
  }
});

test('a session ends after its idle time or its maximum age; use refreshes it once a minute at most', () => {
  const c = clock();
  const a = new SealedSessions(KEY, 8 * HOUR, 24 * HOUR, 60_000, c.now);
  let cookie = a.cookie(a.create('t'));
  c.t += 30_000;
  let s = a.get(cookie);
  assert.equal(a.needsCookie(s), false, 'within a minute: the same cookie');
  c.t += 60_000;
  s = a.get(cookie);
  assert.equal(a.needsCookie(s), true, 'after a minute: sealed again with the time');
  cookie = a.cookie(s);
  c.t += 7 * HOUR;
  assert.ok(a.get(cookie), '7 h idle after the refresh: alive');
  c.t += 2 * HOUR;
  assert.equal(a.get(cookie), undefined, '9 h idle: ended');

  // In use all the time, it still ends 24 h after its creation.
  const d = clock();
  const b = new SealedSessions(KEY, 8 * HOUR, 24 * HOUR, 60_000, d.now);
  let kept = b.cookie(b.create('t'));
  for (let h = 0; h < 23; h++) {
    d.t += HOUR;
    const got = b.get(kept);
    assert.ok(got, `hour ${h + 1}`);
    kept = b.cookie(got);
  }
  d.t = Date.UTC(2026, 11, 5) + 24 * HOUR;
  assert.ok(b.get(kept), 'at 24 h exactly: alive');
  d.t += 1;
  assert.equal(b.get(kept), undefined, 'past 24 h');
});
