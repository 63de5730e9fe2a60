// OpenTelemetry trace propagation against a real redis-server +
// jobwire-broker, with the SDK's in-memory exporter (a TracerProvider of
// each test's own; the only global set is the AsyncLocalStorage context
// manager, removed after the file): a Client with `tracing: true` (PRODUCER
// spans `publish <queue>`, W3C traceparent / tracestate in the headers) and
// a Worker with tracingMiddleware (CONSUMER spans `process <queue>`).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { Client, Worker, tracingMiddleware } from '../dist/index.js';
import { parseTraceParent as parseTraceparent } from '@opentelemetry/core';
import { startStack, uniqueQueue, waitFor } from './harness.mjs';

const require = createRequire(import.meta.url);
const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { context, trace, SpanKind, SpanStatusCode, ROOT_CONTEXT } = api;

let stack;
let plainClient;
const closers = [];

before(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  stack = await startStack();
  plainClient = new Client({ address: stack.address, timeoutMs: 5000 });
});

after(async () => {
  for (const c of closers.reverse()) await c();
  plainClient?.close();
  await stack?.stop();
  context.disable();
});

/** A TracerProvider of the test's own with an in-memory exporter; shut down after the file. */
function otel() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  closers.push(() => provider.shutdown());
  const spans = (name) => exporter.getFinishedSpans().filter((s) => s.name === name);
  return { exporter, provider, tracer: provider.getTracer('test'), spans };
}

/** A Client with tracing on, closed after the file. */
function tracingClient(provider) {
  const c = new Client({ address: stack.address, timeoutMs: 5000, tracing: true, tracerProvider: provider });
  closers.push(() => c.close());
  return c;
}

/**
 * A Worker on `q` with tracingMiddleware(provider); its handler of type 't'
 * records, per job id, the job's headers and the span active while it runs
 * (its span context), then runs `body` (default: returns 'ok').
 */
function tracedWorker(q, provider, body = () => 'ok') {
  const seen = new Map();
  const worker = new Worker({ address: stack.address, queues: [q], graceMs: 2000, logger: null });
  worker.use(tracingMiddleware({ tracerProvider: provider }));
  worker.register('t', (job) => {
    seen.set(job.id, { headers: job.headers, active: trace.getActiveSpan()?.spanContext() });
    return body(job);
  });
  closers.push(() => worker.stop());
  void worker.run({ installSignalHandlers: false });
  return seen;
}

/** The finished `process <q>` span of job `jobId` (waits for it). */
function processSpan(o, q, jobId) {
  return waitFor(() => o.spans(`process ${q}`).find((s) => s.attributes['messaging.message.id'] === jobId),
    { what: `the process span of ${jobId}` });
}

const parentId = (span) => span.parentSpanContext?.spanId;
const CALLER_TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

test('enqueue: the producer span is the test span\'s child and the handler span\'s parent', async () => {
  const o = otel();
  const q = uniqueQueue('tr-one');
  const seen = tracedWorker(q, o.provider);
  const client = tracingClient(o.provider);
  const callerHeaders = { tenant: 'acme' };
  const testSpan = o.tracer.startSpan('test');
  const { jobId } = await context.with(trace.setSpan(ROOT_CONTEXT, testSpan),
    () => client.enqueue(q, 't', { n: 1 }, { headers: callerHeaders }));
  testSpan.end();
  assert.deepEqual(callerHeaders, { tenant: 'acme' }, 'the caller\'s headers are not changed');
  await client.wait(q, jobId, { timeoutMs: 10_000 });

  const [pub] = o.spans(`publish ${q}`);
  assert.ok(pub, 'a publish span');
  assert.equal(pub.kind, SpanKind.PRODUCER);
  assert.equal(pub.spanContext().traceId, testSpan.spanContext().traceId);
  assert.equal(parentId(pub), testSpan.spanContext().spanId, 'the producer span\'s parent is the test span');
  assert.deepEqual(pub.attributes, {
    'messaging.system': 'jobwire',
    'messaging.destination.name': q,
    'messaging.operation.type': 'send',
    'messaging.message.id': jobId,
  });
  assert.equal(pub.status.code, SpanStatusCode.UNSET);
  assert.equal(pub.instrumentationScope.name, '@jobwire/client');

  const proc = await processSpan(o, q, jobId);
  assert.equal(proc.kind, SpanKind.CONSUMER);
  assert.equal(proc.spanContext().traceId, pub.spanContext().traceId, 'one trace');
  assert.equal(parentId(proc), pub.spanContext().spanId, 'the handler span\'s parent is the producer span');
  assert.equal(proc.parentSpanContext.isRemote, true);
  assert.deepEqual(proc.attributes, {
    'messaging.system': 'jobwire',
    'messaging.destination.name': q,
    'messaging.operation.type': 'process',
    'messaging.message.id': jobId,
    'jobwire.job.type': 't',
    'jobwire.job.attempt': 1,
  });
  assert.equal(proc.status.code, SpanStatusCode.UNSET);

  const { headers, active } = seen.get(jobId);
  assert.equal(headers.traceparent, `00-${pub.spanContext().traceId}-${pub.spanContext().spanId}-01`);
  assert.equal(headers.tenant, 'acme');
  assert.equal(headers.tracestate, undefined, 'no tracestate when empty');
  assert.equal(active.spanId, proc.spanContext().spanId, 'the process span is active in the handler');
});

