// BullMQ peer of the jobwire benchmark (bench/README.md): end to end, producers
// and a Worker at once in this process, from the first add to the last
// completed job; prints one JSON line.
//
//   node bench/peers/bullmq/bench.mjs --redis-url redis://127.0.0.1:6379 --jobs 20000
//
// Settings (BullMQ's documented throughput knobs): Queue.addBulk in batches of
// --batch (100) from --producers (4) concurrent loops; one Worker with
// --concurrency (64); removeOnComplete / removeOnFail on every job so
// finished jobs do not pile up in Redis (no completed set to trim); events
// stream at BullMQ's default (maxLen ~10,000). Completion is counted with the
// Worker's local 'completed' event, which fires after the job has been moved
// to completed in Redis: it costs no Redis command.
import { Queue, Worker } from 'bullmq';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

function parseArgs(argv) {
  const opts = {
    redisUrl: 'redis://127.0.0.1:6379', jobs: 20000, batch: 100, producers: 4,
    concurrency: 64, queue: 'bench', rate: 0, seconds: 5,
  };
  for (let i = 2; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = inline ?? argv[++i];
    switch (flag) {
      case '--redis-url': opts.redisUrl = value; break;
      case '--jobs': opts.jobs = Number(value); break;
      case '--batch': opts.batch = Number(value); break;
      case '--producers': opts.producers = Number(value); break;
      case '--concurrency': opts.concurrency = Number(value); break;
      case '--queue': opts.queue = value; break;
      case '--rate': opts.rate = Number(value); break;
      case '--seconds': opts.seconds = Number(value); break;
      default: throw new Error(`unknown flag ${flag}`);
    }
  }
  return opts;
}

const opts = parseArgs(process.argv);
const url = new URL(opts.redisUrl);
const connection = {
  host: url.hostname, port: Number(url.port || 6379),
  maxRetriesPerRequest: null, // required by BullMQ Workers
};
const version = require('bullmq/package.json').version;
const ioredisVersion = require('ioredis/package.json').version;

const payload = (n) => ({ n, sent_ns: Number(process.hrtime.bigint()), pad: 'jobwire-bench' });
const jobOpts = { removeOnComplete: true, removeOnFail: true };

// Latency mode (--rate > 0): one producer offers --rate jobs/s for --seconds,
// one add per job, open loop; enqueue-to-handler latency percentiles.
const latencyMode = opts.rate > 0;
if (latencyMode) opts.jobs = Math.floor(opts.rate * opts.seconds);
const latencies = [];

let completed = 0;
let failed = 0;
let doneResolve;
const done = new Promise((resolve) => { doneResolve = resolve; });

const queue = new Queue(opts.queue, { connection });
const worker = new Worker(opts.queue, async (job) => {
  if (latencyMode) latencies.push(Number(process.hrtime.bigint()) - job.data.sent_ns);
}, {
  connection, concurrency: opts.concurrency, autorun: true,
});
worker.on('completed', () => {
  if (++completed === opts.jobs) doneResolve(process.hrtime.bigint());
});
worker.on('failed', () => { failed++; });
worker.on('error', (err) => { console.error(`worker error: ${err}`); });
await queue.waitUntilReady();
await worker.waitUntilReady();
await new Promise((r) => setTimeout(r, 300)); // worker blocked on its queue, like jobwire_bench

const start = process.hrtime.bigint();
async function produce(p) {
  for (let n = p * opts.batch; n < opts.jobs; n += opts.producers * opts.batch) {
    const chunk = [];
    for (let i = n; i < Math.min(n + opts.batch, opts.jobs); i++) {
      chunk.push({ name: 'noop', data: payload(i), opts: jobOpts });
    }
    await queue.addBulk(chunk);
  }
}
async function offer() {
  // Open loop: job n is sent at start + n / rate, whatever came before.
  const startNs = Number(start);
  for (let n = 0; n < opts.jobs; n++) {
    const wait = (startNs + (n * 1e9) / opts.rate - Number(process.hrtime.bigint())) / 1e6;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    queue.add('noop', payload(n), jobOpts).catch(() => { failed++; });
  }
}
if (latencyMode) await offer();
else await Promise.all(Array.from({ length: opts.producers }, (_, p) => produce(p)));
const timeout = setTimeout(() => { console.error('timed out'); process.exit(1); }, 300000);
const end = await done;
clearTimeout(timeout);
const seconds = Number(end - start) / 1e9;

await worker.close();
await queue.close();
const pct = (p) => {
  const sorted = latencies.sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] / 1e6 : 0;
};
if (latencyMode) {
  console.log(JSON.stringify({
    system: 'BullMQ', jobs: opts.jobs, failed, offered_per_s: opts.rate,
    p50_ms: pct(0.5), p99_ms: pct(0.99), p999_ms: pct(0.999), max_ms: pct(1),
    instrumentation_commands: 0,
  }));
  process.exit(0);
}
console.log(JSON.stringify({
  system: 'BullMQ', version: `bullmq ${version}, ioredis ${ioredisVersion}`,
  jobs: opts.jobs, failed, seconds, jobs_per_s: opts.jobs / seconds,
  settings: `addBulk x${opts.batch} from ${opts.producers} concurrent producer loops; ` +
    `1 Worker, concurrency ${opts.concurrency}, 1 Node process; removeOnComplete/removeOnFail; ` +
    "completion counted by the Worker's local 'completed' event",
  instrumentation_commands: 0,
}));
process.exit(0);
