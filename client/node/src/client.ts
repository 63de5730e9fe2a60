import * as grpc from '@grpc/grpc-js';
import { JobwireError, statusName, Status } from './errors';
import { encodeValue } from './codec';
import { defaultAddress, DEFAULT_TIMEOUT_MS, makeConnection, makeStub, unary, type BrokerClient, type SecurityOptions } from './proto';
import { sendAckBatch } from './ack_coalescer';
import { EnqueueCoalescer } from './enqueue_coalescer';
import { toEnqueueRequest } from './enqueue_request';
import { callTimeoutMs, type CallOptions } from './call_options';
import type { AckRequest } from './generated/jobwire/v1/AckRequest';
import type { EnqueueRequest } from './generated/jobwire/v1/EnqueueRequest';
import type { EnqueueResponse__Output } from './generated/jobwire/v1/EnqueueResponse';
import type { EnqueueBatchResponse__Output } from './generated/jobwire/v1/EnqueueBatchResponse';
import type { GetJobResponse__Output } from './generated/jobwire/v1/GetJobResponse';
import { JobInfo } from './job_info';
import { waitJob, type WaitOptions } from './wait';
import { subscribe, type Subscription, type SubscribeOptions } from './subscribe';
import { progressRequest, type Progress } from './progress';
import type { CancelResponse__Output } from './generated/jobwire/v1/CancelResponse';
import type { ReportProgressRequest } from './generated/jobwire/v1/ReportProgressRequest';
import { PublishTracer, type Inject } from './publish_tracer';
import type { TracerProviderLike } from './tracing';

export { JobInfo } from './job_info';
export type { JobStateName } from './job_info';

export interface ClientOptions extends SecurityOptions {
  /** Broker `host:port`. Default: $JOBWIRE_ADDR, else `localhost:50051`. */
  address?: string;
  /** Deadline of every unary call, in ms (a call's own `timeoutMs` overrides it). Default 10000. */
  timeoutMs?: number;
  /**
   * Channel credentials, for what the tls options cannot express. Exclusive
   * with them. Default: plaintext (or TLS per the tls options).
   */
  credentials?: grpc.ChannelCredentials;
  /**
   * Extra grpc-js channel options, over the client's own (src/proto.ts).
   * `'grpc.service_config'` replaces the default service config, the
   * Client's: round_robin (ROUND_ROBIN_SERVICE_CONFIG in
   * src/proto.ts).
   */
  channelOptions?: grpc.ChannelOptions;
  /**
   * OpenTelemetry trace propagation (needs the optional peer dependency
   * @opentelemetry/api, loaded only then): each enqueue / enqueueBatch call
   * runs in a PRODUCER span `publish <queue>`, a child of the caller's
   * active context, whose W3C `traceparent` (and `tracestate`) go into each
   * job's headers, unless a job's headers already hold a `traceparent`
   * (kept as given). The caller's headers object is never changed. Default
   * false: no span, no header added.
   */
  tracing?: boolean;
  /** The provider of those spans (with `tracing`). Default: the global one. */
  tracerProvider?: TracerProviderLike;
}