test('enqueueBatch: one publish span, the parent of every job\'s handler span', async () => {
  const o = otel();
  const q = uniqueQueue('tr-batch');
  tracedWorker(q, o.provider);
  const client = tracingClient(o.provider);
  const shared = { tenant: 'acme' };
  const results = await client.enqueueBatch(q, [0, 1, 2].map((n) => ({ type: 't', payload: { n }, options: { headers: shared } })));
  assert.deepEqual(shared, { tenant: 'acme' });
  const pubs = o.spans(`publish ${q}`);
  assert.equal(pubs.length, 1, 'one span for the call');
  const [pub] = pubs;
  assert.equal(pub.kind, SpanKind.PRODUCER);
  assert.equal(pub.parentSpanContext, undefined, 'no active span: a root span');
  assert.deepEqual(pub.attributes, {
    'messaging.system': 'jobwire',
    'messaging.destination.name': q,
    'messaging.operation.type': 'send',
    'messaging.batch.message_count': 3,
  });
  for (const r of results) {
    assert.ok(r.ok);
    const proc = await processSpan(o, q, r.jobId);
    assert.equal(proc.spanContext().traceId, pub.spanContext().traceId);
    assert.equal(parentId(proc), pub.spanContext().spanId);
    const info = await plainClient.getJob(q, r.jobId);
    assert.equal(info.headers.traceparent, `00-${pub.spanContext().traceId}-${pub.spanContext().spanId}-01`);
  }
});

test('a job enqueued with tracing off: no traceparent, the handler span is a root span', async () => {
  const o = otel();
  const q = uniqueQueue('tr-off');
  const seen = tracedWorker(q, o.provider);
  const testSpan = o.tracer.startSpan('test');
  const { jobId } = await context.with(trace.setSpan(ROOT_CONTEXT, testSpan), () => plainClient.enqueue(q, 't', {}));
  testSpan.end();
  await plainClient.wait(q, jobId, { timeoutMs: 10_000 });
  assert.deepEqual(seen.get(jobId).headers, {}, 'tracing off: headers as given');
  assert.equal(o.spans(`publish ${q}`).length, 0);
  const proc = await processSpan(o, q, jobId);
  assert.equal(parentId(proc), undefined, 'a root span');
  assert.notEqual(proc.spanContext().traceId, testSpan.spanContext().traceId, 'a new trace');
  assert.equal(seen.get(jobId).active.spanId, proc.spanContext().spanId);
});

test('a caller-provided traceparent is kept (single and batch); the handler span is its child', async () => {
  const o = otel();
  const q = uniqueQueue('tr-caller');
  const seen = tracedWorker(q, o.provider);
  const client = tracingClient(o.provider);
  const mine = { traceparent: CALLER_TP, tracestate: 'vendor=1' };
  const { jobId } = await client.enqueue(q, 't', {}, { headers: mine });
  const [b0, b1] = await client.enqueueBatch(q, [
    { type: 't', options: { headers: { traceparent: CALLER_TP } } },
    { type: 't' },
  ]);
  await client.wait(q, b1.jobId, { timeoutMs: 10_000 });
  assert.deepEqual(mine, { traceparent: CALLER_TP, tracestate: 'vendor=1' });
  const caller = parseTraceparent(CALLER_TP);
  for (const id of [jobId, b0.jobId]) {
    const proc = await processSpan(o, q, id);
    assert.equal(seen.get(id).headers.traceparent, CALLER_TP, 'kept as given');
    assert.equal(proc.spanContext().traceId, caller.traceId);
    assert.equal(parentId(proc), caller.spanId);
  }
  assert.equal(seen.get(jobId).headers.tracestate, 'vendor=1');
  assert.equal((await processSpan(o, q, jobId)).spanContext().traceState?.get('vendor'), '1', 'tracestate extracted');
  // The batch's other job carries the batch span.
  const batchPub = o.spans(`publish ${q}`).find((s) => s.attributes['messaging.batch.message_count'] === 2);
  assert.equal(parentId(await processSpan(o, q, b1.jobId)), batchPub.spanContext().spanId);
  assert.equal(o.spans(`publish ${q}`).length, 2, 'a span per call all the same');
});

