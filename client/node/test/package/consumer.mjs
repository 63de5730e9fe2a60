// package_test.sh: a consumer of the installed tarball, as an ES module.
// Enqueues one job, processes it with a Worker, prints the finished job as
// one JSON line. Address: $JOBWIRE_ADDR; queue: argv[2].
import { createRequire } from 'node:module';
import { Client, Worker, JobwireError, Status, Reason } from '@jobwire/client';

const queue = process.argv[2] ?? 'package-test-esm';
setTimeout(() => { console.error('consumer.mjs: timed out'); process.exit(1); }, 30_000).unref();

// import and require must hand out the same classes (one copy of the code).
const cjs = createRequire(import.meta.url)('@jobwire/client');
if (cjs.Client !== Client || cjs.JobwireError !== JobwireError) throw new Error('import and require load different copies');

// Tracing needs the optional peer dependency @opentelemetry/api, which this
// project does not have: asking for it says so; nothing else loads it.
try {
  new Client({ tracing: true });
  throw new Error('a tracing Client was made without @opentelemetry/api');
} catch (e) {
  if (!/npm install @opentelemetry\/api/.test(e.message)) throw e;
}

const client = new Client();
const { jobId } = await client.enqueue(queue, 'add', { a: 2, b: 3 });

const worker = new Worker({ queues: [queue], logger: null });
worker.use(async (job, next) => ({ ...(await next()), module: 'esm' })); // a middleware sets `module`
worker.register('add', async (job) => {
  const { a, b } = job.json();
  return { sum: a + b };
});
worker.on('outcome', (o) => { if (o.job.id === jobId) void worker.stop(); });
await worker.run({ installSignalHandlers: false });

const info = await client.getJob(queue, jobId);
try {
  await client.getJob(queue, 'no-such-job');
  throw new Error('getJob of a missing job succeeded');
} catch (e) {
  if (!(e instanceof JobwireError) || e.code !== Status.NOT_FOUND) throw e;
  // The error details, decoded with the descriptor shipped in the tarball.
  if (e.reason !== Reason.JOB_NOT_FOUND) throw new Error(`reason ${JSON.stringify(e.reason)}, expected JOB_NOT_FOUND`);
}
client.close();
console.log(JSON.stringify({ state: info.state, attempts: info.attempts, result: info.resultJson() }));