/** Per-job options of enqueue; unset options take the broker defaults. */
export interface EnqueueOptions {
  /** -1000..1000, higher is claimed first (default 0). */
  priority?: number;
  /** Run no earlier than now + delayMs. Exclusive with runAt. */
  delayMs?: number;
  /** Run no earlier than this time (epoch ms or Date). Exclusive with delayMs. */
  runAt?: number | Date;
  /** 1..1000 runs before the job becomes DEAD (default: broker's, 3). */
  maxAttempts?: number;
  /** Dedup key: a second enqueue with it returns the first id, duplicate = true. */
  idempotencyKey?: string;
  /** Retry backoff base (default: broker's, 1 s). */
  backoffBaseMs?: number;
  /** Retry backoff cap (default: broker's, 1 h). */
  backoffMaxMs?: number;
  /**
   * How long the job is kept once completed (default: broker's, 24 h); 0 =
   * deleted on ack (getJob then rejects NOT_FOUND). At most the broker's
   * --completed_retention_max_ms (7 days).
   */
  completedRetentionMs?: number;
  /**
   * Longest a run may take, in ms, 0..604800000 (7 days); 0 or unset: the
   * broker's --default_job_timeout_ms (none out of the box). A run still
   * going at its deadline is stopped: its handler's `job.signal` aborts with
   * a JobCancelledError (reason 'timeout') and the attempt fails with error
   * "timeout" (retried or DEAD as any failure). EnqueueRequest.timeout_ms;
   * read back as JobInfo.timeoutMs. (Not `timeoutMs`, which is the enqueue
   * call's own deadline.)
   */
  runTimeoutMs?: number;
  /**
   * Metadata that travels with the job to its handler (`job.headers`) and is
   * read back as `JobInfo.headers`, e.g. W3C trace context (`traceparent`,
   * `tracestate`). EnqueueRequest.headers. The broker stores them unchanged
   * and never interprets them; it refuses (INVALID_ARGUMENT, reason
   * INVALID_FIELD, field `headers`; nothing stored) more than 64 entries, a
   * key that is not 1..128 bytes of [a-z0-9._-], a value over 4096 bytes, or
   * more than 16384 bytes of keys and values in all. A value that is not a
   * plain object of strings rejects with TypeError, sending nothing; unset
   * or `{}`: none.
   */
  headers?: Record<string, string>;
  /**
   * Groups the job under its queue's max_active_per_key and key_rate_limit
   * limits (e.g. a customer id; at most 128 bytes): at most that many jobs
   * of one key run at once, and start at that rate.
   * EnqueueRequest.concurrency_key.
   */
  concurrencyKey?: string;
  /**
   * Ids of jobs of the same queue (0..20, distinct) that must COMPLETE before
   * this job is due (docs/semantics.md, "Dependencies"); a job of another
   * queue (or partition) is named `"<queue>/<id>"` ("Parents in other
   * queues": its result and error are keyed so). Until then it is
   * PENDING with `JobInfo.dependenciesLeft` > 0; then its handler gets each
   * parent's result in `job.dependencyResults`. A parent that ends DEAD (or
   * is deleted) makes this job DEAD with error "dependency failed: <id>",
   * unless `runAfterFailedDependency`. An id that names no job of the queue
   * refuses the job: NOT_FOUND, reason DEPENDENCY_NOT_FOUND (metadata.job_id:
   * that id; nothing stored). A value that is not an array of strings
   * rejects with TypeError, sending nothing. EnqueueRequest.depends_on.
   */
  dependsOn?: string[];
  /**
   * A parent (`dependsOn`) that ends DEAD or is deleted counts as done,
   * without a result, instead of failing this job.
   * EnqueueRequest.run_after_failed_dependency.
   */
  runAfterFailedDependency?: boolean;
  /**
   * enqueueBatch only (an enqueue with it is refused: INVALID_ARGUMENT):
   * parents among the same batch's earlier jobs, by index in the `jobs`
   * array (docs/semantics.md, "Dependencies": "A graph in one batch"). Each
   * must be a job of the same queue, without repeats, and with `dependsOn`
   * at most 20 parents in all. They act as `dependsOn` ids, so one
   * enqueueBatch stores a small graph (fan-out, fan-in, chains) whose ids are
   * not known before; the child's `JobInfo.dependsOn` then lists the ids its
   * batch parents got. A child whose batch parent was refused is refused too:
   * INVALID_ARGUMENT (message `jobs[i].depends_on_batch_index[k]: names
   * jobs[j], which was refused`, with the proto's field name) when the
   * parent was invalid,
   * NOT_FOUND, reason DEPENDENCY_NOT_FOUND (`... which was not stored`) when
   * it was not stored. A value that is not an array of int32 integers
   * rejects with TypeError, sending nothing.
   * EnqueueRequest.depends_on_batch_index.
   */
  dependsOnBatchIndex?: number[];
}

