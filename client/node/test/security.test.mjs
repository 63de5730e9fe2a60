// Bearer tokens and TLS / mutual TLS against a real broker started with
// --tls_cert / --tls_key / --tls_client_ca and --auth_tokens_file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as util from 'node:util';
import { Client, Worker, JobwireError, Status } from '../dist/index.js';
import { startStack, makePki, sha256Hex, uniqueQueue, waitFor } from './harness.mjs';

const TOKENS = {
  producer: crypto.randomBytes(24).toString('hex'), // enqueue jobs.*
  worker: crypto.randomBytes(24).toString('hex'), // claim jobs.*
  billing: crypto.randomBytes(24).toString('hex'), // enqueue billing.*
  all: crypto.randomBytes(24).toString('hex'), // enqueue + claim *
};
const ALL_TOKENS = Object.values(TOKENS);

let pki;
let stack;
let savedEnvToken;
const closers = [];

/** mTLS options with file paths. */
const mtlsPaths = () => ({
  tlsRootCa: pki.path('ca.pem'), tlsClientCert: pki.path('client.pem'), tlsClientKey: pki.path('client.key'),
});

function client(opts) {
  const c = new Client({ address: stack.address, timeoutMs: 5000, ...opts });
  closers.push(() => c.close());
  return c;
}

/** A logger that keeps every line, with its level. */
function captureLogger() {
  const lines = [];
  const add = (level) => (msg) => lines.push({ level, msg });
  return { lines, logger: { info: add('info'), warn: add('warn'), error: add('error') } };
}

function assertNoToken(text) {
  for (const t of ALL_TOKENS) assert.ok(!text.includes(t), `a token leaked into: ${text}`);
}

async function rejectsWith(promise, code) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof JobwireError, `not a JobwireError: ${e}`);
    assert.equal(e.codeName, Status[code]);
    assert.equal(e.code, code);
    assertNoToken(`${e.message} ${e.details} ${e.stack}`);
    return e;
  }
  assert.fail(`expected a rejection with code ${code}`);
}

before(async () => {
  savedEnvToken = process.env.JOBWIRE_TOKEN;
  delete process.env.JOBWIRE_TOKEN;
  pki = makePki();
  const tokensFile = pki.writeFile('tokens.json', JSON.stringify({
    tokens: [
      { name: 'producer', sha256: sha256Hex(TOKENS.producer), enqueue: ['jobs.*'] },
      { name: 'worker', sha256: sha256Hex(TOKENS.worker), claim: ['jobs.*'] },
      { name: 'billing-api', sha256: sha256Hex(TOKENS.billing), enqueue: ['billing.*'] },
      { name: 'all', sha256: sha256Hex(TOKENS.all), enqueue: ['*'], claim: ['*'] },
    ],
  }));
  stack = await startStack({
    brokerArgs: [
      `--tls_cert=${pki.path('server.pem')}`,
      `--tls_key=${pki.path('server.key')}`,
      `--tls_client_ca=${pki.path('ca.pem')}`,
      `--auth_tokens_file=${tokensFile}`,
    ],
  });
});

after(async () => {
  for (const close of closers.reverse()) await close();
  await stack?.stop();
  pki?.cleanup();
  if (savedEnvToken === undefined) delete process.env.JOBWIRE_TOKEN;
  else process.env.JOBWIRE_TOKEN = savedEnvToken;
});

