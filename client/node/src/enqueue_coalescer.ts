/**
 * EnqueueCoalescer: turns the `enqueue` calls a Client gets in one turn of
 * the event loop (before its microtasks run: a loop of calls, a
 * Promise.all over a map) into one call: an Enqueue for a lone job, else an
 * EnqueueBatch of them in call order. Nothing waits for company or for a
 * call in flight, so coalescing adds no delay; a program that makes many
 * enqueues at once (a burst from a timer, a request handler storing several
 * jobs) makes one call instead of one per job, each a grpc-js call of about
 * 0.5 ms of CPU.
 *
 * Every enqueue ends as it would have alone:
 * - stored: its job id and duplicate flag (a later job of a batch repeating
 *   an earlier one's idempotency key is a duplicate of it, as two calls one
 *   after the other would be);
 * - refused in a batch (its result carries an error): sent again alone, so
 *   that it fails with exactly a lone Enqueue's status and details (a
 *   refused job stored nothing, so sending it again adds nothing);
 * - a batch refused as a whole with INVALID_ARGUMENT, UNAUTHENTICATED or
 *   PERMISSION_DENIED (nothing stored; for instance a token that may enqueue
 *   to one of the batch's queues but not another): each sent again alone;
 * - any other failure of the call (UNAVAILABLE, DEADLINE_EXCEEDED, ...):
 *   that error, as a lone call would have had (the outcome unknown, as it
 *   would be).
 * Only enqueues without a `signal` or a `timeoutMs` of their own coalesce
 * (they share the client's deadline); the others are sent alone at once, by
 * the Client. So is a job with dependsOnBatchIndex (which a lone Enqueue
 * refuses, and which in a batch would name another caller's job).
 */
import { takeBatch } from './ack_coalescer';
import { JobwireError, Status } from './errors';
import type { EnqueueRequest } from './generated/jobwire/v1/EnqueueRequest';
import type { EnqueueResult__Output } from './generated/jobwire/v1/EnqueueResult';

/** The most jobs in one EnqueueBatch (the broker's limit). */
export const MAX_ENQUEUE_BATCH = 1000;
/**
 * The most payload and header bytes in one EnqueueBatch (a single larger job
 * still goes alone): well under the broker's 64 MiB request limit.
 */
export const MAX_ENQUEUE_BATCH_BYTES = 8 * 1024 * 1024;

/** What a stored job answers. */
export interface Stored {
  jobId: string;
  duplicate: boolean;
}

/** Sends one Enqueue with `timeoutMs` left (rejects with JobwireError). */
export type EnqueueSender = (request: EnqueueRequest, timeoutMs: number) => Promise<Stored>;
/** Sends one EnqueueBatch with `timeoutMs` left; one result per job. */
export type EnqueueBatchSender = (requests: EnqueueRequest[], timeoutMs: number) => Promise<EnqueueResult__Output[]>;

/** The codes of a batch refused as a whole with nothing stored. */
const REFUSED_WHOLE = new Set<number>([Status.INVALID_ARGUMENT, Status.UNAUTHENTICATED, Status.PERMISSION_DENIED]);

interface Entry {
  request: EnqueueRequest;
  resolve: (stored: Stored) => void;
  reject: (err: JobwireError) => void;
}

/** Not thread-aware (nothing in Node needs it): every method runs on the event loop. */
export class EnqueueCoalescer {
  private readonly queued: Entry[] = [];
  private scheduled = false;

  /** `timeoutMs`: each call's deadline. */
  constructor(
    private readonly sendOne: EnqueueSender,
    private readonly sendBatch: EnqueueBatchSender,
    private readonly timeoutMs: number,
  ) {}

  /** Stores one job, as a lone Enqueue would (see the class comment). */
  enqueue(request: EnqueueRequest): Promise<Stored> {
    if ((request.dependsOnBatchIndex?.length ?? 0) > 0) return this.sendOne(request, this.timeoutMs);
    return new Promise<Stored>((resolve, reject) => {
      this.queued.push({ request, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    });
  }

  /** Sends what this turn queued: up to the limits per call, one call after another without waiting. */
  private flush(): void {
    this.scheduled = false;
    for (let batch = this.takeBatch(); batch.length > 0; batch = this.takeBatch()) {
      void (batch.length === 1 ? this.alone(batch[0]) : this.together(batch));
    }
  }

  /** Sends one job alone and settles it; never rejects. */
  private async alone(e: Entry): Promise<void> {
    try {
      e.resolve(await this.sendOne(e.request, this.timeoutMs));
    } catch (err) {
      e.reject(JobwireError.from(err));
    }
  }

  /** Sends `batch` in one EnqueueBatch and settles each job; never rejects. */
  private async together(batch: Entry[]): Promise<void> {
    let results: EnqueueResult__Output[];
    try {
      results = await this.sendBatch(batch.map((e) => e.request), this.timeoutMs);
    } catch (err) {
      const error = JobwireError.from(err);
      if (REFUSED_WHOLE.has(error.code)) {
        await Promise.all(batch.map((e) => this.alone(e)));
      } else {
        for (const e of batch) e.reject(error);
      }
      return;
    }
    const refused: Entry[] = [];
    batch.forEach((e, i) => {
      const r = results[i];
      if (r === undefined) e.reject(new JobwireError(Status.INTERNAL, `EnqueueBatch answered no result for job ${i}`));
      else if (r.code === Status.OK) e.resolve({ jobId: r.jobId, duplicate: r.duplicate });
      else refused.push(e);
    });
    await Promise.all(refused.map((e) => this.alone(e)));
  }

  private takeBatch(): Entry[] {
    return takeBatch(this.queued, MAX_ENQUEUE_BATCH, MAX_ENQUEUE_BATCH_BYTES, (e) => jobBytes(e.request));
  }
}

/** About what a job adds to a request: its payload, headers and key. */
function jobBytes(req: EnqueueRequest): number {
  let n = 64 + (req.type?.length ?? 0) + (req.idempotencyKey?.length ?? 0);
  const p = req.payload;
  if (p !== undefined && p !== null) n += typeof p === 'string' ? Buffer.byteLength(p) : p.byteLength;
  for (const [k, v] of Object.entries(req.headers ?? {})) n += k.length + v.length;
  return n;
}