/**
 * The last argument of enqueue: the job's options and the call's (`signal`,
 * `timeoutMs`; see CallOptions).
 */
export interface EnqueueCallOptions extends EnqueueOptions, CallOptions {}

export interface EnqueueResult {
  jobId: string;
  duplicate: boolean;
}

/** One job of enqueueBatch. */
export interface BatchJob {
  type: string;
  payload?: unknown;
  options?: EnqueueOptions;
}

/**
 * A per-job result of enqueueBatch: stored (ok) or the job's own error;
 * `reason` is the result's reason (see Reason), also `error.reason`.
 */
export type BatchResult =
  | { ok: true; jobId: string; duplicate: boolean }
  | { ok: false; code: number; codeName: string; message: string; reason: string; error: JobwireError };

/** One ack of ackBatch: the job, the lease token its claim carried, its result. */
export interface BatchAck {
  queue: string;
  jobId: string;
  leaseToken: string;
  /** Bytes unchanged, `undefined` empty, anything else JSON (as a handler's return value). */
  result?: unknown;
}

/**
 * A per-ack result of ackBatch: stored (ok) or the ack's own error; `reason`
 * is the result's reason (see Reason), also `error.reason`.
 */
export type AckBatchResult =
  | { ok: true }
  | { ok: false; code: number; codeName: string; message: string; reason: string; error: JobwireError };

/**
 * The `ok: false` form of a per-item error of a batch call; `error.reason` is
 * the result's reason field (see Reason).
 */
function itemError(code: number, message: string, reason: string) {
  return { ok: false as const, code, codeName: statusName(code), message, reason, error: new JobwireError(code, message, { reason }) };
}

/** One Enqueue call: the stored job's id and duplicate flag. */
async function sendEnqueue(stub: BrokerClient, req: EnqueueRequest, timeoutMs: number,
  metadata: grpc.Metadata, signal?: AbortSignal): Promise<EnqueueResult> {
  const res = await unary<EnqueueRequest, EnqueueResponse__Output>(stub, 'Enqueue', req, timeoutMs, metadata, signal);
  return { jobId: res.jobId, duplicate: res.duplicate };
}

export { toEnqueueRequest } from './enqueue_request';

/**
 * The producer / admin side: one gRPC channel, every call with a deadline.
 * Failures reject with JobwireError. Every call takes an optional last
 * CallOptions (`signal`, `timeoutMs`; merged into enqueue's options): an
 * aborted call rejects with the signal's reason when it is an Error, else a
 * DOMException named 'AbortError' (call_options.ts); a timeoutMs that is not
 * a finite number > 0 rejects with TypeError.
 */
export class Client {
  readonly address: string;
  readonly timeoutMs: number;
  private readonly stub: BrokerClient;
  /** Per-call metadata (the bearer token, kept in the closure only). */
  private readonly metadata: () => grpc.Metadata;
  /** With `tracing: true`. */
  private readonly publisher?: PublishTracer;
  /** enqueue's calls without a signal or timeoutMs of their own (enqueue_coalescer.ts). */
  private readonly enqueues: EnqueueCoalescer;

  /**
   * Throws JobwireError INVALID_ARGUMENT when a TLS PEM file cannot be read
   * or does not parse (see SecurityOptions), and an Error when `tracing` is
   * on and @opentelemetry/api cannot be loaded.
   */
  constructor(options: ClientOptions = {}) {
    this.address = options.address ?? defaultAddress();
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const conn = makeConnection(options);
    this.metadata = conn.metadata;
    this.stub = makeStub(this.address, conn.credentials, options.channelOptions);
    if (options.tracing === true) this.publisher = new PublishTracer(options.tracerProvider);
    this.enqueues = new EnqueueCoalescer(
      (req, timeoutMs) => sendEnqueue(this.stub, req, timeoutMs, this.metadata()),
      async (reqs, timeoutMs) => (await unary<{ jobs: EnqueueRequest[] }, EnqueueBatchResponse__Output>(
        this.stub, 'EnqueueBatch', { jobs: reqs }, timeoutMs, this.metadata())).results,
      this.timeoutMs);
  }

