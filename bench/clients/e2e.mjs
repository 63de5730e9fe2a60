// jobwire end to end through the Node.js client (bench/README.md).
//
// A Worker (concurrency 64) and producer loops (Client.enqueueBatch of 100)
// at once in this process, from the first enqueue to the last ack; prints one
// JSON line, the shape of the peers' (bench/peers/).
//
//   node bench/clients/e2e.mjs --addr 127.0.0.1:50051 --jobs 20000
//
// Uses the built client (client/node/dist, `bash client/node/build.sh`), or
// the one at $JOBWIRE_NODE_CLIENT. Completion is counted with onOutcome
// ('ack_ok': the broker confirmed the Ack), so the clock stops at the last
// confirmed ack.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const clientDir = process.env.JOBWIRE_NODE_CLIENT || join(here, '..', '..', 'client', 'node');
const { Client, Worker } = require(join(clientDir, 'dist', 'index.js'));
const clientVersion = require(join(clientDir, 'package.json')).version;

function parseArgs(argv) {
  const opts = {
    addr: '127.0.0.1:50051', jobs: 20000, batch: 100, producers: 1, concurrency: 64,
    queue: 'bench', rate: 0, seconds: 5,
  };
  for (let i = 2; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = inline ?? argv[++i];
    switch (flag) {
      case '--addr': opts.addr = value; break;
      case '--redis-url': break; // unused (the broker has it); same flags as every program
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
// Latency mode (--rate > 0): one producer offers --rate jobs/s for --seconds,
// one enqueue per job, open loop; enqueue-to-handler latency percentiles.
const latencyMode = opts.rate > 0;
if (latencyMode) opts.jobs = Math.floor(opts.rate * opts.seconds);
const latencies = [];
let acked = 0;
let other = 0;
let doneResolve;
const done = new Promise((resolve) => { doneResolve = resolve; });

const worker = new Worker({
  address: opts.addr, queues: [opts.queue], concurrency: opts.concurrency,
  workerId: 'bench-node', logger: null,
  onOutcome: (o) => {
    if (o.kind !== 'ack_ok') { other++; return; }
    if (++acked === opts.jobs) doneResolve(process.hrtime.bigint());
  },
});
worker.register('noop', async (job) => {
  if (latencyMode) latencies.push(Number(process.hrtime.bigint()) - job.json().sent_ns);
});
const running = worker.run({ installSignalHandlers: false });
await new Promise((r) => setTimeout(r, 300)); // Claim stream open, like jobwire_bench

const client = new Client({ address: opts.addr });
let failed = 0;
async function produce(p) {
  for (let first = p * opts.batch; first < opts.jobs; first += opts.producers * opts.batch) {
    const chunk = [];
    for (let n = first; n < Math.min(first + opts.batch, opts.jobs); n++) {
      chunk.push({
        type: 'noop',
        payload: { n, sent_ns: Number(process.hrtime.bigint()), pad: 'jobwire-bench' },
      });
    }
    try {
      const results = await client.enqueueBatch(opts.queue, chunk);
      failed += results.filter((r) => !r.ok).length;
    } catch (err) {
      failed += chunk.length;
      console.error(`enqueueBatch: ${err}`);
    }
  }
}

const start = process.hrtime.bigint();
async function offer() {
  // Open loop: job n is sent at start + n / rate, whatever came before.
  const startNs = Number(start);
  const pending = [];
  for (let n = 0; n < opts.jobs; n++) {
    const wait = (startNs + (n * 1e9) / opts.rate - Number(process.hrtime.bigint())) / 1e6;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const payload = { n, sent_ns: Number(process.hrtime.bigint()), pad: 'jobwire-bench' };
    pending.push(client.enqueue(opts.queue, 'noop', payload).catch((err) => {
      failed++;
      console.error(`enqueue: ${err}`);
    }));
  }
  await Promise.all(pending);
}
if (latencyMode) await offer();
else await Promise.all(Array.from({ length: opts.producers }, (_, p) => produce(p)));
if (failed > 0) {
  console.error(`${failed} enqueues failed`);
  process.exit(1);
}
const timeout = setTimeout(() => {
  console.error(`timed out: ${acked} of ${opts.jobs} acked`);
  process.exit(1);
}, 300000);
const end = await done;
clearTimeout(timeout);
const seconds = Number(end - start) / 1e9;
client.close();
await worker.stop();
await running;
if (latencyMode) {
  const sorted = latencies.sort((a, b) => a - b);
  const pct = (p) => (sorted.length
    ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] / 1e6 : 0);
  console.log(JSON.stringify({
    system: 'jobwire (node client)', jobs: opts.jobs, failed: failed + other,
    offered_per_s: opts.rate, p50_ms: pct(0.5), p99_ms: pct(0.99), p999_ms: pct(0.999),
    max_ms: pct(1), instrumentation_commands: 0,
  }));
  process.exit(failed + other === 0 ? 0 : 1);
}
console.log(JSON.stringify({
  system: 'jobwire (node client)', version: `jobwire node client ${clientVersion}`,
  jobs: opts.jobs, failed: failed + other, seconds, jobs_per_s: opts.jobs / seconds,
  settings: `enqueueBatch x${opts.batch} from ${opts.producers} producer loop(s); ` +
    `1 Worker, concurrency ${opts.concurrency}; completion counted by onOutcome ack_ok`,
  instrumentation_commands: 0,
}));
process.exit(failed + other === 0 ? 0 : 1);
