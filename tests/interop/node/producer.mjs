// Interop producer on the Node client's enqueueBatch (tests/interop/README.md),
// with tracing on: each batch's `publish <queue>` span goes into its jobs'
// traceparent, and its ids into the out lines.
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import { Client } from '../../../client/node/dist/index.js';

// The OpenTelemetry SDK as the client resolves it (its devDependencies).
const clientRequire = createRequire(new URL('../../../client/node/package.json', import.meta.url));
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = clientRequire('@opentelemetry/sdk-trace-base');

function env(name) {
  const v = process.env[name];
  if (v === undefined || v === '') {
    process.stderr.write(`interop node producer: ${name} is required\n`);
    process.exit(2);
  }
  return v;
}

const address = env('JOBWIRE_ADDR');
const queue = env('INTEROP_QUEUE');
const jobsFile = env('INTEROP_JOBS');
const outFile = env('INTEROP_OUT');

const specs = fs.readFileSync(jobsFile, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));

function options(s) {
  const o = {};
  if (s.max_attempts !== undefined && s.max_attempts !== null) o.maxAttempts = s.max_attempts;
  if (s.idempotency_key) o.idempotencyKey = s.idempotency_key;
  if (s.backoff_base_ms !== undefined && s.backoff_base_ms !== null) o.backoffBaseMs = s.backoff_base_ms;
  if (s.backoff_max_ms !== undefined && s.backoff_max_ms !== null) o.backoffMaxMs = s.backoff_max_ms;
  if (s.delay_ms) o.delayMs = s.delay_ms;
  return o;
}

const exporter = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const client = new Client({ address, tracing: true, tracerProvider });

/** `<trace_id> <span_id>` of the newest finished `publish <queue>` span (the batch just sent). */
function publishSpanIds() {
  const span = exporter.getFinishedSpans().filter((s) => s.name === `publish ${queue}`).pop();
  if (!span) throw new Error(`no finished span "publish ${queue}"`);
  exporter.reset();
  const sc = span.spanContext();
  return `${sc.traceId} ${sc.spanId}`;
}

const outFd = fs.openSync(outFile, 'w');
let failed = 0;
try {
  for (let i = 0; i < specs.length; i += 100) {
    const batch = specs.slice(i, i + 100);
    const results = await client.enqueueBatch(queue, batch.map((s) => ({
      type: s.type, payload: s.payload, options: options(s),
    })));
    const ids = publishSpanIds();
    let lines = '';
    results.forEach((r, k) => {
      if (r.ok) {
        lines += `${batch[k].n} ${r.jobId} ${r.duplicate ? 1 : 0} ${ids}\n`;
      } else {
        failed++;
        process.stderr.write(`interop node producer: job n=${batch[k].n}: ${r.codeName}: ${r.message}\n`);
      }
    });
    if (lines) fs.writeSync(outFd, lines);
  }
} catch (e) {
  process.stderr.write(`interop node producer: ${e?.stack ?? e}\n`);
  process.exit(1);
} finally {
  fs.closeSync(outFd);
  client.close();
}
process.exit(failed === 0 ? 0 : 1);
