// Error details (proto/jobwire/v1/broker.proto, "Error details"): the reason,
// metadata, field and retry delay the broker attaches to every error, as
// JobwireError exposes them, against a real redis-server + jobwire-broker;
// the per-item reasons of enqueueBatch / ackBatch / the Worker's coalesced
// acks; and the decoding of grpc-status-details-bin on its own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { Client, Worker, JobwireError, LeaseLostError, Reason, Status } from '../dist/index.js';
import * as esm from '../dist/index.mjs';
import { makeStub, unary } from '../dist/proto.js';
import { AckCoalescer } from '../dist/ack_coalescer.js';
import { decodeStatusDetails, detailsFromMetadata } from '../dist/status_details.js';
import { RPC_STATUS_DESCRIPTOR } from '../dist/generated/rpc_status_descriptor.js';
import { startStack, uniqueQueue, freePort, REPO_ROOT, claimOne as claimOne_ } from './harness.mjs';

let stack;
let client;
let stub;

before(async () => {
  stack = await startStack();
  client = new Client({ address: stack.address, timeoutMs: 5000 });
  stub = makeStub(stack.address);
});

after(async () => {
  stub?.close();
  client?.close();
  await stack?.stop();
});

/** The rejection of `p` (fails the test when it resolves). */
async function rejection(p) {
  return p.then((v) => assert.fail(`resolved with ${JSON.stringify(v)}`), (e) => e);
}

/** Claims one job of `queue` on a raw Claim stream (30 s lease); see harness.mjs. */
const claimOne = (queue) => claimOne_(stub, queue, { workerId: 'node-test-reasons' });

test('Reason lists exactly the reasons of broker.proto, in both entries', () => {
  const text = fs.readFileSync(path.join(REPO_ROOT, 'proto', 'jobwire', 'v1', 'broker.proto'), 'utf8');
  const section = text.slice(text.indexOf('// Error details:'), text.indexOf('// Batch results (EnqueueResult'));
  assert.ok(section.length > 0, 'broker.proto has its "Error details" section');
  // The table rows: "//   <REASON>   <CODE>...", three spaces in.
  const names = [...section.matchAll(/^\/\/ {3}([A-Z][A-Z_]+) +[A-Z_]+/gm)].map((m) => m[1]);
  assert.ok(names.length >= 17, `found ${names.length} reasons in broker.proto`);
  assert.deepEqual(Object.keys(Reason).sort(), [...names].sort());
  for (const [k, v] of Object.entries(Reason)) assert.equal(v, k);
  assert.equal(esm.Reason, Reason, 'the ES-module entry exports the same Reason');
});

test('getJob of a missing job: NOT_FOUND, reason JOB_NOT_FOUND', async () => {
  const err = await rejection(client.getJob(uniqueQueue('reasons'), '999999999'));
  assert.ok(err instanceof JobwireError);
  assert.equal(err.code, Status.NOT_FOUND);
  assert.equal(err.reason, Reason.JOB_NOT_FOUND);
  assert.equal(err.reason, 'JOB_NOT_FOUND');
  assert.deepEqual(err.metadata, {});
  assert.equal(err.field, undefined);
  assert.equal(err.retryDelayMs, undefined);
});

test('enqueue with priority 5000: INVALID_ARGUMENT, reason INVALID_FIELD, field priority', async () => {
  const err = await rejection(client.enqueue(uniqueQueue('reasons'), 't', { a: 1 }, { priority: 5000 }));
  assert.ok(err instanceof JobwireError);
  assert.equal(err.code, Status.INVALID_ARGUMENT);
  assert.equal(err.reason, Reason.INVALID_FIELD);
  assert.equal(err.field, 'priority');
  assert.equal(err.metadata.field, 'priority');
  assert.match(err.details, /priority/);
  assert.equal(err.retryDelayMs, undefined);
});