test('mTLS + tokens: enqueue, and a Worker runs jobs end to end (Claim, ExtendLease, AckBatch, Fail)', async () => {
  const q = uniqueQueue('jobs.e2e');
  const producer = client({ token: TOKENS.producer, ...mtlsPaths() });
  const { lines, logger } = captureLogger();
  const outcomes = [];
  const renewed = [];
  const worker = new Worker({
    address: stack.address, queues: [q], concurrency: 2, leaseMs: 1500, graceMs: 5000,
    token: TOKENS.worker, ...mtlsPaths(), logger, onOutcome: (o) => outcomes.push(o),
  });
  closers.push(() => worker.stop());
  worker.register('slow', async (job) => {
    const first = job.leaseExpiresAtMs;
    // ExtendLease runs every 500 ms: it must be accepted (token sent) for the
    // expiry the job sees to move.
    await waitFor(() => job.leaseExpiresAtMs > first, { timeoutMs: 5000, what: 'a lease renewal' });
    renewed.push(job.id);
    return { done: job.json().n };
  });
  worker.register('broken', async () => { throw new Error('boom'); });
  const running = worker.run({ installSignalHandlers: false });

  const ok = await producer.enqueue(q, 'slow', { n: 7 });
  const bad = await producer.enqueue(q, 'broken', null, { maxAttempts: 2, backoffBaseMs: 60_000 });
  await waitFor(() => outcomes.find((o) => o.job.id === ok.jobId), { what: 'outcome of the slow job' });
  await waitFor(() => outcomes.find((o) => o.job.id === bad.jobId), { what: 'outcome of the broken job' });

  assert.equal(outcomes.find((o) => o.job.id === ok.jobId).kind, 'ack_ok');
  const failed = outcomes.find((o) => o.job.id === bad.jobId);
  assert.equal(failed.kind, 'fail_ok');
  assert.equal(failed.failOutcome, 'RETRY_SCHEDULED');
  assert.deepEqual(renewed, [ok.jobId]);

  // GetJob is allowed to a token with enqueue (or claim) on the queue.
  const done = await producer.getJob(q, ok.jobId);
  assert.equal(done.state, 'JOB_STATE_COMPLETED');
  assert.deepEqual(done.resultJson(), { done: 7 });
  const retried = await producer.getJob(q, bad.jobId);
  assert.equal(retried.state, 'JOB_STATE_PENDING');
  assert.equal(retried.error, 'Error: boom');
  assert.deepEqual(lines.filter((l) => l.level !== 'info'), [], 'no warning or error logged');

  await worker.stop();
  await running;
});

test('no token -> UNAUTHENTICATED; an unknown token -> UNAUTHENTICATED, not echoed', async () => {
  const q = uniqueQueue('jobs.noauth');
  const none = client(mtlsPaths());
  const e1 = await rejectsWith(none.enqueue(q, 't', { a: 1 }), Status.UNAUTHENTICATED);
  assert.match(e1.details, /missing bearer token/);

  const wrongToken = crypto.randomBytes(24).toString('hex');
  const wrong = client({ token: wrongToken, ...mtlsPaths() });
  const e2 = await rejectsWith(wrong.getJob(q, 'nope'), Status.UNAUTHENTICATED);
  assert.equal(e2.details, 'invalid bearer token');
  assert.ok(!`${e2.message}${e2.stack}`.includes(wrongToken));
});

test('queue not allowed -> PERMISSION_DENIED with the broker message unchanged', async () => {
  const billing = client({ token: TOKENS.billing, ...mtlsPaths() });
  const allowed = await billing.enqueue('billing.invoices', 'charge', { cents: 100 });
  assert.ok(allowed.jobId.length > 0);

  const e = await rejectsWith(billing.enqueue('emails', 'send', {}), Status.PERMISSION_DENIED);
  assert.equal(e.details, 'token "billing-api" may not enqueue to queue "emails"');
  assert.equal(e.message, 'PERMISSION_DENIED: token "billing-api" may not enqueue to queue "emails"');

  const b = await rejectsWith(billing.enqueueBatch('emails', [{ type: 'send', payload: 1 }]), Status.PERMISSION_DENIED);
  assert.equal(b.details, 'token "billing-api" may not enqueue to queue "emails"');
});

