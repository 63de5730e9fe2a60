// The optional TLS flags: the dashboard serves HTTPS with --tls_cert and
// --tls_key (and its session cookie is then Secure), and reaches a broker
// that speaks TLS with --broker_ca. Rotated files are used without a
// restart (every --reload_interval_ms, and on SIGHUP); a key that does not
// match its certificate is refused. The certificates are made here with
// openssl (self-signed CA-less certificates for 127.0.0.1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as crypto from 'node:crypto';
import * as https from 'node:https';
import * as tls from 'node:tls';
import * as os from 'node:os';
import * as path from 'node:path';
import { startStack, startDashboard, waitFor, sleep, Client } from './helpers.mjs';
import { makePki } from '../../client/node/test/harness.mjs';

let dir, cert, key, stack, dash;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jw-dash-tls-'));
  cert = path.join(dir, 'cert.pem');
  key = path.join(dir, 'key.pem');
  selfSigned(cert, key);
  stack = await startStack({ brokerArgs: ['--metrics_listen=', `--tls_cert=${cert}`, `--tls_key=${key}`] });
  dash = await startDashboard(stack.address, [`--tls_cert=${cert}`, `--tls_key=${key}`, `--broker_ca=${cert}`]);
});

after(async () => {
  await dash?.stop();
  await stack?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A self-signed certificate for 127.0.0.1 and its key, written to the two paths. */
function selfSigned(certPath, keyPath) {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyPath, '-out', certPath], { stdio: 'ignore' });
}

/** Writes `from` over `to` as a rotation does: a temporary name, then a rename. */
function rotate(from, to) {
  fs.copyFileSync(from, `${to}.tmp`);
  fs.renameSync(`${to}.tmp`, to);
}

const fingerprint = (certPath) => new crypto.X509Certificate(fs.readFileSync(certPath)).fingerprint256;

/** The fingerprint of the certificate a new TLS connection to the port is served. */
function servedCert(port) {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.on('error', reject);
  });
}

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

test('a rotated certificate is served to new connections without a restart; a key of another certificate is refused and the one in use kept; SIGHUP reloads at once', async () => {
  const a = { cert, key };
  const b = { cert: path.join(dir, 'b-cert.pem'), key: path.join(dir, 'b-key.pem') };
  selfSigned(b.cert, b.key);
  const live = { cert: path.join(dir, 'live-cert.pem'), key: path.join(dir, 'live-key.pem') };
  rotate(a.cert, live.cert);
  rotate(a.key, live.key);
  let polling, onSignal;
  try {
    polling = await startDashboard(stack.address, [`--tls_cert=${live.cert}`, `--tls_key=${live.key}`, `--broker_ca=${cert}`, '--reload_interval_ms=200']);
    assert.equal(await servedCert(polling.port), fingerprint(a.cert));
    rotate(b.key, live.key);
    rotate(b.cert, live.cert);
    await waitFor(async () => (await servedCert(polling.port)) === fingerprint(b.cert), { timeoutMs: 5000, intervalMs: 100, what: 'certificate b served' });
    assert.match(polling.log(), /"msg":"tls certificate reloaded","subject":"CN=127.0.0.1","not_after":"[^"]+"/);

    // Key a with certificate b: refused, b stays in use, one warning for many checks.
    rotate(a.key, live.key);
    await sleep(1200);
    assert.equal(await servedCert(polling.port), fingerprint(b.cert));
    const warnings = polling.log().match(/"msg":"tls certificate reload failed, keeping the one in use","level":"warning","reason":"--tls_key is not the key of --tls_cert"/g) ?? [];
    assert.equal(warnings.length, 1, polling.log());
    assert.doesNotMatch(polling.log(), /PRIVATE KEY/);

    // Never polled: only SIGHUP reloads.
    const live2 = { cert: path.join(dir, 'live2-cert.pem'), key: path.join(dir, 'live2-key.pem') };
    rotate(b.cert, live2.cert);
    rotate(b.key, live2.key);
    onSignal = await startDashboard(stack.address, [`--tls_cert=${live2.cert}`, `--tls_key=${live2.key}`, `--broker_ca=${cert}`, '--reload_interval_ms=0']);
    assert.equal(await servedCert(onSignal.port), fingerprint(b.cert));
    rotate(a.key, live2.key);
    rotate(a.cert, live2.cert);
    await sleep(500);
    assert.equal(await servedCert(onSignal.port), fingerprint(b.cert), 'no reload without a signal');
    onSignal.signal('SIGHUP');
    await waitFor(async () => (await servedCert(onSignal.port)) === fingerprint(a.cert), { timeoutMs: 5000, intervalMs: 100, what: 'certificate a served after SIGHUP' });
    assert.match(onSignal.log(), /"msg":"reload requested"/);
  } finally {
    await polling?.stop();
    await onSignal?.stop();
  }
});

test("a rotated broker CA is used for new calls without a restart", async () => {
  const pki = makePki();
  let tlsStack, dash2;
  const ca = path.join(dir, 'broker-ca.pem');
  try {
    tlsStack = await startStack({ brokerArgs: ['--metrics_listen=', `--tls_cert=${pki.path('server.pem')}`, `--tls_key=${pki.path('server.key')}`] });
    const client = new Client({ address: tlsStack.address, timeoutMs: 5000, tlsRootCa: pki.path('ca.pem') });
    try {
      await client.enqueue('rotated', 'send', { n: 1 });
    } finally {
      client.close();
    }
    rotate(cert, ca); // not the CA of the broker's certificate
    dash2 = await startDashboard(tlsStack.address, [`--broker_ca=${ca}`, '--reload_interval_ms=200']);
    assert.equal((await fetch(`${dash2.url}/queues/rotated`)).status, 503, 'the wrong CA: the broker cannot be reached');
    rotate(pki.path('ca.pem'), ca);
    await waitFor(async () => (await fetch(`${dash2.url}/queues/rotated`)).status === 200, { timeoutMs: 8000, intervalMs: 200, what: 'the broker reached with the new CA' });
    assert.match(dash2.log(), /"msg":"broker tls files reloaded"/);
  } finally {
    await dash2?.stop();
    await tlsStack?.stop();
    pki.cleanup();
  }
});
