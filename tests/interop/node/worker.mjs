// Interop worker on the Node client's Worker (tests/interop/README.md).
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import {
  LeaseLostError,
  NonRetryableError,
  RetryAfterError,
  Worker,
  tracingMiddleware,
} from '../../../client/node/dist/index.js';

// The OpenTelemetry API and SDK as the client resolves them (its
// devDependencies, client/node/node_modules).
const clientRequire = createRequire(new URL('../../../client/node/package.json', import.meta.url));
const { context, trace } = clientRequire('@opentelemetry/api');
const { BasicTracerProvider } = clientRequire('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = clientRequire('@opentelemetry/context-async-hooks');

function env(name) {
  const v = process.env[name];
  if (v === undefined || v === '') {
    process.stderr.write(`interop node worker: ${name} is required\n`);
    process.exit(2);
  }
  return v;
}

const address = env('JOBWIRE_ADDR');
// The queues to consume (INTEROP_QUEUES, comma-separated, else the one
// INTEROP_QUEUE) and their weights (INTEROP_WEIGHTS, comma-separated ints in
// the order of the queues; unset or empty: none, strict order).
const queues = process.env.INTEROP_QUEUES ? process.env.INTEROP_QUEUES.split(',') : [env('INTEROP_QUEUE')];
let weights;
if (process.env.INTEROP_WEIGHTS) {
  const values = process.env.INTEROP_WEIGHTS.split(',').map(Number);
  if (values.length !== queues.length) {
    process.stderr.write(`interop node worker: INTEROP_WEIGHTS has ${values.length} weights for ${queues.length} queues\n`);
    process.exit(2);
  }
  weights = Object.fromEntries(queues.map((q, i) => [q, values[i]]));
}
const concurrency = Number(env('INTEROP_CONCURRENCY'));
const leaseMs = Number(env('INTEROP_LEASE_MS'));
const lang = process.env.INTEROP_LANG || 'node';
const logFd = fs.openSync(env('INTEROP_LOG'), 'a');

// One whole line per write on an O_APPEND fd, synchronous: written before
// the next step runs, so a crash never loses or tears a line.
function logLine(line) {
  fs.writeSync(logFd, `${line}\n`);
}

// Every handler runs in a `process <queue>` span (tracingMiddleware), the
// child of the producer's span when the job's headers carry a traceparent.
// No exporter: the spans are only read back in the handler. The context
// manager makes the span the active one there.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const tracerProvider = new BasicTracerProvider();

const worker = new Worker({
  address,
  queues,
  weights, // undefined: strict order
  concurrency,
  leaseMs,
  workerId: `${lang}-interop-${process.pid}`,
  // Every kind the client reports, with its detail when it has one: the
  // Fail's outcome, or the code of the last answer (ack_error, fail_error,
  // ack_unknown, fail_unknown); expired_dropped and ack_ok have none.
  onOutcome(o) {
    const detail = o.kind === 'fail_ok' ? ` ${o.failOutcome}` : o.codeName ? ` ${o.codeName}` : '';
    logLine(`${o.kind} ${o.job.id} ${o.job.attempt} ${lang}${detail}`);
  },
});
worker.use(tracingMiddleware({ tracerProvider }));

// `span <job_id> <attempt> <lang> <trace_id> <parent_span_id>`: the trace id
// of the handler's current span and its parent's span id, as the SDK
// recorded them (16 zeros when it has no parent).
function logSpan(job) {
  const span = trace.getActiveSpan();
  const parent = span?.parentSpanContext?.spanId ?? '0'.repeat(16);
  logLine(`span ${job.id} ${job.attempt} ${lang} ${span?.spanContext().traceId ?? '0'.repeat(32)} ${parent}`);
}

worker.register('interop', async (job) => {
  const p = job.json();
  logLine(`start ${job.id} ${job.attempt} ${lang}`);
  if (job.headers.traceparent !== undefined) logSpan(job);
  if (p.crash && job.attempt === 1) {
    logLine(`crash ${job.id} ${job.attempt} ${lang}`);
    process.exit(3);
  }
  if (p.hold_in === lang && job.attempt === 1) {
    // run_interop.py freezes this process (SIGSTOP) during the sleep.
    logLine(`hold ${job.id} ${job.attempt} ${lang}`);
    await new Promise((resolve) => setTimeout(resolve, p.hold_ms ?? 0));
  }
  if (p.work_ms) await new Promise((resolve) => setTimeout(resolve, p.work_ms));
  if (p.always_fail) throw new Error('always fails');
  if (p.fail_first && job.attempt === 1) throw new Error('planned first-attempt failure');
  return { n: p.n, lang };
});

// The "behaviour" handler (tests/interop/README.md, "The behaviour handler"):
// one scenario per job, for tests/behaviours/run_behaviours.py.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Resolves true when job.signal aborts because the lease was lost (reason a
// LeaseLostError), false after waitMs. An abort for another reason (the stop
// grace ran out) is not a lost lease: the wait goes on to its timeout.
function waitLeaseLost(job, waitMs) {
  const lost = () => job.signal.aborted && job.signal.reason instanceof LeaseLostError;
  if (lost()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onAbort = () => {
      if (!lost()) return;
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      job.signal.removeEventListener('abort', onAbort);
      resolve(false);
    }, waitMs);
    job.signal.addEventListener('abort', onAbort, { once: true });
  });
}