  /**
   * Stores one job. `payload`: bytes unchanged, anything else as JSON.
   * `options`: the job's (EnqueueOptions) and the call's (`signal`, `timeoutMs`).
   */
  async enqueue(queue: string, type: string, payload?: unknown, options?: EnqueueCallOptions): Promise<EnqueueResult> {
    const send = async (inject?: Inject) => {
      const timeoutMs = callTimeoutMs(options, this.timeoutMs);
      const req = toEnqueueRequest(queue, type, payload, options);
      if (inject) req.headers = inject(req.headers);
      if (options?.signal == null && options?.timeoutMs == null) return this.enqueues.enqueue(req);
      return sendEnqueue(this.stub, req, timeoutMs, this.metadata(), options?.signal);
    };
    if (!this.publisher) return send();
    return this.publisher.publish(queue, {}, async (inject, span) => {
      const r = await send(inject);
      span.setAttribute('messaging.message.id', r.jobId);
      return r;
    });
  }

  /**
   * Stores up to 1000 jobs; one result per job, in order. Per-job errors are
   * returned (ok: false), not thrown (bad headers: INVALID_ARGUMENT naming
   * `jobs[i].headers`; a dependsOn id naming no job: NOT_FOUND, reason
   * DEPENDENCY_NOT_FOUND; a job whose `dependsOnBatchIndex` names a refused
   * job of the batch: INVALID_ARGUMENT or NOT_FOUND / DEPENDENCY_NOT_FOUND,
   * see EnqueueOptions.dependsOnBatchIndex); a call-level error (empty or
   * oversized batch, broker unreachable) rejects, as does a TypeError for
   * malformed headers, dependsOn or dependsOnBatchIndex of any job (nothing
   * sent). With `dependsOnBatchIndex` a batch stores a graph of jobs in one
   * call (a job names its parents among the earlier entries of `jobs`).
   */
  async enqueueBatch(queue: string, jobs: BatchJob[], options?: CallOptions): Promise<BatchResult[]> {
    const send = async (inject?: Inject): Promise<BatchResult[]> => {
      const timeoutMs = callTimeoutMs(options, this.timeoutMs);
      const reqs = jobs.map((j) => toEnqueueRequest(queue, j.type, j.payload, j.options));
      if (inject) for (const r of reqs) r.headers = inject(r.headers);
      const res = await unary<{ jobs: EnqueueRequest[] }, EnqueueBatchResponse__Output>(
        this.stub, 'EnqueueBatch', { jobs: reqs }, timeoutMs, this.metadata(), options?.signal);
      return res.results.map((r): BatchResult =>
        r.code === Status.OK ? { ok: true, jobId: r.jobId, duplicate: r.duplicate } : itemError(r.code, r.message, r.reason));
    };
    if (!this.publisher) return send();
    const count = Array.isArray(jobs) ? jobs.length : 0;
    return this.publisher.publish(queue, { 'messaging.batch.message_count': count }, (inject) => send(inject));
  }