test('a tracestate of the producer span is injected with it', async () => {
  const o = otel();
  const q = uniqueQueue('tr-state');
  const seen = tracedWorker(q, o.provider);
  const client = tracingClient(o.provider);
  const remote = trace.setSpanContext(ROOT_CONTEXT, {
    ...parseTraceparent(CALLER_TP), traceState: api.createTraceState('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'),
  });
  const { jobId } = await context.with(remote, () => client.enqueue(q, 't', {}));
  await client.wait(q, jobId, { timeoutMs: 10_000 });
  const [pub] = o.spans(`publish ${q}`);
  assert.equal(parentId(pub), parseTraceparent(CALLER_TP).spanId);
  const { headers } = seen.get(jobId);
  assert.equal(headers.traceparent, `00-${parseTraceparent(CALLER_TP).traceId}-${pub.spanContext().spanId}-01`);
  assert.equal(headers.tracestate, 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
});

test('a failing handler: the span has status ERROR and the exception recorded; the job fails as usual', async () => {
  const o = otel();
  const q = uniqueQueue('tr-fail');
  tracedWorker(q, o.provider, () => { throw new TypeError('handler exploded'); });
  const client = tracingClient(o.provider);
  const { jobId } = await client.enqueue(q, 't', {}, { maxAttempts: 1 });
  const dead = await client.wait(q, jobId, { timeoutMs: 10_000 }).then(() => assert.fail('completed'), (e) => e.job);
  assert.equal(dead.error, 'TypeError: handler exploded');
  const proc = await processSpan(o, q, jobId);
  assert.equal(proc.status.code, SpanStatusCode.ERROR);
  assert.equal(proc.status.message, 'handler exploded');
  const ev = proc.events.find((e) => e.name === 'exception');
  assert.ok(ev, 'an exception event');
  assert.equal(ev.attributes['exception.type'], 'TypeError');
  assert.equal(ev.attributes['exception.message'], 'handler exploded');
});

test('a failing enqueue: the publish span has status ERROR and the exception; the call rejects as usual', async () => {
  const o = otel();
  const client = tracingClient(o.provider);
  const bad = 'Not A Queue!';
  await assert.rejects(client.enqueue(bad, 't', {}), (e) => e.code === 3);
  const [pub] = o.spans(`publish ${bad}`);
  assert.equal(pub.status.code, SpanStatusCode.ERROR);
  assert.ok(pub.events.some((e) => e.name === 'exception'));
  assert.equal(pub.attributes['messaging.message.id'], undefined);
});

test('without tracerProvider both sides use the global provider', async () => {
  const o = otel();
  assert.ok(trace.setGlobalTracerProvider(o.provider));
  try {
    const q = uniqueQueue('tr-global');
    const client = tracingClient(undefined);
    const worker = new Worker({ address: stack.address, queues: [q], graceMs: 2000, logger: null });
    worker.use(tracingMiddleware()).register('t', () => 'ok');
    closers.push(() => worker.stop());
    void worker.run({ installSignalHandlers: false });
    const { jobId } = await client.enqueue(q, 't', {});
    await client.wait(q, jobId, { timeoutMs: 10_000 });
    const [pub] = o.spans(`publish ${q}`);
    assert.equal(parentId(await processSpan(o, q, jobId)), pub.spanContext().spanId);
  } finally {
    trace.disable();
  }
});

test('loading the package loads no OpenTelemetry module; tracing off never does', () => {
  const script = `
    const { Client, Worker } = require('./dist/index.js');
    new Client({ address: '127.0.0.1:1' }).close();
    new Worker({ address: '127.0.0.1:1', queues: ['q'] }).use(async (j, next) => next());
    const n = Object.keys(require.cache).filter((k) => k.includes('@opentelemetry')).length;
    new Client({ address: '127.0.0.1:1', tracing: true }).close();
    const m = Object.keys(require.cache).filter((k) => k.includes('@opentelemetry')).length;
    console.log(n, m > 0);`;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: new URL('..', import.meta.url), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), '0 true');
});