// Scenario turned_away: how many times this process ran each job (by queue
// and job id). Runs turned away with keepAttempt do not advance job.attempt,
// so the handler counts them itself, in memory.
const runs = new Map();

worker.register('behaviour', async (job) => {
  logLine(`start ${job.id} ${job.attempt} ${lang} ${job.queue}`);
  const p = job.json();
  switch (p.scenario) {
    case 'lease_ms':
      if (p.sleep_ms) await sleep(p.sleep_ms);
      return { lang, lease_ms: job.leaseMs };
    case 'long_error':
      throw new Error(String(p.unit).repeat(p.count));
    case 'retry_after':
      if (job.attempt === 1) throw new RetryAfterError('retry later', p.delay_ms);
      return { lang };
    case 'turned_away': {
      const key = `${job.queue} ${job.id}`;
      const run = (runs.get(key) ?? 0) + 1;
      runs.set(key, run);
      logLine(`run ${job.id} ${job.attempt} ${lang} ${run} ${Date.now()}`);
      if (run <= p.times) throw new RetryAfterError('turned away', p.delay_ms, { keepAttempt: true });
      return { lang, runs: run };
    }
    case 'non_retryable':
      throw new NonRetryableError('bad input');
    case 'wait_lease_lost': {
      const leaseLost = await waitLeaseLost(job, p.wait_ms ?? 0);
      logLine(`${leaseLost ? 'lease_lost' : 'lease_kept'} ${job.id} ${job.attempt} ${lang}`);
      return { lang, lease_lost: leaseLost };
    }
    case 'sleep':
      if (p.sleep_ms) await sleep(p.sleep_ms);
      return { lang };
    case 'keyed':
      logLine(`key_start ${job.id} ${job.attempt} ${lang} ${job.concurrencyKey}`);
      if (p.sleep_ms) await sleep(p.sleep_ms);
      logLine(`key_end ${job.id} ${job.attempt} ${lang} ${job.concurrencyKey}`);
      return { lang, key: job.concurrencyKey };
    case 'deps': {
      const results = Object.entries(job.dependencyResults);
      logLine(`deps ${job.id} ${job.attempt} ${lang} ${results.length}`);
      for (const [parent, result] of results) {
        logLine(`dep ${job.id} ${job.attempt} ${lang} ${parent} ${result.toString('hex')}`);
      }
      return { lang, job: job.id };
    }
    default:
      throw new Error(`unknown scenario ${p.scenario}`);
  }
});

try {
  await worker.run({ installSignalHandlers: true });
  fs.closeSync(logFd);
  process.exit(0);
} catch (e) {
  process.stderr.write(`interop node worker: ${e?.stack ?? e}\n`);
  process.exit(1);
}