  /**
   * Completes up to 1000 active jobs, of one or several queues, in one call
   * (what a Worker does with its acks); one result per ack, in order. Each
   * ack is settled on its own: per-ack errors (INVALID_ARGUMENT, NOT_FOUND,
   * FAILED_PRECONDITION for a stale token) are returned (ok: false), not
   * thrown. A call-level error (empty or oversized batch, UNAUTHENTICATED,
   * PERMISSION_DENIED, broker unreachable) rejects; after UNAVAILABLE some
   * acks may be stored: repeat them all with the same tokens.
   */
  async ackBatch(acks: BatchAck[], options?: CallOptions): Promise<AckBatchResult[]> {
    const timeoutMs = callTimeoutMs(options, this.timeoutMs);
    const reqs = acks.map((a): AckRequest => ({
      queue: a.queue, jobId: a.jobId, leaseToken: a.leaseToken, result: encodeValue(a.result),
    }));
    const results = await sendAckBatch(this.stub, reqs, timeoutMs, this.metadata(), options?.signal);
    return results.map((r): AckBatchResult => (r.code === Status.OK ? { ok: true } : itemError(r.code, r.message, r.reason)));
  }

  /** Reads one job in whatever state it is. */
  async getJob(queue: string, jobId: string, options?: CallOptions): Promise<JobInfo> {
    return this.readJob({ queue, jobId }, options);
  }

  /**
   * The job enqueued with the idempotency key `key`, while the key's dedup
   * window lasts; rejects NOT_FOUND when none.
   */
  async getJobByIdempotencyKey(queue: string, key: string, options?: CallOptions): Promise<JobInfo> {
    return this.readJob({ queue, idempotencyKey: key }, options);
  }

  // GetJob by id or by key (an instance property, not a method: the
  // prototype holds the public calls only).
  private readonly readJob = async (req: { queue: string; jobId?: string; idempotencyKey?: string }, options?: CallOptions): Promise<JobInfo> => {
    const timeoutMs = callTimeoutMs(options, this.timeoutMs);
    const res = await unary<typeof req, GetJobResponse__Output>(
      this.stub, 'GetJob', req, timeoutMs, this.metadata(), options?.signal);
    if (!res.job) throw new JobwireError(grpc.status.INTERNAL, 'GetJob answered without a job');
    return new JobInfo(res.job);
  };

  /**
   * Waits until the job finishes (one WaitJob stream; no polling) and
   * resolves with it COMPLETED (`result` / `resultJson()`: the worker's
   * result; empty for a job deleted on ack). A job already finished answers
   * at once. Options (WaitOptions): `timeoutMs`, the limit of the whole wait
   * (unset: none; not the client's `timeoutMs`), `signal`, `onUpdate`.
   *
   * Rejects with JobDeadError (`.job`) when the job ends DEAD,
   * WaitTimeoutError (`.lastJob`) when `timeoutMs` passes first, the abort
   * rule of call_options.ts when `signal` aborts, what `onUpdate` throws,
   * else JobwireError: NOT_FOUND (no such job, or deleted meanwhile),
   * INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED
   * (reason TOO_MANY_WAITS). UNAVAILABLE (broker restarting or draining,
   * Redis down) does not reject, nor does CANCELLED that this client did not
   * cause (how a draining gRPC C++ broker may end a call, grpc/grpc#41785):
   * the wait calls again after the Claim stream's reconnect backoff with the
   * time that remains, so without `timeoutMs` or `signal` it waits out an
   * outage however long it lasts.
   */
  async wait(queue: string, jobId: string, options?: WaitOptions): Promise<JobInfo> {
    return waitJob(this.stub, this.metadata, queue, jobId, options);
  }

