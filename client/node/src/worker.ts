import { EventEmitter } from 'node:events';
import * as os from 'node:os';
import * as grpc from '@grpc/grpc-js';
import { JobwireError, NonRetryableError, Status, statusName } from './errors';
import { decodeJson, encodeValue, toNumber } from './codec';
import { defaultAddress, DEFAULT_TIMEOUT_MS, makeConnection, makeStub, unary, type BrokerClient, type SecurityOptions } from './proto';
import { AckCoalescer, sendAckBatch } from './ack_coalescer';
import { leaseEndedAgoMs, retryWait } from './lease_rules';
import type { ClaimedJob__Output } from './generated/jobwire/v1/ClaimedJob';
import type { ClaimResponse__Output } from './generated/jobwire/v1/ClaimResponse';
import type { ClaimRequest } from './generated/jobwire/v1/ClaimRequest';
import type { FailResponse__Output } from './generated/jobwire/v1/FailResponse';
import type { ExtendLeaseResponse__Output } from './generated/jobwire/v1/ExtendLeaseResponse';

/** Reconnect backoff of the Claim stream: 100 ms doubling to 5 s, full jitter. */
const RECONNECT_BASE_MS = 100;
const RECONNECT_MAX_MS = 5000;
/** Backoff of Ack / Fail retries on UNAVAILABLE / DEADLINE_EXCEEDED. */
const OUTCOME_RETRY_BASE_MS = 100;
const OUTCOME_RETRY_MAX_MS = 2000;
/** Broker default lease, used when neither leaseMs nor the claim tells. */
const BROKER_DEFAULT_LEASE_MS = 30_000;
/** A reduced-capacity stream is reopened at full capacity after this idle time. */
const REGROW_IDLE_MS = 1000;
/** Fail.error is limited to 64 KiB by the broker. */
const MAX_ERROR_BYTES = 60 * 1024;

export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** The job a handler receives. */
export class Job {
  readonly id: string;
  readonly queue: string;
  readonly type: string;
  /** The payload bytes, unchanged. */
  readonly payload: Buffer;
  /** 1 for the first run (the broker's `attempts`, this run included). */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly priority: number;
  /** Aborted when the lease is lost or the worker abandons the job after its stop grace. */
  readonly signal: AbortSignal;
  /** Current lease expiry (epoch ms, broker clock); updated by each renewal. */
  leaseExpiresAtMs: number;

  constructor(cj: ClaimedJob__Output, signal: AbortSignal) {
    const j = cj.job!;
    this.id = j.id;
    this.queue = j.queue;
    this.type = j.type;
    this.payload = j.payload ?? Buffer.alloc(0);
    this.attempt = j.attempts;
    this.maxAttempts = j.maxAttempts;
    this.priority = j.priority;
    this.signal = signal;
    this.leaseExpiresAtMs = toNumber(cj.leaseExpiresAtMs) || toNumber(j.leaseExpiresAtMs);
  }

  /** The payload decoded as UTF-8 JSON. */
  json<T = unknown>(): T {
    return decodeJson<T>(this.payload);
  }
}

export type Handler = (job: Job) => unknown | Promise<unknown>;

/**
 * `*_error`: the broker refused the Ack / Fail. `*_unknown`: it was still
 * answered UNAVAILABLE / DEADLINE_EXCEEDED when the lease ended, so it may or
 * may not have been stored. `expired_dropped`: the delivery's lease had
 * ended before its handler could start; no handler ran and nothing was sent
 * (the broker delivers the job again).
 */
export type OutcomeKind =
  | 'ack_ok' | 'ack_error' | 'ack_unknown' | 'fail_ok' | 'fail_error' | 'fail_unknown' | 'expired_dropped';

/** Counters of a Worker (Worker.stats()). */
export interface WorkerStats {
  /** Deliveries whose lease had ended before their handler could start (dropped). */
  expiredDeliveriesDropped: number;
}