test('ack with a wrong lease token of a claimed job: LEASE_STALE (Ack, and ackBatch per ack)', async () => {
  const q = uniqueQueue('reasons-ack');
  const { jobId } = await client.enqueue(q, 't', { a: 1 });
  const held = await claimOne(q);
  assert.equal(held.jobId, jobId);
  const wrong = `${held.leaseToken}x`;

  // Unary Ack through the package's own call wrapper (what the Worker uses).
  const err = await rejection(unary(stub, 'Ack', { queue: q, jobId, leaseToken: wrong }, 5000));
  assert.ok(err instanceof JobwireError);
  assert.equal(err.code, Status.FAILED_PRECONDITION);
  assert.equal(err.reason, Reason.LEASE_STALE);

  // The same ack in an AckBatch: the per-ack result's reason.
  const [r] = await client.ackBatch([{ queue: q, jobId, leaseToken: wrong, result: { no: 1 } }]);
  assert.equal(r.ok, false);
  assert.equal(r.code, Status.FAILED_PRECONDITION);
  assert.equal(r.reason, Reason.LEASE_STALE);
  assert.ok(r.error instanceof JobwireError);
  assert.equal(r.error.reason, Reason.LEASE_STALE);
  assert.deepEqual(r.error.metadata, {});

  // Nothing changed: the right token still acks.
  assert.deepEqual(await client.ackBatch([{ queue: q, jobId, leaseToken: held.leaseToken }]), [{ ok: true }]);
});

test('enqueueBatch with one invalid job: that item has reason INVALID_FIELD, the other is stored', async () => {
  const q = uniqueQueue('reasons-batch');
  const results = await client.enqueueBatch(q, [
    { type: 't', payload: { ok: 1 } },
    { type: 't', payload: { ok: 0 }, options: { priority: 5000 } },
  ]);
  assert.equal(results.length, 2);
  assert.equal(results[0].ok, true, JSON.stringify(results[0]));
  assert.equal((await client.getJob(q, results[0].jobId)).state, 'JOB_STATE_PENDING');
  const bad = results[1];
  assert.equal(bad.ok, false);
  assert.equal(bad.code, Status.INVALID_ARGUMENT);
  assert.equal(bad.reason, Reason.INVALID_FIELD);
  assert.ok(bad.error instanceof JobwireError);
  assert.equal(bad.error.reason, Reason.INVALID_FIELD);
  assert.match(bad.message, /^jobs\[1\]\.priority/);
});

test('cancel of an ACTIVE job asks its run to stop; of a finished job: FAILED_PRECONDITION, reason JOB_STATE, metadata.state', async () => {
  const q = uniqueQueue('reasons-cancel');
  const { jobId } = await client.enqueue(q, 't', {});
  const held = await claimOne(q);
  assert.equal(held.jobId, jobId);
  assert.equal(await client.cancel(q, jobId), true, 'cancel_requested');
  const asked = await client.getJob(q, jobId);
  assert.equal(asked.state, 'JOB_STATE_ACTIVE', 'still running until the worker stops');
  assert.ok(asked.cancelRequestedAtMs > 0, `cancelRequestedAtMs ${asked.cancelRequestedAtMs}`);
  assert.equal(await client.cancel(q, jobId), true, 'cancelling again');
  // An Ack that comes first still completes it.
  const [acked] = await client.ackBatch([{ queue: q, jobId, leaseToken: held.leaseToken, result: 'done' }]);
  assert.equal(acked.ok, true, JSON.stringify(acked));
  assert.equal((await client.getJob(q, jobId)).state, 'JOB_STATE_COMPLETED');
  const err = await rejection(client.cancel(q, jobId));
  assert.ok(err instanceof JobwireError);
  assert.equal(err.code, Status.FAILED_PRECONDITION);
  assert.equal(err.reason, Reason.JOB_STATE);
  assert.equal(err.metadata.state, 'completed');
  assert.equal((await client.getJob(q, jobId)).state, 'JOB_STATE_COMPLETED', 'nothing changed');
});

