// package_test.sh: type-checked (tsc --noEmit, module nodenext) against the
// installed package's ES-module types (exports "import" -> dist/index.d.mts).
import { Client, Worker, JobwireError, JobCancelledError, Status, Reason, tracingMiddleware, type Middleware, type TracingOptions, type Job, type Outcome, type EnqueueOptions, type CallOptions, type EnqueueCallOptions, type Progress, type StopReason } from '@jobwire/client';

const options: EnqueueOptions = { priority: 5, maxAttempts: 3 };
const client = new Client({ address: '127.0.0.1:1', timeoutMs: 1000 });
const enqueued: Promise<{ jobId: string; duplicate: boolean }> = client.enqueue('q', 'add', { a: 1 }, options);
const call: CallOptions = { signal: AbortSignal.timeout(500), timeoutMs: 200 };
const job = client.getJob('q', 'id', call);
const both: EnqueueCallOptions = { ...options, signal: new AbortController().signal };
void client.enqueueBatch('q', [{ type: 'add', payload: 1, options }], { timeoutMs: 50 });
void client.cancel('q', 'id', call);
void client.ackBatch([{ queue: 'q', jobId: 'id', leaseToken: 't' }], call);
void client.enqueue('q', 'add', 1, both);
const worker = new Worker({ queues: ['q'], concurrency: 2, logger: null });
worker.register('add', async (job: Job) => ({ sum: (job.json() as { a: number }).a + 1 }));
worker.on('outcome', (o: Outcome) => { if (o.kind === 'ack_ok') void worker.stop(); });
// Run control: the job's timeout, cancel's answer, progress, the stop reason.
const progress: Progress = { percent: 50, data: { step: 'upload' } };
const requested: Promise<boolean> = client.cancel('q', 'id');
void client.enqueue('q', 'long', 1, { runTimeoutMs: 60_000, timeoutMs: 500 });
// Headers: an enqueue option, read back by getJob and by the handler.
const headers: Record<string, string> = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
void client.enqueue('q', 'long', 1, { headers, timeoutMs: 500 });
void client.enqueueBatch('q', [{ type: 'long', options: { headers } }]);
void client.getJob('q', 'id').then((j): Record<string, string> => j.headers);
worker.register('traced', (job: Job): string | undefined => job.headers['traceparent']);
void client.reportProgress('q', 'id', 't', progress, call);
// Middleware and tracing: typed without @opentelemetry/api installed (an
// optional peer dependency the fresh project does not have).
const timing: Middleware = async (job: Job, next: () => Promise<unknown>) => ({ inner: await next(), id: job.id });
worker.use(timing).use(tracingMiddleware({ tracerProvider: { getTracer: (name: string) => ({ name }) } }));
const tracingOptions: TracingOptions = {};
const traced = new Client({ tracing: true, tracerProvider: tracingOptions.tracerProvider });
worker.register('long', async (job: Job) => {
  await job.reportProgress({ percent: 10 });
  job.throwIfCancelled();
  const deadline: number | undefined = job.deadline;
  const why: StopReason | undefined = job.signal.reason instanceof JobCancelledError ? job.signal.reason.reason : undefined;
  return { deadline, why, timeoutMs: job.timeoutMs };
});
void client.getJob('q', 'id').then((j) => [j.timeoutMs, j.runDeadlineMs, j.cancelRequestedAtMs, j.progressPercent, j.progressData, j.progressJson()]);
const code: number = Status.NOT_FOUND;
const isError = (e: unknown): e is JobwireError => e instanceof JobwireError;
// The error details: reason (an open string; Reason lists the contract's), metadata, field, retryDelayMs.
const stale = (e: JobwireError): boolean => e.reason === Reason.LEASE_STALE;
const detail = (e: JobwireError): [string, string | undefined, string | undefined, number | undefined] =>
  [e.reason, e.metadata['state'], e.field, e.retryDelayMs];
const known: Reason = Reason.INVALID_FIELD;
void client.enqueueBatch('q', [{ type: 'add' }]).then((rs) => rs.map((r) => (r.ok ? '' : r.reason + r.error.reason)));
export { enqueued, job, code, isError, stale, detail, known, requested, traced };
void worker.run({ installSignalHandlers: true });
