/**
 * The job a handler receives (Job) and the outcome of its run (Outcome) that
 * a Worker reports to onOutcome / the 'outcome' event.
 */
import { decodeJson, toNumber } from './codec';
import { JobCancelledError, type JobwireError } from './errors';
import type { Progress } from './progress';
import type { ClaimedJob__Output } from './generated/jobwire/v1/ClaimedJob';

/** What the Worker gives the Job of a run it holds. */
export interface JobRun {
  /** When the delivery was received (Date.now()): job.deadline is this plus job.timeoutMs. */
  receivedAt: number;
  /** ReportProgress with the run's lease token; see Job.reportProgress. */
  reportProgress(progress: Progress): Promise<void>;
}

/**
 * The controller of a Job's signal, made only when the signal is first read
 * or aborted: an AbortSignal costs microseconds to create and most handlers
 * never read job.signal.
 */
export class JobAbort {
  #controller?: AbortController;

  get signal(): AbortSignal {
    return (this.#controller ??= new AbortController()).signal;
  }

  abort(reason?: unknown): void {
    (this.#controller ??= new AbortController()).abort(reason);
  }
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
  /**
   * The producer's headers (enqueue option `headers`, e.g. `traceparent`),
   * unchanged; `{}` when none.
   */
  readonly headers: Record<string, string>;
  /** The enqueue option `concurrencyKey`; '' when none. */
  readonly concurrencyKey: string;
  /** The enqueue option `dependsOn`: the parents this job waited for; `[]` when none. */
  readonly dependsOn: string[];
  /**
   * Each parent's result by parent id, bytes unchanged (a parent that
   * completed without a result, or failed under `runAfterFailedDependency`,
   * is absent); `{}` when none.
   */
  readonly dependencyResults: Record<string, Buffer>;
  /** The enqueue option `runAfterFailedDependency`: a parent absent from `dependencyResults` may have failed. */
  readonly runAfterFailedDependency: boolean;
  /**
   * Aborted when the run is told to stop (reason: a JobCancelledError,
   * `reason` 'cancelled' or 'timeout'), when the lease is lost (reason: a
   * LeaseLostError) or when the worker abandons the job after its stop grace
   * (reason: an Error).
   */
  get signal(): AbortSignal {
    return this.#signalOf.signal;
  }
  /** Where `signal` is read: a JobAbort (made on first read), or a given signal. */
  readonly #signalOf: { readonly signal: AbortSignal };
  /** Current lease expiry (epoch ms, broker clock); updated by each renewal. */
  leaseExpiresAtMs: number;
  /**
   * The lease length in ms as the broker granted it (ClaimedJob.lease_ms: the
   * Worker's leaseMs, or the broker default); 0 from a broker too old to send
   * it, and the Worker then renews on its own estimate (docs/clients.md).
   */
  readonly leaseMs: number;
  /** Longest this run may take, in ms (Job.timeout_ms); 0: no limit. */
  readonly timeoutMs: number;
  /**
   * With a timeout: when the run must end, epoch ms on the worker's clock
   * (receipt of the delivery + timeoutMs; no clocks are compared). At that
   * moment `signal` aborts with a JobCancelledError, reason 'timeout'.
   * undefined without a timeout.
   */
  readonly deadline: number | undefined;
  readonly #run: JobRun | undefined;

  /**
   * Made by the Worker, with `run`; a Job made without one has its
   * deadline counted from now and cannot report progress.
   */
  constructor(cj: ClaimedJob__Output, signal: AbortSignal | JobAbort, run?: JobRun) {
    const j = cj.job!;
    this.id = j.id;
    this.queue = j.queue;
    this.type = j.type;
    this.payload = j.payload ?? Buffer.alloc(0);
    this.attempt = j.attempts;
    this.maxAttempts = j.maxAttempts;
    this.priority = j.priority;
    this.headers = j.headers ?? {};
    this.concurrencyKey = j.concurrencyKey ?? '';
    this.dependsOn = j.dependsOn ?? [];
    this.dependencyResults = j.dependencyResults ?? {};
    this.runAfterFailedDependency = j.runAfterFailedDependency ?? false;
    this.#signalOf = signal instanceof JobAbort ? signal : { signal };
    this.leaseExpiresAtMs = toNumber(cj.leaseExpiresAtMs) || toNumber(j.leaseExpiresAtMs);
    this.leaseMs = toNumber(cj.leaseMs);
    this.timeoutMs = toNumber(j.timeoutMs);
    this.deadline = this.timeoutMs > 0 ? (run?.receivedAt ?? Date.now()) + this.timeoutMs : undefined;
    this.#run = run;
  }

  /**
   * Reports the run's progress (ReportProgress with its lease token): it
   * replaces the job's progress as a whole (JobInfo progressPercent /
   * progressData; a 'progress' event). `percent`: an integer 0..100;
   * `data`: bytes unchanged, anything else JSON, at most 4096 bytes.
   * Resolves once stored. Rejects with TypeError for a malformed report
   * (see Progress), sending nothing; with a JobCancelledError (the reason `signal` is
   * aborted with) once the run was told to stop, without calling, or when
   * the broker refuses with JOB_CANCEL_REQUESTED / RUN_TIMED_OUT (it then
   * aborts `signal`); else with JobwireError: INVALID_ARGUMENT (percent
   * outside 0..100, data too large, neither given; nothing changed),
   * FAILED_PRECONDITION / NOT_FOUND (the lease is lost), UNAVAILABLE,
   * DEADLINE_EXCEEDED. Not retried: the next report replaces it anyway.
   */
  reportProgress(progress: Progress): Promise<void> {
    if (this.#run === undefined) {
      return Promise.reject(new Error('jobwire: reportProgress needs a job delivered by a Worker'));
    }
    return this.#run.reportProgress(progress);
  }

  /**
   * Throws the JobCancelledError `signal` was aborted with when the run was
   * told to stop (cancelled or timed out); returns otherwise (also when
   * `signal` aborted for another reason: see signal.throwIfAborted()).
   */
  throwIfCancelled(): void {
    const reason: unknown = this.#signalOf.signal.aborted ? this.#signalOf.signal.reason : undefined;
    if (reason instanceof JobCancelledError) throw reason;
  }

  /** The payload decoded as UTF-8 JSON. */
  json<T = unknown>(): T {
    return decodeJson<T>(this.payload);
  }
}

export type Handler = (job: Job) => unknown | Promise<unknown>;

/**
 * `*_error`: the broker refused the Ack / Fail. `*_unknown`: it was still
 * answered UNAVAILABLE / DEADLINE_EXCEEDED / CANCELLED (one the client did not
 * cause: a draining broker, grpc/grpc#41785) when the lease ended, so it may or
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
  /** fail_*: the error text sent to the broker, and its non_retryable, retry_after_ms and keep_attempt. */
  failText?: string;
  nonRetryable?: boolean;
  retryAfterMs?: number;
  keepAttempt?: boolean;
  /**
   * True when the lease was reported lost (a renewal refused: `job.signal`
   * aborted with a LeaseLostError) while the handler ran. A loss learnt only
   * after the handler returned, while the Ack / Fail was sent or retried
   * (e.g. because that very Ack or Fail settled the job), does not count;
   * false for `expired_dropped` and for a job whose handler never ran. A run
   * told to stop (cancelled, timed out) is not a lost lease:
   * `job.signal.reason` is then its JobCancelledError.
   */
  leaseLost: boolean;
}