test('a Worker whose Claim is refused: run() rejects with reason INVALID_FIELD and the field', async () => {
  const worker = new Worker({ address: stack.address, queues: ['bad queue name!'], logger: null });
  worker.register('t', async () => null);
  const err = await rejection(worker.run({ installSignalHandlers: false }));
  assert.ok(err instanceof JobwireError);
  assert.equal(err.code, Status.INVALID_ARGUMENT);
  assert.equal(err.reason, Reason.INVALID_FIELD);
  assert.equal(err.field, 'queues[0]');
  assert.equal(err.metadata.field, 'queues[0]');
});

test('Redis over maxmemory: enqueue rejects with REDIS_OUT_OF_MEMORY and retryDelayMs 1000', async (t) => {
  const q = uniqueQueue('reasons-oom');
  const redis = (...args) => execFileSync('redis-cli', ['-p', String(stack.redisPort), ...args]).toString().trim();
  redis('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
  redis('CONFIG', 'SET', 'maxmemory', '1');
  t.after(() => redis('CONFIG', 'SET', 'maxmemory', '0'));
  const err = await rejection(client.enqueue(q, 't', {}));
  assert.ok(err instanceof JobwireError);
  assert.equal(err.code, Status.RESOURCE_EXHAUSTED);
  assert.equal(err.reason, Reason.REDIS_OUT_OF_MEMORY);
  assert.equal(err.retryDelayMs, 1000);
  const [r] = await client.enqueueBatch(q, [{ type: 't' }]);
  assert.equal(r.ok, false);
  assert.equal(r.reason, Reason.REDIS_OUT_OF_MEMORY);
  assert.equal(r.error.reason, Reason.REDIS_OUT_OF_MEMORY);
});

test('too many Claim streams: the stream status carries TOO_MANY_CLAIM_STREAMS and retryDelayMs 1000', async () => {
  const small = await startStack({ brokerArgs: ['--max_claim_streams=1'] });
  const s = makeStub(small.address);
  const q = uniqueQueue('reasons-streams');
  const first = s.Claim({ queues: [q], maxInFlight: 1, leaseMs: 30_000, workerId: 'a' });
  first.on('error', () => {});
  try {
    // The first stream is open once it delivered a job.
    const delivered = new Promise((resolve) => first.once('data', resolve));
    const smallClient = new Client({ address: small.address, timeoutMs: 5000 });
    await smallClient.enqueue(q, 't', {});
    smallClient.close();
    await delivered;
    const [fromError, fromStatus] = await new Promise((resolve) => {
      let e;
      const second = s.Claim({ queues: ['q'], maxInFlight: 1, workerId: 'b' });
      second.on('error', (err) => { e = err; });
      second.on('status', (st) => resolve([JobwireError.from(e), JobwireError.fromStatus(st)]));
    });
    for (const err of [fromError, fromStatus]) {
      assert.equal(err.code, Status.RESOURCE_EXHAUSTED);
      assert.equal(err.reason, Reason.TOO_MANY_CLAIM_STREAMS);
      assert.equal(err.retryDelayMs, 1000);
    }
  } finally {
    first.cancel();
    s.close();
    await small.stop();
  }
});

test('errors without details: reason "" and metadata {} (unreachable broker, package errors)', async () => {
  const port = await freePort();
  const dead = new Client({ address: `127.0.0.1:${port}`, timeoutMs: 1000 });
  try {
    const err = await rejection(dead.getJob('q', '1'));
    assert.ok(err instanceof JobwireError);
    assert.ok([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED].includes(err.code), err.codeName);
    assert.equal(err.reason, '');
    assert.deepEqual(err.metadata, {});
    assert.equal(err.field, undefined);
    assert.equal(err.retryDelayMs, undefined);
  } finally {
    dead.close();
  }
  const plain = new JobwireError(Status.INTERNAL, 'x');
  assert.equal(plain.reason, '');
  assert.deepEqual(plain.metadata, {});
  assert.equal(JobwireError.from(new Error('boom')).reason, '');
});

test('the Worker\'s coalesced acks: a refused ack rejects with the result\'s reason', async () => {
  const c = new AckCoalescer(async (acks) => acks.map((a) => (a.jobId === 'stale'
    ? { code: Status.FAILED_PRECONDITION, message: 'stale', reason: 'LEASE_STALE' }
    : { code: Status.OK, message: '', reason: '' })));
  const [ok, stale] = await Promise.all([
    c.ack({ queue: 'q', jobId: 'fine', leaseToken: 't' }).then(() => 'ok', (e) => e),
    c.ack({ queue: 'q', jobId: 'stale', leaseToken: 't' }).then(() => 'ok', (e) => e),
  ]);
  assert.equal(ok, 'ok');
  assert.ok(stale instanceof JobwireError);
  assert.equal(stale.reason, Reason.LEASE_STALE);
});

test('LeaseLostError carries the refusal\'s reason', () => {
  const cause = new JobwireError(Status.FAILED_PRECONDITION, 'stale', { reason: Reason.LEASE_STALE });
  const lost = new LeaseLostError('q', 'j1', cause);
  assert.equal(lost.reason, Reason.LEASE_STALE);
  assert.equal(lost.cause, cause);
});

// ---- decoding grpc-status-details-bin on its own ----------------------------

const root = protobuf.Root.fromJSON(RPC_STATUS_DESCRIPTOR);
/** A serialized google.rpc.Status with `details` ([type name, object] pairs). */
function statusBytes(details) {
  const Status_ = root.lookupType('google.rpc.Status');
  return Buffer.from(Status_.encode(Status_.fromObject({
    code: 3,
    message: 'm',
    details: details.map(([name, obj]) => {
      const T = root.lookupType(name);
      return { type_url: `type.googleapis.com/${name}`, value: T.encode(T.fromObject(obj)).finish() };
    }),
  })).finish());
}

test('decodeStatusDetails: ErrorInfo of domain jobwire.dev only; BadRequest; RetryInfo rounded up to ms', () => {
  const bin = statusBytes([
    ['google.rpc.ErrorInfo', { reason: 'OTHER', domain: 'example.com', metadata: { a: 'b' } }],
    ['google.rpc.DebugInfo', { detail: 'ignored' }],
    ['google.rpc.ErrorInfo', { reason: 'INVALID_FIELD', domain: 'jobwire.dev', metadata: { field: 'jobs[3].priority' } }],
    ['google.rpc.BadRequest', { field_violations: [{ field: 'jobs[3].priority', description: 'too big' }] }],
    ['google.rpc.RetryInfo', { retry_delay: { seconds: 2, nanos: 500_000_001 } }],
  ]);
  assert.deepEqual(decodeStatusDetails(bin), {
    reason: 'INVALID_FIELD', metadata: { field: 'jobs[3].priority' }, field: 'jobs[3].priority', retryDelayMs: 2501,
  });
  // Only another domain's ErrorInfo: no reason.
  assert.deepEqual(decodeStatusDetails(statusBytes([['google.rpc.ErrorInfo', { reason: 'X', domain: 'example.com' }]])),
    { reason: '', metadata: {} });
  // Not a google.rpc.Status: undefined, never a throw.
  assert.equal(decodeStatusDetails(Buffer.from([0xff, 0xff, 0xff])), undefined);

  // From grpc-js metadata, as JobwireError.from reads it.
  const md = new grpc.Metadata();
  md.set('grpc-status-details-bin', statusBytes([['google.rpc.ErrorInfo', { reason: 'JOB_STATE', domain: 'jobwire.dev', metadata: { state: 'dead' } }]]));
  assert.deepEqual(detailsFromMetadata(md), { reason: 'JOB_STATE', metadata: { state: 'dead' } });
  assert.equal(detailsFromMetadata(new grpc.Metadata()), undefined);
  assert.equal(detailsFromMetadata(undefined), undefined);
  const err = JobwireError.from({ code: Status.FAILED_PRECONDITION, details: 'not pending', metadata: md });
  assert.equal(err.reason, Reason.JOB_STATE);
  assert.deepEqual(err.metadata, { state: 'dead' });
  assert.equal(err.details, 'not pending');
});