/** A final outcome of one job run, as given to onOutcome / the 'outcome' event. */
export interface Outcome {
  kind: OutcomeKind;
  job: Job;
  /** fail_ok: what the broker did with the job. */
  failOutcome?: 'RETRY_SCHEDULED' | 'DEAD';
  /** fail_ok with RETRY_SCHEDULED: when the retry is due (epoch ms). */
  nextAttemptAtMs?: number;
  /** ack_error / fail_error / ack_unknown / fail_unknown: the gRPC status code and its name. */
  code?: number;
  codeName?: string;
  /** ack_error / fail_error: the refusal; ack_unknown / fail_unknown: the last error. */
  error?: JobwireError;
  /** fail_*: the error text sent to the broker, and whether non_retryable was set. */
  failText?: string;
  nonRetryable?: boolean;
  /** True when the lease was reported lost while the handler ran. */
  leaseLost: boolean;
}

/** Also takes the bearer token and TLS options of the Client (SecurityOptions). */
export interface WorkerOptions extends SecurityOptions {
  /** Broker `host:port`. Default: $JOBWIRE_ADDR, else `localhost:50051`. */
  address?: string;
  /** Queues to consume, earlier ones served first. */
  queues: string[];
  /** Handlers running at once (default 1). */
  concurrency?: number;
  /** Lease per job in ms (default: the broker's, 30 s). Renewed every leaseMs / 3. */
  leaseMs?: number;
  /** Stored on claimed jobs. Default `node-<host>-<pid>`. */
  workerId?: string;
  /** How long stop() waits for running handlers and their Ack/Fail (default 25000). */
  graceMs?: number;
  /** Deadline of each unary call (AckBatch, Fail, ExtendLease), default 10000. */
  timeoutMs?: number;
  /** Receives every final outcome (also emitted as the 'outcome' event). */
  onOutcome?: (outcome: Outcome) => void;
  /** Where the worker logs; default stderr. `null` silences it. */
  logger?: Logger | null;
  /** Channel credentials, exclusive with the tls options (as in ClientOptions). */
  credentials?: grpc.ChannelCredentials;
  /** Extra grpc-js channel options. */
  channelOptions?: grpc.ChannelOptions;
}

export interface RunOptions {
  /** Stop gracefully on SIGTERM / SIGINT (default true). */
  installSignalHandlers?: boolean;
}

interface StreamState {
  call: grpc.ClientReadableStream<ClaimResponse__Output>;
  capacity: number;
  inFlight: number;
  openedAt: number;
}

interface Running {
  job: Job;
  token: string;
  stream: StreamState;
  leaseMs: number;
  /** Local-clock estimate of the lease expiry (Ack/Fail retries stop there). */
  localLeaseDeadline: number;
  renewTimer?: NodeJS.Timeout;
  /** An ExtendLease call is in flight (never more than one per job). */
  renewing: boolean;
  /** The handler has returned: renewal results arriving later are ignored. */
  finished: boolean;
  leaseLost: boolean;
  abandoned: boolean;
  abort: AbortController;
  done: Promise<void>;
}

/** The Ack / Fail may be sent again (and its outcome is unknown if it never gets through). */
function isRetryable(err: JobwireError): boolean {
  return err.code === Status.UNAVAILABLE || err.code === Status.DEADLINE_EXCEEDED;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function stderrLogger(workerId: string): Logger {
  const w = (level: string, msg: string) => process.stderr.write(`jobwire worker ${workerId} ${level}: ${msg}\n`);
  return { info: (m) => w('info', m), warn: (m) => w('warn', m), error: (m) => w('error', m) };
}

/** "<ErrorType>: <message>" of anything thrown by a handler. */
export function errorText(err: unknown): string {
  let text: string;
  if (err instanceof Error) {
    // A subclass that does not set `name` inherits 'Error': name it after its
    // class (`class ValidationError extends Error` -> "ValidationError").
    let type = err.name;
    if (!type || type === 'Error') type = err.constructor?.name || 'Error';
    text = `${type}: ${err.message}`;
  }
  else text = `Error: ${typeof err === 'string' ? err : safeString(err)}`;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= MAX_ERROR_BYTES) return text;
  return bytes.subarray(0, MAX_ERROR_BYTES).toString('utf8');
}

