export { Client, JobInfo } from './client';
export type { ClientOptions, EnqueueOptions, EnqueueResult, BatchJob, BatchResult, BatchAck, AckBatchResult, JobStateName } from './client';
export { Worker, Job, errorText } from './worker';
export type { WorkerOptions, RunOptions, Handler, Outcome, OutcomeKind, Logger, WorkerStats } from './worker';
export { JobwireError, NonRetryableError, Status, statusName } from './errors';
export { encodeValue } from './codec';
export type { SecurityOptions } from './proto';