test('a Worker whose token may not claim logs PERMISSION_DENIED and keeps retrying; the job stays PENDING', async () => {
  const q = uniqueQueue('jobs.noclaim');
  const producer = client({ token: TOKENS.producer, ...mtlsPaths() });
  const { jobId } = await producer.enqueue(q, 't', { x: 1 });
  const { lines, logger } = captureLogger();
  const outcomes = [];
  let handled = 0;
  const worker = new Worker({
    address: stack.address, queues: [q], graceMs: 2000,
    token: TOKENS.producer, ...mtlsPaths(), logger, onOutcome: (o) => outcomes.push(o),
  });
  closers.push(() => worker.stop());
  worker.register('t', async () => { handled++; });
  let settled = false;
  const running = worker.run({ installSignalHandlers: false }).finally(() => { settled = true; });

  // The Claim stream ends with the broker's refusal, which is logged as a
  // warning, and is reopened with backoff (not fatal: only INVALID_ARGUMENT is).
  const denied = `PERMISSION_DENIED: token "producer" may not claim from queue "${q}"`;
  await waitFor(() => lines.filter((l) => l.level === 'warn' && l.msg.includes(denied)).length >= 2,
    { what: 'two refused Claim streams in the log' });
  const warn = lines.find((l) => l.msg.includes(denied));
  assert.match(warn.msg, /^Claim stream ended \(PERMISSION_DENIED: .*\); reopening in \d+ ms$/);
  assert.equal(settled, false, 'run() is still running');
  assert.equal(handled, 0);
  assert.deepEqual(outcomes, []);
  assert.equal((await producer.getJob(q, jobId)).state, 'JOB_STATE_PENDING');
  assertNoToken(lines.map((l) => l.msg).join('\n'));

  await worker.stop();
  await running;
  assert.equal(settled, true);
});

test('TLS without a client certificate against an mTLS broker -> UNAVAILABLE', async () => {
  const c = client({ token: TOKENS.all, tlsRootCa: pki.path('ca.pem') });
  await rejectsWith(c.enqueue(uniqueQueue('jobs.nocert'), 't', {}), Status.UNAVAILABLE);
  // A certificate from another CA is refused the same way.
  const other = client({
    token: TOKENS.all, tlsRootCa: pki.path('ca.pem'),
    tlsClientCert: pki.path('other-client.pem'), tlsClientKey: pki.path('other-client.key'),
  });
  await rejectsWith(other.enqueue(uniqueQueue('jobs.othercert'), 't', {}), Status.UNAVAILABLE);
});

test('plaintext, or TLS with the system roots only, against the TLS broker -> UNAVAILABLE', async () => {
  const plain = client({ token: TOKENS.all });
  await rejectsWith(plain.enqueue(uniqueQueue('jobs.plain'), 't', {}), Status.UNAVAILABLE);
  // tls: true without tlsRootCa trusts the system roots, not the test CA.
  const sys = client({
    token: TOKENS.all, tls: true, tlsClientCert: pki.path('client.pem'), tlsClientKey: pki.path('client.key'),
  });
  await rejectsWith(sys.enqueue(uniqueQueue('jobs.sysroots'), 't', {}), Status.UNAVAILABLE);
});

test('JOBWIRE_TOKEN is the default token; an explicit token wins over it', async () => {
  const q = uniqueQueue('jobs.env');
  try {
    process.env.JOBWIRE_TOKEN = TOKENS.producer;
    const fromEnv = client(mtlsPaths());
    const r = await fromEnv.enqueue(q, 't', { env: true });
    assert.equal((await fromEnv.getJob(q, r.jobId)).state, 'JOB_STATE_PENDING');
    const emptyToken = client({ token: '', ...mtlsPaths() }); // empty means: use the env
    await emptyToken.enqueue(q, 't', {});

    // A Worker reads it too: the env token is the producer's, which may not claim.
    const { lines, logger } = captureLogger();
    const w = new Worker({ address: stack.address, queues: [q], graceMs: 1000, ...mtlsPaths(), logger });
    w.register('t', async () => null);
    closers.push(() => w.stop());
    const running = w.run({ installSignalHandlers: false });
    await waitFor(() => lines.some((l) => l.msg.includes('token "producer" may not claim from queue')),
      { what: 'the Worker to use the env token' });
    await w.stop();
    await running;

    process.env.JOBWIRE_TOKEN = TOKENS.billing; // may not enqueue to jobs.*
    const explicit = client({ token: TOKENS.producer, ...mtlsPaths() });
    await explicit.enqueue(q, 't', {});
    const envOnly = client(mtlsPaths());
    const e = await rejectsWith(envOnly.enqueue(q, 't', {}), Status.PERMISSION_DENIED);
    assert.equal(e.details, `token "billing-api" may not enqueue to queue "${q}"`);
  } finally {
    delete process.env.JOBWIRE_TOKEN;
  }
  // Read when the client is made: with the variable gone, no token is sent.
  const none = client(mtlsPaths());
  await rejectsWith(none.enqueue(q, 't', {}), Status.UNAUTHENTICATED);
});

