// jobwire through the Node.js client in the side-by-side benchmark
// (/work/shared-bench/PROTOCOL.md, driven by bench/side_by_side.py): one
// program, two roles, run as two processes.
//
//   node bench/clients/side.mjs --role worker   --addr 127.0.0.1:50051 --jobs 50000 --concurrency 50
//   node bench/clients/side.mjs --role producer --addr 127.0.0.1:50051 --jobs 50000 --chunk 1000
//
// Uses the built client (client/node/dist, `bash client/node/build.sh`), or
// the one at $JOBWIRE_NODE_CLIENT.
// The producer prints "ready" after one GetJob of a missing id (NOT_FOUND: a
// round trip that enqueues nothing), then waits for "go" on stdin. Bulk mode
// (--rate 0): Client.enqueueBatch of --chunk jobs, one call in flight at a
// time. Rate mode (--rate R): one Client.enqueue per job, job i sent at
// go + i/R whether or not earlier calls have answered.
// The worker: one Worker with --concurrency; a job counts as done on its
// onOutcome 'ack_ok' (the broker confirmed the Ack). Jobs keep the broker's
// default completed retention.
// JSON lines on stdout (info, ready, done); everything else on stderr.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const clientDir = process.env.JOBWIRE_NODE_CLIENT || join(here, '..', '..', 'client', 'node');
let jobwire;
try {
  jobwire = require(join(clientDir, 'dist', 'index.js'));
} catch (err) {
  process.stderr.write(`jobwire side: cannot load the Node client from ${clientDir}/dist ` +
    `(build it with client/node/build.sh, or set $JOBWIRE_NODE_CLIENT): ${err.message}\n`);
  process.exit(2);
}
const { Client, Worker, Status } = jobwire;
const clientVersion = require(join(clientDir, 'package.json')).version;
let grpcVersion = '?';
try {
  grpcVersion = createRequire(join(clientDir, 'package.json'))('@grpc/grpc-js/package.json').version;
} catch { /* only for the info line */ }

const now = () => performance.timeOrigin + performance.now();
const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function fail(msg) {
  process.stderr.write(`jobwire side: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    role: '', addr: '127.0.0.1:50051', redisUrl: '', queue: 'bench',
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
    else if (flag === '--addr') opts.addr = value;
    else if (flag === '--redis-url') opts.redisUrl = value; // unused: the broker has it
    else if (flag === '--queue') opts.queue = value;
    else {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0) fail(`${flag} wants a number >= 0, got ${value}`);
      opts[counts[flag]] = n;
    }
  }
  if (opts.role !== 'producer' && opts.role !== 'worker') fail('--role producer|worker is required');
  if (!Number.isInteger(opts.jobs) || opts.jobs < 1) fail('--jobs N (N >= 1) is required');
  if (!Number.isInteger(opts.chunk) || opts.chunk < 1 || opts.chunk > 1000) {
    fail('--chunk wants an integer 1..1000 (the broker\'s EnqueueBatch limit)');
  }
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) fail('--concurrency wants an integer >= 1');
  return opts;
}

/** The protocol's payload: {"i":..,"t":..,"p":"xx.."}, exactly 64 bytes of JSON (sent as bytes). */
function payload(i, t) {
  const head = `{"i":${i},"t":${t},"p":"`;
  const padLen = 64 - head.length - 2;
  if (padLen < 0) throw new Error(`payload of job ${i} does not fit in 64 bytes`);
  return Buffer.from(`${head}${'x'.repeat(padLen)}"}`, 'latin1');
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

/** One GetJob of an id that does not exist: a round trip that stores nothing. */
async function probe(client, queue) {
  try {
    await client.getJob(queue, 'side-bench-warmup-missing');
  } catch (err) {
    if (err?.code !== Status.NOT_FOUND) throw err;
  }
}

const opts = parseArgs(process.argv);
const system = 'jobwire (node client)';
const version = `jobwire node client ${clientVersion}, @grpc/grpc-js ${grpcVersion}, node ${process.version}`;

async function runProducer() {
  const settings = opts.rate > 0
    ? `Client.enqueue per job, open loop at ${opts.rate}/s (not awaited before the next)`
    : `Client.enqueueBatch x${opts.chunk}, one call in flight`;
  out({ event: 'info', system, version, settings: `producer: ${settings}; broker default retention` });
  const client = new Client({ address: opts.addr });
  await probe(client, opts.queue);
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
          client.enqueue(opts.queue, 'noop', payload(next, due)).then(() => { enqueued++; settle(); }, (err) => {
            failed++;
            process.stderr.write(`enqueue: ${err}\n`);
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
        chunk.push({ type: 'noop', payload: payload(i, t) });
      }
      try {
        const results = await client.enqueueBatch(opts.queue, chunk);
        for (const r of results) {
          if (r.ok) enqueued++;
          else if (failed++ === 0) process.stderr.write(`enqueueBatch item: ${r.codeName} ${r.message}\n`);
        }
      } catch (err) {
        failed += chunk.length;
        process.stderr.write(`enqueueBatch: ${err}\n`);
      }
    }
  }
  const endMs = now();
  out({ event: 'done', enqueued, start_ms: startMs, end_ms: endMs });
  if (failed > 0) process.stderr.write(`${failed} enqueues failed\n`);
  client.close();
  process.exit(failed > 0 ? 1 : 0);
}

async function runWorker() {
  out({
    event: 'info', system, version,
    settings: `worker: 1 Worker, concurrency ${opts.concurrency}, one Claim stream, acks coalesced into AckBatch; ` +
      "completion counted by onOutcome 'ack_ok'",
  });
  const latencies = [];
  let completed = 0;
  let others = 0;
  let firstDoneMs = 0;
  let doneResolve;
  const finished = new Promise((resolve) => { doneResolve = resolve; });
  const worker = new Worker({
    address: opts.addr, queues: [opts.queue], concurrency: opts.concurrency,
    workerId: `side-bench-node-${process.pid}`,
    onOutcome: (o) => {
      if (o.kind !== 'ack_ok') {
        if (others++ < 10) process.stderr.write(`job ${o.job?.id}: ${o.kind} ${o.codeName ?? ''}\n`);
        return;
      }
      const t = now();
      if (completed === 0) firstDoneMs = t;
      if (++completed === opts.jobs) doneResolve(t);
    },
  });
  worker.register('noop', (job) => {
    latencies.push(now() - job.json().t);
  });
  const running = worker.run({ installSignalHandlers: false });
  running.catch((err) => fail(`worker run: ${err}`));
  // The Worker has no "stream open" signal: check that the broker answers
  // (a probe Client on the same address), then give the Claim stream, opened
  // by run() at once, a moment to reach the broker.
  const probeClient = new Client({ address: opts.addr });
  await probe(probeClient, opts.queue);
  probeClient.close();
  await sleep(200);
  out({ event: 'ready' });

  const lastDoneMs = await finished;
  out({
    event: 'done', completed, first_done_ms: firstDoneMs, last_done_ms: lastDoneMs,
    latency_ms: summary(latencies),
  });
  if (others > 0) process.stderr.write(`${others} outcomes other than ack_ok\n`);
  const grace = setTimeout(() => {
    process.stderr.write('worker stop took over 5 s; exiting\n');
    process.exit(0);
  }, 5000);
  await worker.stop();
  clearTimeout(grace);
  process.exit(0);
}

(opts.role === 'producer' ? runProducer() : runWorker()).catch((err) => {
  process.stderr.write(`jobwire side (${opts.role}): ${err?.stack ?? err}\n`);
  process.exit(1);
});
