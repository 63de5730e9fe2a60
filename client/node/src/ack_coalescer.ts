/**
 * AckCoalescer: turns the Acks of a Worker's concurrent jobs into AckBatch
 * calls (the Node form of client/cpp/ack_coalescer.h). The acks queued in
 * one turn of the event loop (the jobs of one Claim message whose handlers
 * finish together) go in one call, sent before the next turn (a microtask,
 * no timer), when no AckBatch is in flight; acks queued while a call is in
 * flight go together in the next call, sent as soon as that one answers.
 * So coalescing adds no delay, and under load the calls per job drop to
 * about 1 / (acks finishing during one round trip). (Sending a turn's first
 * ack alone, as this did before 2026-12-07, cost one more call per Claim
 * message: bench/performance_notes.md, "Acks of one turn".)
 */
import type * as grpc from '@grpc/grpc-js';
import { JobwireError, Status } from './errors';
import { unary, type BrokerClient } from './proto';
import type { AckRequest } from './generated/jobwire/v1/AckRequest';
import type { AckBatchResponse__Output } from './generated/jobwire/v1/AckBatchResponse';
import type { AckResult__Output } from './generated/jobwire/v1/AckResult';

/** The most acks in one AckBatch (the broker's limit). */
export const MAX_ACK_BATCH = 1000;
/**
 * The most result bytes in one AckBatch (a single larger ack still goes
 * alone): well under the broker's 64 MiB request limit.
 */
export const MAX_ACK_BATCH_BYTES = 8 * 1024 * 1024;

/**
 * One AckBatch call: resolves with one result per ack, in order; rejects with
 * JobwireError when the call fails as a whole (INTERNAL when the broker
 * answers a different number of results), or as unary() does when `signal`
 * aborts it.
 */
export async function sendAckBatch(
  stub: BrokerClient,
  acks: AckRequest[],
  timeoutMs: number,
  metadata: grpc.Metadata,
  signal?: AbortSignal,
): Promise<AckResult__Output[]> {
  const res = await unary<{ acks: AckRequest[] }, AckBatchResponse__Output>(
    stub, 'AckBatch', { acks }, timeoutMs, metadata, signal);
  if (res.results.length !== acks.length) {
    throw new JobwireError(Status.INTERNAL,
      `AckBatch answered ${res.results.length} results for ${acks.length} acks`);
  }
  return res.results;
}

/** Sends one batch: sendAckBatch bound to a stub, deadline and metadata. */
export type AckBatchSender = (acks: AckRequest[]) => Promise<AckResult__Output[]>;

interface Entry {
  request: AckRequest;
  resolve: () => void;
  reject: (err: JobwireError) => void;
}

/**
 * Not thread-aware (nothing in Node needs it): every method runs on the
 * event loop. At most one AckBatch is in flight per coalescer.
 */
export class AckCoalescer {
  private readonly queued: Entry[] = [];
  private sending = false;
  private scheduled = false;

  constructor(private readonly send: AckBatchSender) {}

  /**
   * Acks one job, as a unary Ack would: resolves when the broker stored it;
   * rejects with JobwireError carrying the ack's own refusal
   * (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION) or, when the AckBatch
   * call carrying it failed as a whole, that call's error (UNAVAILABLE,
   * DEADLINE_EXCEEDED, CANCELLED from a draining broker, ...). Never retries:
   * the caller (OutcomeSender, when lease_rules.ts outcomeUnanswered) does,
   * with the same token.
   */
  ack(request: AckRequest): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ request, resolve, reject });
      if (this.sending || this.scheduled) return;
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        if (!this.sending) this.flush();
      });
    });
  }

  /** Sends the oldest queued acks (up to the limits) in one call, then the next ones. */
  private flush(): void {
    const batch = this.takeBatch();
    if (batch.length === 0) return;
    this.sending = true;
    void this.sendBatch(batch).finally(() => {
      this.sending = false;
      this.flush();
    });
  }

  /** Sends `batch` and settles each of its acks; never rejects. */
  private async sendBatch(batch: Entry[]): Promise<void> {
    let results: AckResult__Output[];
    try {
      results = await this.send(batch.map((e) => e.request));
    } catch (err) {
      const error = JobwireError.from(err);
      for (const e of batch) e.reject(error);
      return;
    }
    batch.forEach((e, i) => {
      const r = results[i];
      if (r === undefined) e.reject(new JobwireError(Status.INTERNAL, `AckBatch answered no result for ack ${i}`));
      else if (r.code === Status.OK) e.resolve();
      else e.reject(new JobwireError(r.code, r.message, { reason: r.reason }));
    });
  }

  private takeBatch(): Entry[] {
    return takeBatch(this.queued, MAX_ACK_BATCH, MAX_ACK_BATCH_BYTES, (e) => resultBytes(e.request));
  }
}

/**
 * Removes and returns the oldest entries of `queued` that fit one call: at
 * most `maxCount`, and at most `maxBytes` by `bytesOf` unless the first
 * alone is larger (it then goes alone).
 */
export function takeBatch<T>(queued: T[], maxCount: number, maxBytes: number, bytesOf: (entry: T) => number): T[] {
  let bytes = 0;
  let n = 0;
  while (n < queued.length && n < maxCount) {
    const size = bytesOf(queued[n]);
    if (n > 0 && bytes + size > maxBytes) break;
    bytes += size;
    n++;
  }
  return queued.splice(0, n);
}

function resultBytes(req: AckRequest): number {
  const r = req.result;
  if (r === undefined || r === null) return 0;
  return typeof r === 'string' ? Buffer.byteLength(r) : r.byteLength;
}