function safeString(v: unknown): string {
  try {
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  } catch {
    return String(v);
  }
}

/**
 * Consumes queues over one Claim stream and runs registered handlers,
 * at most `concurrency` at once. Acks go through an AckCoalescer (AckBatch
 * calls, one in flight at a time); Fails are unary calls. Emits 'outcome'
 * (Outcome).
 */
export class Worker extends EventEmitter {
  readonly address: string;
  readonly queues: string[];
  readonly concurrency: number;
  readonly leaseMs: number | undefined;
  readonly workerId: string;
  readonly graceMs: number;
  readonly timeoutMs: number;

  private readonly handlers = new Map<string, Handler>();
  private readonly onOutcome?: (o: Outcome) => void;
  private readonly log: Logger | null;
  private readonly credentials: grpc.ChannelCredentials;
  /** Per-call metadata (the bearer token, kept in the closure only). */
  private readonly metadata: () => grpc.Metadata;
  private readonly channelOptions?: grpc.ChannelOptions;
  private stub?: BrokerClient;
  /** Sends the Acks of all running jobs as AckBatch calls (made by run()). */
  private acks?: AckCoalescer;

  private running = false;
  private stopping = false;
  private stream: StreamState | null = null;
  private readonly busy = new Set<Running>();
  private reconnectAttempt = 0;
  private reconnectTimer?: NodeJS.Timeout;
  private regrowTimer?: NodeJS.Timeout;
  private stopPromise?: Promise<void>;
  private fatal?: JobwireError;
  private resolveRun?: () => void;
  private rejectRun?: (e: Error) => void;
  private signalHandler?: () => void;
  private expiredDropped = 0;

  /**
   * Throws TypeError without queues, and JobwireError INVALID_ARGUMENT when a
   * TLS PEM file cannot be read or does not parse (see SecurityOptions).
   */
  constructor(options: WorkerOptions) {
    super();
    if (!options || !Array.isArray(options.queues) || options.queues.length === 0) {
      throw new TypeError('jobwire Worker: options.queues must list at least one queue');
    }
    this.address = options.address ?? defaultAddress();
    this.queues = [...options.queues];
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
    this.leaseMs = options.leaseMs && options.leaseMs > 0 ? options.leaseMs : undefined;
    this.workerId = options.workerId ?? `node-${os.hostname()}-${process.pid}`;
    this.graceMs = options.graceMs ?? 25_000;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.onOutcome = options.onOutcome;
    this.log = options.logger === null ? null : options.logger ?? stderrLogger(this.workerId);
    const conn = makeConnection(options);
    this.credentials = conn.credentials;
    this.metadata = conn.metadata;
    this.channelOptions = options.channelOptions;
  }

  /** Registers the handler of a job type (replacing any previous one). */
  register(type: string, handler: Handler): this {
    if (typeof handler !== 'function') throw new TypeError('jobwire Worker: handler must be a function');
    this.handlers.set(type, handler);
    return this;
  }

  /** Alias of register(). */
  handle(type: string, handler: Handler): this {
    return this.register(type, handler);
  }

  /** Number of jobs held right now (handler running or its Ack/Fail pending). */
  get activeJobs(): number {
    return this.busy.size;
  }

  /** The worker's counters. */
  stats(): WorkerStats {
    return { expiredDeliveriesDropped: this.expiredDropped };
  }