  /**
   * Follows the events of `queues` (a name or 1..100 names, no repeats):
   * resolves with a Subscription, an AsyncIterable<QueueEvent> (for await)
   * with close(), once the broker has confirmed the subscription, so every
   * event that happens after the promise resolves is delivered. Events of
   * one queue partition come in the order they happened. Options
   * (SubscribeOptions): `kinds` (unset or empty: all), `includeDetails`
   * (fill `result` of 'completed', `error` of 'retry' / 'dead' and
   * `progressData` of 'progress'),
   * `signal`, `timeoutMs` (how long the broker has to confirm; default the
   * client's timeoutMs).
   *
   * Rejects with TypeError for bad options or a kind not in EVENT_KINDS
   * (sending nothing), the abort rule of call_options.ts when `signal`
   * aborts first, else JobwireError: INVALID_ARGUMENT (queues),
   * UNAUTHENTICATED, PERMISSION_DENIED (each queue needs read access),
   * RESOURCE_EXHAUSTED (reason TOO_MANY_SUBSCRIPTIONS), UNAVAILABLE (broker
   * unreachable or draining), DEADLINE_EXCEEDED (not confirmed in time).
   *
   * Once subscribed, a stream that ends with UNAVAILABLE (a broker
   * restarting or draining), CANCELLED that this client did not cause (how a
   * draining gRPC C++ broker may end a stream, grpc/grpc#41785; never one
   * the client cancelled: close(), the signal), or RESOURCE_EXHAUSTED with
   * reason SUBSCRIBER_TOO_SLOW or TOO_MANY_SUBSCRIPTIONS, is subscribed again
   * inside next() with the Claim stream's reconnect backoff (the broker's
   * retryDelayMs when larger), for as long as it takes; then one event of
   * kind 'events_missed' comes first, since the gap's events are lost (so
   * does a broker message telling of lost events). Any other error rejects
   * the iteration (for await throws it) and ends the subscription; aborting
   * `signal` later ends it as close() does.
   */
  async subscribe(queues: string | readonly string[], options?: SubscribeOptions): Promise<Subscription> {
    return subscribe(this.stub, this.metadata, queues, options, this.timeoutMs);
  }

  /**
   * Cancels a job. PENDING: it becomes DEAD with error "cancelled" at once;
   * resolves false. ACTIVE: its run is asked to stop (JobInfo
   * cancelRequestedAtMs is set; the Worker holding it aborts `job.signal`
   * with a JobCancelledError, reason 'cancelled'), and it becomes DEAD
   * "cancelled" when the worker Fails it or its lease runs out (an Ack that
   * comes first still completes it); resolves true (CancelResponse
   * cancel_requested). Cancelling it again resolves true and changes nothing.
   * Rejects with JobwireError NOT_FOUND, FAILED_PRECONDITION (reason
   * JOB_STATE: the job is completed or dead), INVALID_ARGUMENT, UNAVAILABLE.
   */
  async cancel(queue: string, jobId: string, options?: CallOptions): Promise<boolean> {
    const timeoutMs = callTimeoutMs(options, this.timeoutMs);
    const res = await unary<{ queue: string; jobId: string }, CancelResponse__Output>(
      this.stub, 'Cancel', { queue, jobId }, timeoutMs, this.metadata(), options?.signal);
    return res.cancelRequested;
  }

  /**
   * Reports the progress of an ACTIVE job held with `leaseToken` (what a
   * Worker's `job.reportProgress` does): it replaces the job's progress
   * (JobInfo progressPercent / progressData) and emits a 'progress' event.
   * Rejects with TypeError for a malformed `progress` (see Progress),
   * sending nothing, else with JobwireError INVALID_ARGUMENT (percent outside
   * 0..100, data over 4096 bytes, neither given; nothing changed),
   * NOT_FOUND, FAILED_PRECONDITION (stale token or job not active; reason
   * JOB_CANCEL_REQUESTED when Cancel asked the run to stop, RUN_TIMED_OUT
   * when it passed its deadline), UNAVAILABLE.
   */
  async reportProgress(queue: string, jobId: string, leaseToken: string, progress: Progress, options?: CallOptions): Promise<void> {
    const timeoutMs = callTimeoutMs(options, this.timeoutMs);
    const req = progressRequest(queue, jobId, leaseToken, progress);
    await unary<ReportProgressRequest, object>(this.stub, 'ReportProgress', req, timeoutMs, this.metadata(), options?.signal);
  }

  /** Closes the channel. */
  close(): void {
    this.stub.close();
  }
}
