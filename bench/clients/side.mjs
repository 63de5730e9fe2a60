// jobwire through the Node.js client in the side-by-side benchmark
// (bench/side_protocol.md, driven by bench/side_by_side.py): one
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

import {
  fail as failAs, now, offerOpenLoop, out, parseArgs, payloadText, sleep, summary, waitGo,
} from '../side_protocol.mjs';

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

/** The protocol's payload, sent as bytes. */
const payload = (i, t) => Buffer.from(payloadText(i, t), 'latin1');

/** One GetJob of an id that does not exist: a round trip that stores nothing. */
async function probe(client, queue) {
  try {
    await client.getJob(queue, 'side-bench-warmup-missing');
  } catch (err) {
    if (err?.code !== Status.NOT_FOUND) throw err;
  }
}

const fail = (msg) => failAs('jobwire side', msg);
// 1000: the broker's EnqueueBatch limit.
const opts = parseArgs(process.argv, 'jobwire side', { addr: '127.0.0.1:50051', maxChunk: 1000 });
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
    ({ enqueued, failed } = await offerOpenLoop(opts.jobs, opts.rate, startMs,
      (i, due) => client.enqueue(opts.queue, 'noop', payload(i, due))));
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
    settings: `worker: 1 Worker, concurrency ${opts.concurrency}, one Work stream carrying the coalesced acks; ` +
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
  // (a probe Client on the same address), then give the Work stream, opened
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
