// BrokerClient: the dashboard's only way to the broker, the AdminService and
// BrokerService over gRPC (the .proto files loaded at start with
// @grpc/proto-loader). Every call takes the caller's bearer token (or none)
// and sends it as `authorization: Bearer <token>` metadata; the token is
// never logged. Calls resolve with the response message (snake_case fields,
// int64 as number, enums as their names, bytes as Buffer) or reject with a
// BrokerError carrying the gRPC status code.
// Thread safety: one instance is shared by every request (grpc-js channels
// are safe to share).
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export interface QueueStats {
  queue: string;
  pending_due: number;
  pending_scheduled: number;
  active: number;
  completed: number;
  dead: number;
  paused: boolean;
  oldest_due_age_ms: number;
  partitions: number;
  /** Null without a rate limit. */
  rate_limit: { count: number; interval_ms: number; burst: number } | null;
  /** 0: no limit. */
  max_active: number;
  /** 0: no limit. */
  max_active_per_key: number;
  /** Null without a rate limit per concurrency key. */
  key_rate_limit: { count: number; interval_ms: number; burst: number } | null;
}

export type EventKind = 'EVENT_KIND_ENQUEUED' | 'EVENT_KIND_COMPLETED' | 'EVENT_KIND_RETRY' | 'EVENT_KIND_DEAD' | string;

export interface QueueEvent {
  kind: EventKind;
  queue: string;
  job_id: string;
  at_ms: number;
  type?: string;
  attempts?: number;
  /** With include_details: the error of a retry or death. */
  error?: string;
  progress_percent?: number;
}

export interface SubscribeResponse {
  events: QueueEvent[];
  subscribed: boolean;
  events_missed: boolean;
}

/** UpdateQueueRequest (admin.proto): an absent field is unchanged. */
export interface UpdateQueueRequest {
  queue: string;
  partitions?: number;
  default_job_timeout_ms?: number;
  rate_limit?: { count: number; interval_ms: number; burst: number };
  max_active?: number;
  max_active_per_key?: number;
  key_rate_limit?: { count: number; interval_ms: number; burst: number };
}

/** CreateQueueRequest (admin.proto): UpdateQueueRequest's fields; an absent one is the default. */
export type CreateQueueRequest = UpdateQueueRequest;

/** EnqueueRequest (broker.proto), the fields the dashboard sets. */
export interface EnqueueRequest {
  queue: string;
  type: string;
  payload: Buffer;
  priority?: number;
  delay_ms?: number;
  max_attempts?: number;
  idempotency_key?: string;
  concurrency_key?: string;
  timeout_ms?: number;
}

/** Schedule (admin.proto), the fields the dashboard sets: exactly one of cron and interval_ms. */
export interface ScheduleRequest {
  name: string;
  cron?: string;
  interval_ms?: number;
  time_zone: string;
  job: EnqueueRequest;
  jitter_ms: number;
  start_at_ms: number;
  end_at_ms: number;
  catch_up: 'CATCH_UP_SKIP' | 'CATCH_UP_ONCE';
}

export type JobState = 'JOB_STATE_PENDING' | 'JOB_STATE_ACTIVE' | 'JOB_STATE_COMPLETED' | 'JOB_STATE_DEAD';

export interface Job {
  id: string;
  queue: string;
  type: string;
  payload: Buffer;
  priority: number;
  state: JobState;
  attempts: number;
  max_attempts: number;
  available_at_ms: number;
  lease_expires_at_ms: number;
  result: Buffer;
  error: string;
  idempotency_key: string;
  created_at_ms: number;
  finished_at_ms: number;
  backoff_base_ms: number;
  backoff_max_ms: number;
  worker_id: string;
  timeout_ms: number;
  run_deadline_ms: number;
  cancel_requested_at_ms: number;
  progress_percent?: number;
  progress_data: Buffer;
  headers: Record<string, string>;
  /** The error history (Job.errors): the last failed runs and a cancel, oldest first. */
  errors: { attempt: number; at_ms: number; error: string }[];
  /** Dependencies (EnqueueRequest.depends_on): the parents, how many have not ended, their results. */
  depends_on?: string[];
  dependencies_left?: number;
  dependency_results?: Record<string, Buffer>;
  run_after_failed_dependency?: boolean;
}

export interface ScheduleInfo {
  schedule: {
    name: string;
    cron: string;
    interval_ms: number;
    time_zone: string;
    job?: { queue: string; type: string; payload: Buffer; priority: number; max_attempts: number; timeout_ms: number };
    jitter_ms: number;
    start_at_ms: number;
    end_at_ms: number;
    catch_up: string;
  };
  next_run_at_ms: number;
  last_run_at_ms: number;
  last_job_id: string;
}

/** One open Claim stream (ListWorkers). */
export interface WorkerStream {
  /** The replica it is open on (BrokerReport.broker). */
  broker: string;
  worker_id: string;
  queues: string[];
  /** Empty: every type. */
  types: string[];
  /** One per queue, in the order of `queues`; empty: strict order. */
  weights: number[];
  max_in_flight: number;
  in_flight: number;
  opened_at_ms: number;
  /** The client's address as the replica saw it, e.g. "ipv4:10.0.0.7:51234". */
  peer: string;
}

