/**
 * The Worker's one Claim stream (docs/clients.md, Worker, Delivery): opened
 * with max_in_flight = free handler slots, the job types with a handler
 * (claim_types.ts) and the queue weights (claim_weights.ts), reopened after
 * any end or error with backoff, and reopened at full size once a reduced
 * one has idled. It is a Work stream, which also carries the worker's acks
 * (sendAcks) and their answers; a broker that answers Work UNIMPLEMENTED
 * (older than Work) is sent Claim streams from then on, and sendAcks
 * declines (the acks then go as AckBatch calls).
 */
import type * as grpc from '@grpc/grpc-js';
import { claimTypes } from './claim_types';
import { JobwireError, Status, statusName } from './errors';
import type { BrokerClient } from './proto';
import type { Logger } from './worker_options';
import type { ClaimResponse__Output } from './generated/jobwire/v1/ClaimResponse';
import type { ClaimRequest } from './generated/jobwire/v1/ClaimRequest';
import type { AckRequest } from './generated/jobwire/v1/AckRequest';
import type { AckResult__Output } from './generated/jobwire/v1/AckResult';
import type { WorkRequest } from './generated/jobwire/v1/WorkRequest';
import type { WorkResponse__Output } from './generated/jobwire/v1/WorkResponse';

/** Reconnect backoff of the Claim stream: 100 ms doubling to 5 s, full jitter. */
const RECONNECT_BASE_MS = 100;
const RECONNECT_MAX_MS = 5000;
/** A reduced-capacity stream is reopened at full capacity after this idle time. */
const REGROW_IDLE_MS = 1000;

/**
 * The wait (ms) before reopening the Claim stream for the `attempt`-th time
 * (0 for the first) since a stream last delivered: uniform in [0, d] ("full
 * jitter"), d = 100 ms doubled per attempt, at most 5 s.
 */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const cap = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** Math.min(Math.max(attempt, 0), 16));
  return Math.floor(random() * (cap + 1));
}

type WorkCall = grpc.ClientDuplexStream<WorkRequest, WorkResponse__Output>;

/** An acks batch sent on a Work stream, waiting for its answer. */
interface PendingAcks {
  count: number;
  /** The per-ack results; null when the stream ended before answering. */
  resolve: (results: AckResult__Output[] | null) => void;
  /** The batch was refused as a whole. */
  reject: (err: JobwireError) => void;
}

/** One opened Claim or Work call. */
export interface StreamState {
  call: grpc.ClientReadableStream<ClaimResponse__Output> | WorkCall;
  capacity: number;
  inFlight: number;
  openedAt: number;
  /** Work streams: the acks batches sent on it, by id; null on a Claim stream. */
  pendingAcks: Map<number, PendingAcks> | null;
}

/** What the stream needs from its Worker. */
export interface ClaimStreamHost {
  /** Concurrency minus the jobs held now. */
  freeSlots(): number;
  /** Nothing held. */
  idle(): boolean;
  /**
   * One Claim stream message: every job claimed for the stream since the
   * previous message (0..max_in_flight), to be taken one by one in claim
   * order, and the runs delivered on the stream that should stop (stops).
   */
  onMessage(s: StreamState, msg: ClaimResponse__Output): void;
  /** The Claim was refused INVALID_ARGUMENT: the run ends with err. */
  onFatal(err: JobwireError): void;
}

export interface ClaimStreamParams {
  stub: BrokerClient;
  metadata: () => grpc.Metadata;
  queues: string[];
  /** ClaimRequest.weights: one per queue, in the order of `queues`; empty for strict order. */
  weights: number[];
  concurrency: number;
  /** ClaimRequest.lease_ms (0: the broker default). */
  leaseMs: number;
  workerId: string;
  /** The longest an acks batch on the Work stream waits for its answer (the unary calls' deadline). */
  timeoutMs: number;
  /** The job types with a handler, read at each (re)open (ClaimRequest.types). */
  types: () => Iterable<string>;
  log: Logger | null;
  host: ClaimStreamHost;
}

/** Not thread-safe (one event loop); owned by one Worker run. */
export class ClaimStream {
  private stream: StreamState | null = null;
  private closed = false;
  private reconnectAttempt = 0;
  private reconnectTimer?: NodeJS.Timeout;
  private regrowTimer?: NodeJS.Timeout;
  /** The broker answered Work UNIMPLEMENTED: Claim streams from then on. */
  private claimOnly = false;
  private nextAcksId = 0;

  constructor(private readonly p: ClaimStreamParams) {}

