// package_test.sh: a consumer of the installed tarball, as a CommonJS module.
// Enqueues one job, processes it with a Worker, prints the finished job as
// one JSON line. Address: $JOBWIRE_ADDR; queue: argv[2].
'use strict';
const { Client, Worker, JobwireError, Status, Reason } = require('@jobwire/client');

const queue = process.argv[2] ?? 'package-test-cjs';
setTimeout(() => { console.error('consumer.cjs: timed out'); process.exit(1); }, 30_000).unref();

async function main() {
  const client = new Client();
  const { jobId } = await client.enqueue(queue, 'add', { a: 20, b: 22 });

  const worker = new Worker({ queues: [queue], logger: null });
  worker.register('add', async (job) => {
    const { a, b } = job.json();
    return { sum: a + b, module: 'cjs' };
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
}

main().catch((e) => { console.error(e); process.exit(1); });