test('TLS options take PEM text or file paths, mixed too', async () => {
  const q = uniqueQueue('jobs.pem');
  const text = client({
    token: TOKENS.producer, tlsRootCa: pki.read('ca.pem'),
    tlsClientCert: pki.read('client.pem'), tlsClientKey: pki.read('client.key'),
  });
  const a = await text.enqueue(q, 't', 'text');
  const paths = client({ token: TOKENS.producer, ...mtlsPaths() });
  const b = await paths.enqueue(q, 't', 'paths');
  const mixed = client({
    token: TOKENS.producer, tls: true, tlsRootCa: pki.path('ca.pem'),
    tlsClientCert: pki.read('client.pem'), tlsClientKey: pki.path('client.key'),
  });
  assert.equal((await mixed.getJob(q, a.jobId)).json(), 'text');
  assert.equal((await mixed.getJob(q, b.jobId)).json(), 'paths');
});

test('bad TLS / token options throw a clear JobwireError INVALID_ARGUMENT at construction', () => {
  const missing = `${pki.dir}/no-such-ca.pem`;
  const isInvalid = (re) => (e) => {
    assert.ok(e instanceof JobwireError, String(e));
    assert.equal(e.code, Status.INVALID_ARGUMENT);
    assert.match(e.message, re);
    return true;
  };
  assert.throws(() => new Client({ address: stack.address, tlsRootCa: missing }),
    isInvalid(new RegExp(`cannot read PEM file ".*no-such-ca\\.pem" \\(tlsRootCa\\): ENOENT`)));
  assert.throws(() => new Worker({ address: stack.address, queues: ['jobs.x'], tlsClientCert: pki.path('client.pem'), tlsClientKey: missing }),
    isInvalid(/cannot read PEM file .*\(tlsClientKey\): ENOENT/));
  assert.throws(() => new Client({ address: stack.address, tlsClientCert: pki.path('client.pem') }),
    isInvalid(/tlsClientCert and tlsClientKey must be given together/));

  // Key material that is not PEM is never echoed back.
  const secretish = 'MHcCAQEEIBogus-key-material-1234567890\nAoGCCqGSM49AwEHoUQDQgAE\n';
  assert.throws(() => new Client({ address: stack.address, tlsClientCert: pki.path('client.pem'), tlsClientKey: secretish }),
    (e) => isInvalid(/tlsClientKey is neither PEM text .* nor the path of a readable file/)(e) && !e.message.includes('Bogus'));
  // A certificate or key that does not parse (Node ignores a bad root CA;
  // that one fails the handshake: UNAVAILABLE).
  const badKey = pki.writeFile('garbage.key', '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n');
  assert.throws(() => new Client({ address: stack.address, tlsClientCert: pki.path('client.pem'), tlsClientKey: badKey }),
    isInvalid(/invalid TLS certificate or key: /));
  assert.throws(() => new Worker({ address: stack.address, queues: ['jobs.x'], tlsClientCert: pki.path('client.pem'), tlsClientKey: pki.read('garbage.key') }),
    (e) => isInvalid(/invalid TLS certificate or key: /)(e) && !e.message.includes('not a key'));

  // A token grpc-js could not send is refused without quoting it.
  assert.throws(() => new Client({ address: stack.address, token: 'sekrit\ntoken' }),
    (e) => isInvalid(/token may hold only printable ASCII/)(e) && !e.message.includes('sekrit'));
  // credentials and tls options are exclusive.
  assert.throws(() => new Client({ address: stack.address, tls: true, credentials: {} }), isInvalid(/not both/));
});

test('the token is not visible on the Client or Worker objects', () => {
  const c = client({ token: TOKENS.all, ...mtlsPaths() });
  const w = new Worker({ address: stack.address, queues: ['jobs.x'], token: TOKENS.all, ...mtlsPaths(), logger: null });
  for (const obj of [c, w]) {
    const shown = util.inspect(obj, { depth: 8, showHidden: true });
    assert.match(shown, /address/);
    assertNoToken(shown);
  }
});
