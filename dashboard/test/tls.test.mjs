// The optional TLS flags: the dashboard serves HTTPS with --tls_cert and
// --tls_key (and its session cookie is then Secure), and reaches a broker
// that speaks TLS with --broker_ca. The certificates are made here with
// openssl (a self-signed CA-less certificate for 127.0.0.1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { startStack, startDashboard, Client } from './helpers.mjs';
import { makePki } from '../../client/node/test/harness.mjs';

let dir, cert, key, stack, dash;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jw-dash-tls-'));
  cert = path.join(dir, 'cert.pem');
  key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  stack = await startStack({ brokerArgs: ['--metrics_listen=', `--tls_cert=${cert}`, `--tls_key=${key}`] });
  dash = await startDashboard(stack.address, [`--tls_cert=${cert}`, `--tls_key=${key}`, `--broker_ca=${cert}`]);
});

after(async () => {
  await dash?.stop();
  await stack?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function get(url) {
  return new Promise((resolve, reject) => {
    https.get(url, { ca: fs.readFileSync(cert), servername: '' }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    }).on('error', reject);
  });
}

test('HTTPS to the dashboard, TLS to the broker, and a Secure session cookie', async () => {
  const client = new Client({ address: stack.address, timeoutMs: 5000, tlsRootCa: cert });
  try {
    await client.enqueue('tls', 'send', { n: 1 });
  } finally {
    client.close();
  }
  assert.equal((await get(`${dash.url}/healthz`)).status, 200);
  const page = await get(`${dash.url}/`);
  assert.equal(page.status, 200);
  assert.match(page.body, /data-queue="tls"/);
  assert.match(page.headers['set-cookie'][0], /; HttpOnly; SameSite=Strict; Secure$/);
});

test('mutual TLS: with --broker_cert and --broker_key the dashboard reaches a broker that requires client certificates', async () => {
  const pki = makePki();
  let mstack, withCert, without;
  try {
    mstack = await startStack({
      brokerArgs: ['--metrics_listen=', `--tls_cert=${pki.path('server.pem')}`, `--tls_key=${pki.path('server.key')}`, `--tls_client_ca=${pki.path('ca.pem')}`],
    });
    const client = new Client({ address: mstack.address, timeoutMs: 5000, tlsRootCa: pki.path('ca.pem'), tlsClientCert: pki.path('client.pem'), tlsClientKey: pki.path('client.key') });
    try {
      await client.enqueue('mtls', 'send', { n: 1 });
    } finally {
      client.close();
    }
    withCert = await startDashboard(mstack.address, [`--broker_ca=${pki.path('ca.pem')}`, `--broker_cert=${pki.path('client.pem')}`, `--broker_key=${pki.path('client.key')}`]);
    const ok = await fetch(`${withCert.url}/`);
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /data-queue="mtls"/);
    // Without a client certificate the broker ends the handshake: no queue shown.
    without = await startDashboard(mstack.address, [`--broker_ca=${pki.path('ca.pem')}`]);
    const refused = await fetch(`${without.url}/`);
    assert.doesNotMatch(await refused.text(), /data-queue="mtls"/);
  } finally {
    await withCert?.stop();
    await without?.stop();
    await mstack?.stop();
    pki.cleanup();
  }
});
