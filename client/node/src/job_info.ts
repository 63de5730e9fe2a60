/** A job as the broker reports it (GetJob, WaitJob). */
import { decodeJson, toNumber } from './codec';
import type { Job__Output } from './generated/jobwire/v1/Job';
import type { JobState__Output } from './generated/jobwire/v1/JobState';

export type JobStateName = JobState__Output;

/** One entry of JobInfo.errors. */
export interface JobError {
  /** The run that failed (0 for a job cancelled before its first run). */
  attempt: number;
  /** When, by the broker's (Redis) clock. */
  atMs: number;
  /** Its error, cut to at most 512 bytes (at a character boundary). */
  error: string;
}

/** A job as GetJob or WaitJob reads it (any state). Times are epoch ms, 0 when unset. */
export class JobInfo {
  readonly id: string;
  readonly queue: string;
  readonly type: string;
  readonly payload: Buffer;
  readonly priority: number;
  readonly state: JobStateName;
  /** Runs so far (the current one included). */
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly availableAtMs: number;
  readonly leaseExpiresAtMs: number;
  readonly result: Buffer;
  readonly error: string;
  readonly idempotencyKey: string;
  readonly createdAtMs: number;
  readonly finishedAtMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  readonly workerId: string;
  /** Longest a run may take, in ms (its enqueue's runTimeoutMs, else the broker's default); 0: no limit. */
  readonly timeoutMs: number;
  /** The current run's deadline (claim time + timeoutMs, broker clock) while ACTIVE with a timeout; 0 otherwise. */
  readonly runDeadlineMs: number;
  /** When Cancel asked the current run to stop; 0 when it did not. */
  readonly cancelRequestedAtMs: number;
  /** The latest progress a run reported: a percentage 0..100, undefined when none was reported. */
  readonly progressPercent: number | undefined;
  /** The latest progress data a run reported (empty when none). */
  readonly progressData: Buffer;
  /** The producer's headers (enqueue option `headers`), unchanged; `{}` when none. */
  readonly headers: Record<string, string>;
  /** The enqueue option `concurrencyKey` ('' when none). */
  readonly concurrencyKey: string;
  /** The error history: the last 10 failed runs and a cancel that made the job dead, oldest first (`error` is the latest, whole). */
  readonly errors: JobError[];
  /** The enqueue option `dependsOn`, as given; `[]` when none. */
  readonly dependsOn: string[];
  /** Parents in `dependsOn` that have not ended yet; 0 once the job is due (or when it has none). */
  readonly dependenciesLeft: number;
  /**
   * Each parent's result by parent id, bytes unchanged, copied when the parent
   * completed (a parent that completed without a result, or failed under
   * `runAfterFailedDependency`, is absent); `{}` when none.
   */
  readonly dependencyResults: Record<string, Buffer>;
  /** The enqueue option `runAfterFailedDependency`. */
  readonly runAfterFailedDependency: boolean;

  constructor(j: Job__Output) {
    this.id = j.id;
    this.queue = j.queue;
    this.type = j.type;
    this.payload = j.payload ?? Buffer.alloc(0);
    this.priority = j.priority;
    this.state = j.state;
    this.attempts = j.attempts;
    this.maxAttempts = j.maxAttempts;
    this.availableAtMs = toNumber(j.availableAtMs);
    this.leaseExpiresAtMs = toNumber(j.leaseExpiresAtMs);
    this.result = j.result ?? Buffer.alloc(0);
    this.error = j.error;
    this.idempotencyKey = j.idempotencyKey;
    this.concurrencyKey = j.concurrencyKey;
    this.createdAtMs = toNumber(j.createdAtMs);
    this.finishedAtMs = toNumber(j.finishedAtMs);
    this.backoffBaseMs = toNumber(j.backoffBaseMs);
    this.backoffMaxMs = toNumber(j.backoffMaxMs);
    this.workerId = j.workerId;
    this.timeoutMs = toNumber(j.timeoutMs);
    this.runDeadlineMs = toNumber(j.runDeadlineMs);
    this.cancelRequestedAtMs = toNumber(j.cancelRequestedAtMs);
    this.progressPercent = j.progressPercent ?? undefined;
    this.progressData = j.progressData ?? Buffer.alloc(0);
    this.headers = j.headers ?? {};
    this.errors = (j.errors ?? []).map((e) => ({ attempt: e.attempt, atMs: toNumber(e.atMs), error: e.error }));
    this.dependsOn = j.dependsOn ?? [];
    this.dependenciesLeft = j.dependenciesLeft ?? 0;
    this.dependencyResults = j.dependencyResults ?? {};
    this.runAfterFailedDependency = j.runAfterFailedDependency ?? false;
  }

  /** The payload decoded as UTF-8 JSON. */
  json<T = unknown>(): T {
    return decodeJson<T>(this.payload);
  }

  /** The result decoded as UTF-8 JSON (undefined when the result is empty). */
  resultJson<T = unknown>(): T | undefined {
    return this.result.length === 0 ? undefined : decodeJson<T>(this.result);
  }

  /** The progress data decoded as UTF-8 JSON (undefined when it is empty). */
  progressJson<T = unknown>(): T | undefined {
    return this.progressData.length === 0 ? undefined : decodeJson<T>(this.progressData);
  }
}