  /**
   * Consumes until stop() (or SIGTERM / SIGINT when installSignalHandlers).
   * Resolves once stopped; rejects when the broker refuses the Claim with
   * INVALID_ARGUMENT.
   */
  run(options: RunOptions = {}): Promise<void> {
    if (this.running || this.stopPromise) throw new Error('jobwire Worker: run() was already called');
    this.running = true;
    this.stub = makeStub(this.address, this.credentials, this.channelOptions);
    const stub = this.stub;
    this.acks = new AckCoalescer((acks) => sendAckBatch(stub, acks, this.timeoutMs, this.metadata()));
    const done = new Promise<void>((resolve, reject) => {
      this.resolveRun = resolve;
      this.rejectRun = reject;
    });
    if (options.installSignalHandlers ?? true) {
      this.signalHandler = () => {
        this.log?.info('signal received, stopping');
        void this.stop();
      };
      process.on('SIGTERM', this.signalHandler);
      process.on('SIGINT', this.signalHandler);
    }
    this.openStream();
    return done;
  }

  /**
   * Stops taking jobs, lets running handlers finish and their Ack/Fail be
   * sent within graceMs, then resolves (and so does run()).
   */
  stop(): Promise<void> {
    if (this.stopPromise) return this.stopPromise;
    if (!this.running) {
      this.stopPromise = Promise.resolve();
      return this.stopPromise;
    }
    this.stopping = true;
    this.stopPromise = this.doStop();
    return this.stopPromise;
  }

  private async doStop(): Promise<void> {
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.regrowTimer);
    this.reconnectTimer = undefined;
    const s = this.stream;
    this.stream = null;
    if (s) s.call.cancel();

