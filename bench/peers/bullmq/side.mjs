// BullMQ in the side-by-side benchmark (/work/shared-bench/PROTOCOL.md, driven
// by bench/side_by_side.py): one program, two roles, run as two processes.
//
//   node bench/peers/bullmq/side.mjs --role worker   --redis-url redis://127.0.0.1:6379 --jobs 50000 --concurrency 50
//   node bench/peers/bullmq/side.mjs --role producer --redis-url redis://127.0.0.1:6379 --jobs 50000 --chunk 1000
//
// The producer prints "ready" after a PING on its connection, then waits for
// "go" on stdin. Bulk mode (--rate 0): Queue.addBulk of --chunk jobs, one call
// in flight at a time. Rate mode (--rate R): one Queue.add per job, job i sent
// at go + i/R whether or not earlier adds have answered.
// The worker: one Worker with --concurrency; a job counts as done on the
// Worker's local 'completed' event (fired once the job has been moved to
// completed in Redis; costs no Redis command). Every job carries
// removeOnComplete / removeOnFail, as in bench.mjs, so nothing piles up.
// JSON lines on stdout (info, ready, done); everything else on stderr.
import { Queue, Worker } from 'bullmq';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const bullmqVersion = require('bullmq/package.json').version;
const ioredisVersion = require('ioredis/package.json').version;

