// Enqueues one "send-email" job on the "emails" queue (any worker, Node or
// Python, consuming "emails" can run it).
//
//   JOBWIRE_ADDR=localhost:50051 node producer.mjs alice@example.com "Hello"
import { Client } from '../../client/node/dist/index.js';

const [to = 'alice@example.com', subject = 'Hello from jobwire'] = process.argv.slice(2);
const client = new Client(); // address: $JOBWIRE_ADDR, else localhost:50051

try {
  const { jobId, duplicate } = await client.enqueue('emails', 'send-email', { to, subject }, {
    maxAttempts: 5,
  });
  console.log(`enqueued ${jobId}${duplicate ? ' (duplicate)' : ''}`);
} catch (err) {
  console.error(`enqueue failed: ${err.codeName ?? ''} ${err.details ?? err.message}`);
  process.exitCode = 1;
} finally {
  client.close();
}
