// package_test.sh: type-checked (tsc --noEmit, module nodenext) against the
// installed package's CommonJS types (exports "require" -> dist/index.d.ts).
import jobwire = require('@jobwire/client');

const client: jobwire.Client = new jobwire.Client({ address: '127.0.0.1:1' });
const info: Promise<jobwire.JobInfo> = client.getJob('q', 'id');
const state: jobwire.JobStateName = 'JOB_STATE_COMPLETED';
const reason: jobwire.Reason = jobwire.Reason.JOB_STATE;
const detail = (e: jobwire.JobwireError): [string, Record<string, string>, string | undefined, number | undefined] =>
  [e.reason, e.metadata, e.field, e.retryDelayMs];
const worker = new jobwire.Worker({ queues: ['q'] });
worker.register('t', async (job: jobwire.Job) => job.payload);
export = { info, state, reason, detail };
