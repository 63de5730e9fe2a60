// A dashboard behind an Ingress that ends TLS (--public_origin=https://...),
// against a real redis-server and broker: a POST runs only when it comes
// from the public origin (not the listener's own, not http://), and the
// session cookie is Secure although the listener speaks plain HTTP.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startAll, formSession, seed } from './helpers.mjs';

describe('behind an Ingress that ends TLS (--public_origin)', () => {
  let all, client, stubs, dash;
  before(async () => {
    all = await startAll({ dashArgs: ['--public_origin=https://jobwire.example.com'], browser: false });
    ({ client, stubs, dash } = all);
  });
  after(async () => { await all?.stop(); });

  test('POSTs must come from the public origin, and the cookie is Secure', async () => {
    await seed(client, 'proxied', { due: 1 });
    const first = await fetch(`${dash.url}/queues/proxied`);
    assert.match(first.headers.get('set-cookie'), /; Secure/, 'an https public origin marks the cookie Secure');
    const { cookie, csrf } = await formSession(dash.url, '/queues/proxied');
    const post = (origin) =>
      fetch(`${dash.url}/queues/proxied/pause`, {
        method: 'POST', redirect: 'manual', body: new URLSearchParams({ csrf }),
        headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
      });
    // The listener's own origin (plain http, as the Ingress reaches it) is not the browser's.
    assert.equal((await post(dash.url)).status, 403, 'the listener origin');
    assert.equal((await post('http://jobwire.example.com')).status, 403, 'http instead of https');
    assert.equal((await stubs.stats('proxied')).paused, false);
    assert.equal((await post('https://jobwire.example.com')).status, 200, 'the public origin');
    assert.equal((await stubs.stats('proxied')).paused, true);
  });
});