    // Wait for every held job, including those delivered after the stream
    // was cancelled (onClaimed fails them at once and adds them to busy).
    if (this.busy.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'timeout'>((r) => { timer = setTimeout(() => r('timeout'), this.graceMs); });
      const allDone = (async () => {
        while (this.busy.size > 0) await Promise.all([...this.busy].map((r) => r.done));
        return 'done' as const;
      })();
      const res = await Promise.race([allDone, graceOver]);
      clearTimeout(timer);
      if (res === 'timeout') {
        for (const r of this.busy) {
          r.abandoned = true;
          clearInterval(r.renewTimer);
          r.abort.abort(new Error('worker stop grace expired'));
        }
        this.log?.warn(`stop grace of ${this.graceMs} ms expired; abandoning ${this.busy.size} running job(s) (their leases will expire)`);
      }
    }
    if (this.signalHandler) {
      process.removeListener('SIGTERM', this.signalHandler);
      process.removeListener('SIGINT', this.signalHandler);
      this.signalHandler = undefined;
    }
    this.stub?.close();
    this.running = false;
    if (this.fatal) this.rejectRun?.(this.fatal);
    else this.resolveRun?.();
  }

  // ---- Claim stream -------------------------------------------------------

  private freeSlots(): number {
    return this.concurrency - this.busy.size;
  }

  private openStream(): void {
    if (this.stopping || !this.running || this.stream || this.reconnectTimer) return;
    const free = this.freeSlots();
    if (free <= 0) return; // reopened as soon as a slot frees (settle())
    const req: ClaimRequest = {
      queues: this.queues,
      maxInFlight: free,
      leaseMs: this.leaseMs ?? 0,
      workerId: this.workerId,
    };
    const call = this.stub!.Claim(req, this.metadata());
    const s: StreamState = { call, capacity: free, inFlight: 0, openedAt: Date.now() };
    this.stream = s;
    call.on('data', (msg: ClaimResponse__Output) => this.onMessage(s, msg));
    call.on('error', () => { /* handled in 'status' */ });
    call.on('status', (st: grpc.StatusObject) => this.onStreamEnd(s, st));
    this.armRegrow();
  }

  private onStreamEnd(s: StreamState, st: grpc.StatusObject): void {
    if (this.stream !== s) return; // replaced or cancelled on purpose
    this.stream = null;
    clearTimeout(this.regrowTimer);
    if (this.stopping) return;
    if (st.code === Status.INVALID_ARGUMENT) {
      this.fatal = new JobwireError(st.code, st.details);
      this.log?.error(`Claim refused: ${this.fatal.message}`);
      void this.stop();
      return;
    }
    const cap = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** this.reconnectAttempt);
    const delay = Math.floor(Math.random() * cap);
    if (this.reconnectAttempt < 16) this.reconnectAttempt++;
    this.log?.warn(`Claim stream ended (${statusName(st.code)}: ${st.details}); reopening in ${delay} ms`);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.openStream();
    }, delay);
  }

  /**
   * A stream opened while handlers were still running has fewer slots than
   * the concurrency. Reopen it at full size once the worker has been idle
   * (nothing held, nothing delivered) for a moment: a job claimed in the very
   * instant of the swap would only come back after its lease, so the swap
   * waits for a quiet queue.
   */
  private armRegrow(): void {
    clearTimeout(this.regrowTimer);
    const s = this.stream;
    if (!s || s.capacity >= this.concurrency || this.busy.size > 0 || this.stopping) return;
    this.regrowTimer = setTimeout(() => {
      if (this.stream !== s || this.busy.size > 0 || this.stopping) return;
      this.stream = null;
      s.call.cancel();
      this.openStream();
    }, REGROW_IDLE_MS);
  }

  /**
   * One Claim stream message: every job claimed for the stream since the
   * previous message (1..max_in_flight), taken one by one in claim order.
   */
  private onMessage(s: StreamState, msg: ClaimResponse__Output): void {
    for (const cj of msg.jobs ?? []) this.onClaimed(s, cj);
  }

  private onClaimed(s: StreamState, cj: ClaimedJob__Output): void {
    if (!cj.job) return;
    if (!this.running) {
      // Delivered after the worker fully stopped (channel closed): nothing
      // can be sent; the lease expires and the broker retries the job.
      this.log?.warn(`job ${cj.job.id} delivered after the worker stopped; its lease will expire`);
      return;
    }
    s.inFlight++;
    this.reconnectAttempt = 0;
    clearTimeout(this.regrowTimer);
    const abort = new AbortController();
    const job = new Job(cj, abort.signal);
    let leaseMs = this.leaseMs;
    if (leaseMs === undefined) {
      // Broker default lease: estimate it from the expiry the claim carries.
      const est = job.leaseExpiresAtMs - Date.now();
      leaseMs = est >= 1000 && est <= 43_200_000 ? est : BROKER_DEFAULT_LEASE_MS;
    }
    const r: Running = {
      job,
      token: cj.leaseToken,
      stream: s,
      leaseMs,
      localLeaseDeadline: Date.now() + leaseMs,
      renewing: false,
      finished: false,
      leaseLost: false,
      abandoned: false,
      abort,
      done: Promise.resolve(),
    };
    this.busy.add(r);
    // A delivery whose lease has ended is dropped. A job delivered after
    // stop() (the stream was already cancelled) is not started: it is failed
    // (retryable) at once, and doStop waits for that.
    const endedAgo = leaseEndedAgoMs(Date.now(), job.leaseExpiresAtMs, r.localLeaseDeadline);
    const work = endedAgo !== undefined ? this.dropExpired(r, endedAgo)
      : this.stopping ? this.failStopping(r) : this.process(r);
    r.done = work.catch((e) => {
      this.log?.error(`internal error processing job ${job.id}: ${String(e?.stack ?? e)}`);
    }).finally(() => this.settle(r));
  }

  private settle(r: Running): void {
    clearInterval(r.renewTimer);
    this.busy.delete(r);
    r.stream.inFlight--;
    if (this.stopping) return;
    if (!this.stream) this.openStream();
    else this.armRegrow();
  }

  // ---- One job ------------------------------------------------------------

  /** No handler, no Ack / Fail: the broker's reaper delivers the job again. */
  private async dropExpired(r: Running, endedAgoMs: number): Promise<void> {
    r.finished = true;
    this.expiredDropped++;
    this.log?.warn(`delivery of job ${r.job.id} in queue ${r.job.queue} (attempt ${r.job.attempt}) dropped: ` +
      `its lease ended ${Math.round(endedAgoMs)} ms ago, before its handler could start`);
    this.report({ kind: 'expired_dropped', job: r.job, leaseLost: r.leaseLost });
  }

  private async failStopping(r: Running): Promise<void> {
    r.finished = true;
    this.log?.warn(`job ${r.job.id} delivered while stopping; failing it for a retry`);
    await this.sendFail(r, 'worker stopping', false, 0);
  }

  private async process(r: Running): Promise<void> {
    const job = r.job;
    const handler = this.handlers.get(job.type);
    if (!handler) {
      const text = `no handler for job type "${job.type}" in worker ${this.workerId}`;
      this.log?.warn(`${text} (job ${job.id} in queue ${job.queue}); failing it for retry`);
      await this.sendFail(r, text, false, 0);
      return;
    }
    r.renewTimer = setInterval(() => void this.renew(r), Math.max(1, Math.floor(r.leaseMs / 3)));
    let result: Buffer;
    try {
      const value = await Promise.resolve().then(() => handler(job));
      r.finished = true;
      clearInterval(r.renewTimer);
      result = encodeValue(value);
    } catch (err) {
      r.finished = true;
      clearInterval(r.renewTimer);
      if (r.abandoned) return;
      const nonRetryable = err instanceof NonRetryableError ||
        (typeof err === 'object' && err !== null && (err as { nonRetryable?: unknown }).nonRetryable === true);
      const ra = typeof err === 'object' && err !== null ? (err as { retryAfterMs?: unknown }).retryAfterMs : undefined;
      const retryAfterMs = typeof ra === 'number' && ra > 0 ? Math.floor(ra) : 0;
      await this.sendFail(r, errorText(err), nonRetryable, retryAfterMs);
      return;
    }
    if (r.abandoned) return;
    await this.sendAck(r, result);
  }

  private async renew(r: Running): Promise<void> {
    // One renewal in flight at most: a slow ExtendLease is not stacked.
    if (r.finished || r.leaseLost || r.abandoned || r.renewing) return;
    r.renewing = true;
    const sentAt = Date.now();
    try {
      const res = await unary<object, ExtendLeaseResponse__Output>(this.stub!, 'ExtendLease', {
        queue: r.job.queue, jobId: r.job.id, leaseToken: r.token, leaseMs: this.leaseMs ?? 0,
      }, Math.min(this.timeoutMs, Math.max(1000, Math.floor(r.leaseMs / 3))), this.metadata());
      // The lease was extended at sentAt (even if the handler has returned
      // meanwhile): that bounds the Ack / Fail retries.
      r.localLeaseDeadline = Math.max(r.localLeaseDeadline, sentAt + r.leaseMs);
      if (r.finished) return;
      const exp = toNumber(res.leaseExpiresAtMs);
      if (exp > 0) r.job.leaseExpiresAtMs = exp;
    } catch (e) {
      // A refusal arriving after the handler returned is ignored: the final
      // Ack / Fail is already on its way and reports its own refusal.
      if (r.finished || r.abandoned) return;
      const err = JobwireError.from(e);
      if (err.code === Status.FAILED_PRECONDITION || err.code === Status.NOT_FOUND) {
        r.leaseLost = true;
        clearInterval(r.renewTimer);
        r.abort.abort(err);
        this.log?.warn(`lease of job ${r.job.id} lost (${err.message}); renewal stopped`);
      } else {
        this.log?.warn(`ExtendLease of job ${r.job.id} failed (${err.message}); will retry`);
      }
    } finally {
      r.renewing = false;
    }
  }

  /**
   * Runs an Ack or Fail, retrying on UNAVAILABLE / DEADLINE_EXCEEDED with
   * backoff until the lease has ended by the local estimate, the last
   * attempts just before and at its end (retryWait), or the stop grace is
   * over. An UNAVAILABLE / DEADLINE_EXCEEDED error thrown means the outcome
   * is unknown.
   */
  private async withOutcomeRetry<T>(r: Running, call: () => Promise<T>): Promise<T> {
    let attempt = 0;
    for (;;) {
      try {
        return await call();
      } catch (e) {
        const err = JobwireError.from(e);
        const retryable = isRetryable(err);
        const cap = Math.min(OUTCOME_RETRY_MAX_MS, OUTCOME_RETRY_BASE_MS * 2 ** attempt);
        const delay = Math.floor(cap / 2 + (Math.random() * cap) / 2);
        attempt++;
        if (!retryable || r.abandoned) throw err;
        const wait = retryWait(delay, r.localLeaseDeadline - Date.now());
        if (wait === undefined) throw err;
        await sleep(wait);
        if (r.abandoned) throw err;
      }
    }
  }

  private async sendAck(r: Running, result: Buffer): Promise<void> {
    try {
      // Through the coalescer (AckBatch); a retry queues this ack again, same token.
      await this.withOutcomeRetry(r, () => this.acks!.ack({
        queue: r.job.queue, jobId: r.job.id, leaseToken: r.token, result,
      }));
      this.report({ kind: 'ack_ok', job: r.job, leaseLost: r.leaseLost });
    } catch (e) {
      const err = JobwireError.from(e);
      const unknown = isRetryable(err);
      this.log?.warn(unknown
        ? `Ack of job ${r.job.id} unanswered when its lease ended (${err.message}); it may or may not be stored`
        : `Ack of job ${r.job.id} refused: ${err.message}`);
      this.report({
        kind: unknown ? 'ack_unknown' : 'ack_error', job: r.job, code: err.code, codeName: err.codeName, error: err,
        leaseLost: r.leaseLost,
      });
    }
  }

  private async sendFail(r: Running, text: string, nonRetryable: boolean, retryAfterMs: number): Promise<void> {
    try {
      const res = await this.withOutcomeRetry(r, () => unary<object, FailResponse__Output>(this.stub!, 'Fail', {
        queue: r.job.queue, jobId: r.job.id, leaseToken: r.token, error: text, nonRetryable, retryAfterMs,
      }, this.timeoutMs, this.metadata()));
      const outcome = res.outcome === 'DEAD' ? 'DEAD' : 'RETRY_SCHEDULED';
      this.report({
        kind: 'fail_ok', job: r.job, failOutcome: outcome, nextAttemptAtMs: toNumber(res.nextAttemptAtMs),
        failText: text, nonRetryable, leaseLost: r.leaseLost,
      });
    } catch (e) {
      const err = JobwireError.from(e);
      const unknown = isRetryable(err);
      this.log?.warn(unknown
        ? `Fail of job ${r.job.id} unanswered when its lease ended (${err.message}); it may or may not be stored`
        : `Fail of job ${r.job.id} refused: ${err.message}`);
      this.report({
        kind: unknown ? 'fail_unknown' : 'fail_error', job: r.job, code: err.code, codeName: err.codeName, error: err,
        failText: text, nonRetryable, leaseLost: r.leaseLost,
      });
    }
  }

  private report(o: Outcome): void {
    try {
      this.onOutcome?.(o);
    } catch (e) {
      this.log?.error(`onOutcome threw: ${String((e as Error)?.stack ?? e)}`);
    }
    try {
      this.emit('outcome', o);
    } catch (e) {
      this.log?.error(`an 'outcome' listener threw: ${String((e as Error)?.stack ?? e)}`);
    }
  }
}