const now = () => performance.timeOrigin + performance.now();
const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function fail(msg) {
  process.stderr.write(`bullmq side: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    role: '', addr: '', redisUrl: 'redis://127.0.0.1:6379', queue: 'bench',
    jobs: 0, chunk: 1000, concurrency: 50, rate: 0,
  };
  const counts = { '--jobs': 'jobs', '--chunk': 'chunk', '--concurrency': 'concurrency', '--rate': 'rate' };
  for (let i = 2; i < argv.length; i++) {
    const eq = argv[i].indexOf('=');
    const flag = eq >= 0 ? argv[i].slice(0, eq) : argv[i];
    let value = eq >= 0 ? argv[i].slice(eq + 1) : undefined;
    const known = ['--role', '--addr', '--redis-url', '--queue', ...Object.keys(counts)];
    if (!known.includes(flag)) fail(`unknown flag ${argv[i]}`);
    if (value === undefined) {
      if (i + 1 >= argv.length) fail(`${flag} needs a value`);
      value = argv[++i];
    }
    if (flag === '--role') opts.role = value;
    else if (flag === '--addr') opts.addr = value; // unused (jobwire programs)
    else if (flag === '--redis-url') opts.redisUrl = value;
    else if (flag === '--queue') opts.queue = value;
    else {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0) fail(`${flag} wants a number >= 0, got ${value}`);
      opts[counts[flag]] = n;
    }
  }
  if (opts.role !== 'producer' && opts.role !== 'worker') fail('--role producer|worker is required');
  if (!Number.isInteger(opts.jobs) || opts.jobs < 1) fail('--jobs N (N >= 1) is required');
  if (!Number.isInteger(opts.chunk) || opts.chunk < 1) fail('--chunk wants an integer >= 1');
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) fail('--concurrency wants an integer >= 1');
  return opts;
}

/** The protocol's payload: {"i":..,"t":..,"p":"xx.."}, exactly 64 bytes of JSON. */
function payload(i, t) {
  const padLen = 64 - `{"i":${i},"t":${t},"p":""}`.length;
  if (padLen < 0) throw new Error(`payload of job ${i} does not fit in 64 bytes`);
  return { i, t, p: 'x'.repeat(padLen) };
}

/** Resolves with the time "go" arrived on stdin; rejects on anything else. */
function waitGo() {
  return new Promise((resolve, reject) => {
    let buf = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const at = now();
      process.stdin.pause();
      const line = buf.slice(0, nl).trim();
      if (line === 'go') resolve(at);
      else reject(new Error(`expected "go" on stdin, got ${JSON.stringify(line)}`));
    });
    process.stdin.on('end', () => reject(new Error('stdin closed before "go"')));
  });
}

/** Nearest-rank percentiles of the latencies (ms). */
function summary(lat) {
  const n = lat.length;
  if (n === 0) return { n: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(lat).sort();
  const pct = (p) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))];
  let sum = 0;
  for (const v of sorted) sum += v;
  return { n, mean: sum / n, p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: sorted[n - 1] };
}

const opts = parseArgs(process.argv);
const url = new URL(opts.redisUrl);
const connection = {
  host: url.hostname || '127.0.0.1',
  port: Number(url.port || 6379),
  ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
  ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
  ...(url.pathname.length > 1 ? { db: Number(url.pathname.slice(1)) } : {}),
};
const jobOpts = { removeOnComplete: true, removeOnFail: true };
const version = `bullmq ${bullmqVersion}, ioredis ${ioredisVersion}, node ${process.version}`;

async function runProducer() {
  const settings = opts.rate > 0
    ? `Queue.add per job, open loop at ${opts.rate}/s (not awaited before the next); removeOnComplete/removeOnFail`
    : `Queue.addBulk x${opts.chunk}, one call in flight; removeOnComplete/removeOnFail`;
  out({ event: 'info', system: 'bullmq', version, settings: `producer: ${settings}` });
  const queue = new Queue(opts.queue, { connection });
  queue.on('error', (err) => process.stderr.write(`queue error: ${err}\n`));
  await queue.waitUntilReady();
  const client = await queue.getBackend().client;
  await client.ping(); // the warm-up round trip; enqueues nothing
  out({ event: 'ready' });

  const startMs = await waitGo();
  let enqueued = 0;
  let failed = 0;
  if (opts.rate > 0) {
    // Job i is due at start + i/R; each tick sends every job already due.
    await new Promise((resolve) => {
      const interval = 1000 / opts.rate;
      let next = 0;
      let answered = 0;
      const settle = () => { if (++answered === opts.jobs) resolve(); };
      const tick = () => {
        const t = now();
        while (next < opts.jobs && startMs + next * interval <= t) {
          const due = startMs + next * interval;
          queue.add('noop', payload(next, due), jobOpts).then(() => { enqueued++; settle(); }, (err) => {
            failed++;
            process.stderr.write(`add: ${err}\n`);
            settle();
          });
          next++;
        }
        if (next < opts.jobs) setTimeout(tick, Math.max(0, startMs + next * interval - now()));
      };
      tick();
    });
  } else {
    for (let first = 0; first < opts.jobs; first += opts.chunk) {
      const t = now();
      const chunk = [];
      for (let i = first; i < Math.min(first + opts.chunk, opts.jobs); i++) {
        chunk.push({ name: 'noop', data: payload(i, t), opts: jobOpts });
      }
      try {
        await queue.addBulk(chunk);
        enqueued += chunk.length;
      } catch (err) {
        failed += chunk.length;
        process.stderr.write(`addBulk: ${err}\n`);
      }
    }
  }
  const endMs = now();
  out({ event: 'done', enqueued, start_ms: startMs, end_ms: endMs });
  if (failed > 0) process.stderr.write(`${failed} enqueues failed\n`);
  await Promise.race([queue.close(), sleep(5000)]);
  process.exit(failed > 0 ? 1 : 0);
}

async function runWorker() {
  out({
    event: 'info', system: 'bullmq', version,
    settings: `worker: 1 Worker, concurrency ${opts.concurrency}, default drainDelay/lock settings; ` +
      "completion counted by the Worker's local 'completed' event",
  });
  const latencies = [];
  let completed = 0;
  let firstDoneMs = 0;
  const worker = new Worker(opts.queue, async (job) => {
    latencies.push(now() - job.data.t); // job.data: the payload, parsed by BullMQ
  }, {
    connection: { ...connection, maxRetriesPerRequest: null }, // required by BullMQ Workers
    concurrency: opts.concurrency,
    autorun: true,
  });
  worker.on('error', (err) => process.stderr.write(`worker error: ${err}\n`));
  worker.on('failed', (job, err) => process.stderr.write(`job ${job?.id} failed: ${err}\n`));
  const finished = new Promise((resolve) => {
    worker.on('completed', () => {
      const t = now();
      if (completed === 0) firstDoneMs = t;
      if (++completed === opts.jobs) resolve(t);
    });
  });
  await worker.waitUntilReady();
  for (let waited = 0; !worker.isRunning(); waited += 5) {
    if (waited > 10000) fail('worker not running 10 s after it was ready');
    await sleep(5);
  }
  out({ event: 'ready' });

  const lastDoneMs = await finished;
  out({
    event: 'done', completed, first_done_ms: firstDoneMs, last_done_ms: lastDoneMs,
    latency_ms: summary(latencies),
  });
  const grace = setTimeout(() => {
    process.stderr.write('worker close took over 5 s; exiting\n');
    process.exit(0);
  }, 5000);
  await worker.close();
  clearTimeout(grace);
  process.exit(0);
}

(opts.role === 'producer' ? runProducer() : runWorker()).catch((err) => {
  process.stderr.write(`bullmq side (${opts.role}): ${err?.stack ?? err}\n`);
  process.exit(1);
});