  /** Opens the stream unless one is open, a reopen is pending, or no slot is free. */
  open(): void {
    if (this.closed || this.stream || this.reconnectTimer) return;
    const free = this.p.host.freeSlots();
    if (free <= 0) return; // reopened as soon as a slot frees (afterSettle())
    const req: ClaimRequest = {
      queues: this.p.queues,
      weights: this.p.weights,
      maxInFlight: free,
      leaseMs: this.p.leaseMs,
      workerId: this.p.workerId,
      types: claimTypes(this.p.types()),
    };
    let call: StreamState['call'];
    if (this.claimOnly) {
      call = this.p.stub.Claim(req, this.p.metadata());
    } else {
      const work = this.p.stub.Work(this.p.metadata());
      work.write({ claim: req });
      call = work;
    }
    const s: StreamState = {
      call, capacity: free, inFlight: 0, openedAt: Date.now(), pendingAcks: this.claimOnly ? null : new Map(),
    };
    this.stream = s;
    call.on('data', (msg: ClaimResponse__Output | WorkResponse__Output) => this.onMessage(s, msg));
    call.on('error', () => { /* handled in 'status' */ });
    call.on('status', (st: grpc.StatusObject) => this.onStreamEnd(s, st));
    this.armRegrow();
  }

  /**
   * Sends `acks` on the open Work stream. Resolves with one result per ack,
   * in order, or with null when the stream ended before answering (the acks
   * may or may not be stored: send them again another way; a repeated ack
   * answers OK); rejects with JobwireError when the broker refused the batch
   * as a whole, or with DEADLINE_EXCEEDED when no answer came within
   * timeoutMs (as an AckBatch call would; a late answer is ignored).
   * Returns null, sending nothing, when no Work stream is open.
   */
  sendAcks(acks: AckRequest[]): Promise<AckResult__Output[] | null> | null {
    const s = this.stream;
    if (!s || !s.pendingAcks) return null;
    const pending = s.pendingAcks;
    const id = this.nextAcksId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (pending.delete(id)) {
          reject(new JobwireError(Status.DEADLINE_EXCEEDED, 'Work: the acks were not answered within the call deadline'));
        }
      }, this.p.timeoutMs);
      pending.set(id, {
        count: acks.length,
        resolve: (results) => { clearTimeout(timer); resolve(results); },
        reject: (err) => { clearTimeout(timer); reject(err); },
      });
      (s.call as WorkCall).write({ acks: { id, acks } });
    });
  }

  /** A held job was settled: reopen a stream that ended, or arm the regrow. */
  afterSettle(): void {
    if (this.closed) return;
    if (!this.stream) this.open();
    else this.armRegrow();
  }

  /** Cancels the stream and every pending reopen; nothing opens again. */
  close(): void {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.regrowTimer);
    this.reconnectTimer = undefined;
    const s = this.stream;
    this.stream = null;
    if (s) {
      s.call.cancel();
      endAcks(s);
    }
  }

  private onMessage(s: StreamState, msg: ClaimResponse__Output | WorkResponse__Output): void {
    for (const answer of ('ackAnswers' in msg ? msg.ackAnswers : [])) {
      const pending = s.pendingAcks?.get(answer.id);
      if (!pending) continue;
      s.pendingAcks!.delete(answer.id);
      if (answer.code !== Status.OK) {
        pending.reject(new JobwireError(answer.code, answer.message, { reason: answer.reason }));
      } else if (answer.results.length !== pending.count) {
        pending.reject(new JobwireError(Status.INTERNAL,
          `Work answered ${answer.results.length} results for ${pending.count} acks`));
      } else {
        pending.resolve(answer.results);
      }
    }
    if ((msg.jobs ?? []).some((cj) => cj.job)) {
      // A delivering stream resets the reconnect backoff and is not idle.
      this.reconnectAttempt = 0;
      clearTimeout(this.regrowTimer);
    }
    this.p.host.onMessage(s, msg);
  }

  private onStreamEnd(s: StreamState, st: grpc.StatusObject): void {
    endAcks(s);
    if (this.stream !== s) return; // replaced or cancelled on purpose
    this.stream = null;
    clearTimeout(this.regrowTimer);
    if (this.closed) return;
    if (st.code === Status.UNIMPLEMENTED && !this.claimOnly) {
      this.claimOnly = true; // a broker older than Work: Claim at once
      this.open();
      return;
    }
    if (st.code === Status.INVALID_ARGUMENT) {
      const err = JobwireError.fromStatus(st);
      this.p.log?.error(`Claim refused: ${err.message}`);
      this.p.host.onFatal(err);
      return;
    }
    const delay = reconnectDelayMs(this.reconnectAttempt);
    if (this.reconnectAttempt < 16) this.reconnectAttempt++;
    this.p.log?.warn(`Claim stream ended (${statusName(st.code)}: ${st.details}); reopening in ${delay} ms`);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.open();
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
    if (!s || s.capacity >= this.p.concurrency || !this.p.host.idle() || this.closed) return;
    this.regrowTimer = setTimeout(() => {
      if (this.stream !== s || !this.p.host.idle() || this.closed) return;
      this.stream = null;
      s.call.cancel();
      endAcks(s);
      this.open();
    }, REGROW_IDLE_MS);
  }
}

/** The stream ended: its acks batches still waiting resolve with null. */
function endAcks(s: StreamState): void {
  if (!s.pendingAcks) return;
  for (const pending of s.pendingAcks.values()) pending.resolve(null);
  s.pendingAcks.clear();
}