/** One replica's report of its Claim streams (ListWorkers). */
export interface BrokerReport {
  broker: string;
  reported_at_ms: number;
  expires_at_ms: number;
  /** Every stream open there, also when more than were reported (truncated). */
  streams: number;
  truncated: boolean;
}

export interface ListWorkersResponse {
  /** By replica (as `brokers`), each replica's by opening time. */
  streams: WorkerStream[];
  /** Every replica whose report is current, by name. */
  brokers: BrokerReport[];
}

/** A failed call: `code` is the gRPC status code, `details` the broker's message. */
export class BrokerError extends Error {
  constructor(readonly code: grpc.status, readonly details: string) {
    super(`${grpc.status[code] ?? code}: ${details}`);
  }
}

export interface BrokerClientOptions {
  /** host:port of the broker. */
  address: string;
  /** PEM root CA for TLS to the broker; undefined: plaintext. */
  rootCa?: Buffer;
  /** PEM client certificate chain and key (mutual TLS); only with rootCa. */
  clientCert?: Buffer;
  clientKey?: Buffer;
  /** Folder holding jobwire/v1/admin.proto and broker.proto. */
  protoDir?: string;
  /** Deadline of each call, in ms. */
  timeoutMs?: number;
}

type Unary = (req: object, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

export class BrokerClient {
  private admin: grpc.Client;
  private broker: grpc.Client;
  private readonly timeoutMs: number;
  private readonly services: { AdminService: grpc.ServiceClientConstructor; BrokerService: grpc.ServiceClientConstructor };

  constructor(private readonly options: BrokerClientOptions) {
    const protoDir = options.protoDir ?? path.join(__dirname, 'proto');
    const def = protoLoader.loadSync(['jobwire/v1/admin.proto', 'jobwire/v1/broker.proto'], {
      includeDirs: [protoDir],
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      jobwire: { v1: { AdminService: grpc.ServiceClientConstructor; BrokerService: grpc.ServiceClientConstructor } };
    };
    this.services = pkg.jobwire.v1;
    this.timeoutMs = options.timeoutMs ?? 5000;
    [this.admin, this.broker] = this.connect(options);
  }

  /**
   * New TLS files for the broker (a rotated CA or client certificate): calls
   * from now on use new channels made with them; the old channels close once
   * the calls already on them are past their deadline.
   */
  setTls(tls: Pick<BrokerClientOptions, 'rootCa' | 'clientCert' | 'clientKey'>): void {
    const old = [this.admin, this.broker];
    [this.admin, this.broker] = this.connect({ ...this.options, ...tls });
    setTimeout(() => old.forEach((c) => c.close()), this.timeoutMs + 1000).unref();
  }

  private connect(o: BrokerClientOptions): [grpc.Client, grpc.Client] {
    const creds = o.rootCa
      ? grpc.credentials.createSsl(o.rootCa, o.clientKey ?? null, o.clientCert ?? null)
      : grpc.credentials.createInsecure();
    return [new this.services.AdminService(o.address, creds), new this.services.BrokerService(o.address, creds)];
  }

  listQueues(token: string | undefined): Promise<{ queues: QueueStats[] }> {
    return this.call(this.admin, 'ListQueues', {}, token);
  }
  getQueueStats(token: string | undefined, queue: string): Promise<{ stats: QueueStats }> {
    return this.call(this.admin, 'GetQueueStats', { queue }, token);
  }
  listJobs(
    token: string | undefined,
    req: { queue: string; state: JobState; page_size: number; page_token: string; type: string; oldest_first?: boolean },
  ): Promise<{ jobs: Job[]; next_page_token: string }> {
    return this.call(this.admin, 'ListJobs', req, token);
  }
  getJob(token: string | undefined, queue: string, jobId: string): Promise<{ job: Job }> {
    return this.call(this.broker, 'GetJob', { queue, job_id: jobId }, token);
  }
  /** GetJob by the idempotency key the job was enqueued with (while its dedup window lasts). */
  getJobByIdempotencyKey(token: string | undefined, queue: string, key: string): Promise<{ job: Job }> {
    return this.call(this.broker, 'GetJob', { queue, idempotency_key: key }, token);
  }
  /** RetryDead of the listed ids, or of every dead job (of one type when `type` is set). */
  retryDead(token: string | undefined, queue: string, which: { jobIds: string[] } | { all: true; type: string }): Promise<{ moved: number }> {
    const req = 'jobIds' in which ? { queue, job_ids: which.jobIds } : { queue, all: true, type: which.type };
    return this.call(this.admin, 'RetryDead', req, token);
  }
  deleteJob(token: string | undefined, queue: string, jobId: string): Promise<object> {
    return this.call(this.admin, 'DeleteJob', { queue, job_id: jobId }, token);
  }
  /** PurgeDead of the dead jobs that died more than olderThanMs ago (0: all). */
  purgeDead(token: string | undefined, queue: string, olderThanMs: number): Promise<{ purged: number }> {
    return this.call(this.admin, 'PurgeDead', { queue, older_than_ms: olderThanMs }, token);
  }
  deleteQueue(token: string | undefined, queue: string, force: boolean): Promise<{ deleted: number }> {
    return this.call(this.admin, 'DeleteQueue', { queue, force }, token);
  }
  /** UpdateQueue with the settings given (absent: unchanged). */
  updateQueue(token: string | undefined, req: UpdateQueueRequest): Promise<{ previous_partitions: number }> {
    return this.call(this.admin, 'UpdateQueue', req, token);
  }
  createQueue(token: string | undefined, req: CreateQueueRequest): Promise<object> {
    return this.call(this.admin, 'CreateQueue', req, token);
  }
  enqueue(token: string | undefined, req: EnqueueRequest): Promise<{ job_id: string; duplicate: boolean }> {
    return this.call(this.broker, 'Enqueue', req, token);
  }
  /** PutSchedule: creates the schedule or replaces the one of that name. */
  putSchedule(token: string | undefined, schedule: ScheduleRequest): Promise<{ next_run_at_ms: number; replaced: boolean }> {
    return this.call(this.admin, 'PutSchedule', { schedule }, token);
  }
  deleteSchedule(token: string | undefined, name: string): Promise<{ deleted: boolean }> {
    return this.call(this.admin, 'DeleteSchedule', { name }, token);
  }
  pauseQueue(token: string | undefined, queue: string): Promise<object> {
    return this.call(this.admin, 'PauseQueue', { queue }, token);
  }
  resumeQueue(token: string | undefined, queue: string): Promise<object> {
    return this.call(this.admin, 'ResumeQueue', { queue }, token);
  }
  cancel(token: string | undefined, queue: string, jobId: string): Promise<{ cancel_requested: boolean }> {
    return this.call(this.broker, 'Cancel', { queue, job_id: jobId }, token);
  }
  listSchedules(token: string | undefined): Promise<{ schedules: ScheduleInfo[] }> {
    return this.call(this.admin, 'ListSchedules', {}, token);
  }

  listWorkers(token: string | undefined): Promise<ListWorkersResponse> {
    return this.call(this.admin, 'ListWorkers', {}, token);
  }

  /**
   * Subscribe (a server stream, no deadline): `onMessage` gets each
   * response, `onEnd` the error that ended the stream (a BrokerError; code 1
   * CANCELLED after cancel()) once. Answers the cancel function.
   */
  subscribe(
    token: string | undefined,
    req: { queues: string[]; kinds: EventKind[]; include_details?: boolean },
    onMessage: (m: SubscribeResponse) => void,
    onEnd: (err: BrokerError) => void,
  ): () => void {
    return this.stream('Subscribe', req, token, onMessage, onEnd);
  }

  /**
   * WaitJob (a server stream, no deadline but timeoutMs of the broker's
   * own): `onJob` gets the job at once and at every change until it is
   * COMPLETED or DEAD; then `onEnd` gets code 0 OK, else the error.
   */
  waitJob(
    token: string | undefined,
    req: { queue: string; job_id: string; timeout_ms: number },
    onJob: (job: Job) => void,
    onEnd: (err: BrokerError) => void,
  ): () => void {
    return this.stream('WaitJob', req, token, (m: { job: Job }) => onJob(m.job), onEnd);
  }

  /** A server stream of the Broker service; answers its cancel function. A stream that ends well ends with code 0. */
  private stream<T>(method: string, req: object, token: string | undefined, onMessage: (m: T) => void, onEnd: (err: BrokerError) => void): () => void {
    const md = new grpc.Metadata();
    if (token) md.set('authorization', `Bearer ${token}`);
    const open = (this.broker as unknown as Record<string, (r: object, m: grpc.Metadata) => grpc.ClientReadableStream<T>>)[method];
    const stream = open.call(this.broker, req, md);
    let ended = false;
    const end = (err: BrokerError) => {
      if (ended) return;
      ended = true;
      onEnd(err);
    };
    stream.on('data', (m: T) => onMessage(m));
    stream.on('error', (e: grpc.ServiceError) => end(new BrokerError(e.code, e.details)));
    stream.on('status', (st: grpc.StatusObject) => end(new BrokerError(st.code, st.details)));
    return () => stream.cancel();
  }

  close(): void {
    this.admin.close();
    this.broker.close();
  }

  private call<T>(client: grpc.Client, method: string, req: object, token: string | undefined): Promise<T> {
    const md = new grpc.Metadata();
    if (token) md.set('authorization', `Bearer ${token}`);
    const fn = (client as unknown as Record<string, Unary>)[method].bind(client);
    return new Promise<T>((resolve, reject) => {
      fn(req, md, { deadline: Date.now() + this.timeoutMs }, (err, res) => {
        if (err) reject(new BrokerError(err.code, err.details));
        else resolve(res as T);
      });
    });
  }
}
