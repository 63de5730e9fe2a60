// BullMQ in the side-by-side benchmark (bench/side_protocol.md, driven
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

import {
  fail as failAs, now, offerOpenLoop, out, parseArgs, payloadText, sleep, summary, waitGo,
} from '../../side_protocol.mjs';

const require = createRequire(import.meta.url);
const bullmqVersion = require('bullmq/package.json').version;
const ioredisVersion = require('ioredis/package.json').version;

/** The protocol's payload as BullMQ job data (BullMQ serializes it to the same 64 bytes). */
const payload = (i, t) => JSON.parse(payloadText(i, t));

const fail = (msg) => failAs('bullmq side', msg);
const opts = parseArgs(process.argv, 'bullmq side', { redisUrl: 'redis://127.0.0.1:6379' });
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
    ({ enqueued, failed } = await offerOpenLoop(opts.jobs, opts.rate, startMs,
      (i, due) => queue.add('noop', payload(i, due), jobOpts)));
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
