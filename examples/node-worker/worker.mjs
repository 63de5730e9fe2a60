// Runs "send-email" jobs from the "emails" queue. Stops gracefully on
// SIGTERM / Ctrl-C (running jobs finish and are acked first).
//
//   JOBWIRE_ADDR=localhost:50051 node worker.mjs
import { Worker, NonRetryableError } from '../../client/node/dist/index.js';

const worker = new Worker({
  queues: ['emails'],        // address: $JOBWIRE_ADDR, else localhost:50051
  concurrency: 4,
  onOutcome: (o) => console.log(`${o.kind} ${o.job.id} attempt ${o.job.attempt}${o.failOutcome ? ' ' + o.failOutcome : ''}`),
});

worker.register('send-email', async (job) => {
  const { to, subject } = job.json();
  if (typeof to !== 'string' || !to.includes('@')) {
    throw new NonRetryableError(`bad recipient ${JSON.stringify(to)}`); // straight to DEAD
  }
  console.log(`sending "${subject}" to ${to} (job ${job.id}, attempt ${job.attempt})`);
  await new Promise((r) => setTimeout(r, 200)); // pretend to talk to an SMTP server
  return { sent: true, to };                     // stored as the job's JSON result
});

await worker.run({ installSignalHandlers: true }); // resolves after SIGTERM / SIGINT
console.log('worker stopped');
