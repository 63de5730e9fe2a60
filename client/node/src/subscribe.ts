/**
 * Client.subscribe: the events of one or more queues over Subscribe calls,
 * read only as fast as the caller takes them, subscribing again by itself
 * after the broker went away (UNAVAILABLE, or a CANCELLED this client did
 * not cause: errors.ts, brokerWentAway) or cut the stream off
 * (SUBSCRIBER_TOO_SLOW, TOO_MANY_SUBSCRIPTIONS), with one 'events_missed'
 * event for the gap (docs/clients.md, Producer). A stream the client
 * cancels itself (close(), the signal, no confirmation in time) never leads
 * to subscribing again.
 */
import type * as grpc from '@grpc/grpc-js';
import { abortError, callTimeoutMs } from './call_options';
import { reconnectDelayMs } from './claim_stream';
import { toNumber } from './codec';
import { brokerWentAway, JobwireError, Reason, Status } from './errors';
import type { BrokerClient } from './proto';
import type { EventKind as ProtoEventKind } from './generated/jobwire/v1/EventKind';
import type { QueueEvent__Output as ProtoQueueEvent } from './generated/jobwire/v1/QueueEvent';
import type { SubscribeRequest } from './generated/jobwire/v1/SubscribeRequest';
import type { SubscribeResponse__Output } from './generated/jobwire/v1/SubscribeResponse';

/** The kinds a subscription may ask for (broker.proto, EventKind), in the proto's order. */
export const EVENT_KINDS = Object.freeze([
  'enqueued', 'active', 'completed', 'retry', 'dead', 'cancelled',
  'lease_expired', 'released', 'redriven', 'deleted', 'progress', 'cancel_requested', 'timed_out',
] as const);

/** A kind a subscription may ask for. */
export type EventKind = (typeof EVENT_KINDS)[number];

/**
 * What a QueueEvent says happened: an EventKind; 'events_missed', made by
 * the client when events may have been lost just before it; or 'unknown',
 * a kind this client does not know (sent by a newer broker).
 */
export type QueueEventKind = EventKind | 'events_missed' | 'unknown';

/** One event of a Subscription. */
export interface QueueEvent {
  kind: QueueEventKind;
  /** The queue as subscribe named it ('' for 'events_missed'). */
  queue: string;
  /** '' for 'events_missed' and the queue-wide 'deleted' of DeleteQueue. */
  jobId: string;
  type: string;
  /** The job's attempts after the event (runs started so far). */
  attempts: number;
  /** When it happened: Redis time, epoch ms (0 for 'events_missed'). */
  atMs: number;
  /**
   * With includeDetails: the result of 'completed' and the error of 'retry'
   * and 'dead', as read from the job just after the event (empty when it was
   * gone by then). Else empty.
   */
  result: Buffer;
  error: string;
  /** 'progress': the percentage reported, undefined when the report had none (and for other kinds). */
  progressPercent: number | undefined;
  /** With includeDetails, 'progress': the job's progress data just after the report. Else empty. */
  progressData: Buffer;
}

/** The options of Client.subscribe. */
export interface SubscribeOptions {
  /** Deliver only these kinds; unset or empty: all. 'events_missed' comes anyway and may not be named. */
  kinds?: readonly EventKind[];
  /** Fill `result` of 'completed', `error` of 'retry' / 'dead' and `progressData` of 'progress' (default false). */
  includeDetails?: boolean;
  /**
   * Ends the subscription: aborted before the broker confirmed, subscribe
   * rejects as call_options.ts says; aborted later, it ends as close() does.
   */
  signal?: AbortSignal;
  /** How long (ms) the broker has to confirm each Subscribe call; default: the client's timeoutMs. */
  timeoutMs?: number;
}

const KIND_VALUE = new Map<string, ProtoEventKind>(
  EVENT_KINDS.map((k) => [k, `EVENT_KIND_${k.toUpperCase()}` as ProtoEventKind]));
const KIND_NAME = new Map<unknown, EventKind>(EVENT_KINDS.map((k) => [KIND_VALUE.get(k), k]));

/** The errors after which a subscription that ran subscribes again (besides brokerWentAway's). */
const RESUBSCRIBE_REASONS: ReadonlySet<string> = new Set([Reason.SUBSCRIBER_TOO_SLOW, Reason.TOO_MANY_SUBSCRIPTIONS]);

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * The SubscribeRequest. Throws TypeError for queues that are not a string or
 * an array of strings, for kinds that are not an array, and for a kind not
 * among EVENT_KINDS (naming it). The queues themselves are checked by the
 * broker (INVALID_ARGUMENT).
 */
export function subscribeRequest(queues: string | readonly string[], options?: SubscribeOptions): SubscribeRequest {
  const list = typeof queues === 'string' ? [queues] : queues;
  if (!Array.isArray(list) || list.some((q) => typeof q !== 'string')) {
    throw new TypeError('jobwire: subscribe queues must be a queue name or an array of names');
  }
  const kinds = options?.kinds ?? [];
  if (!Array.isArray(kinds)) throw new TypeError('jobwire: options.kinds must be an array of event kinds');
  const req: SubscribeRequest = { queues: [...list], kinds: [], includeDetails: options?.includeDetails === true };
  for (const k of kinds) {
    const value = typeof k === 'string' ? KIND_VALUE.get(k) : undefined;
    if (value === undefined) {
      const why = k === 'events_missed' ? 'delivered by the client, never requested' : 'not an event kind';
      throw new TypeError(`jobwire: unknown event kind ${JSON.stringify(k)} (${why}); one of: ${EVENT_KINDS.join(', ')}`);
    }
    req.kinds!.push(value);
  }
  return req;
}

/** A QueueEvent from the proto's. */
export function eventFromProto(ev: ProtoQueueEvent): QueueEvent {
  return {
    kind: KIND_NAME.get(ev.kind) ?? 'unknown',
    queue: ev.queue,
    jobId: ev.jobId,
    type: ev.type,
    attempts: ev.attempts,
    atMs: toNumber(ev.atMs),
    result: ev.result ?? Buffer.alloc(0),
    error: ev.error,
    progressPercent: ev.progressPercent ?? undefined,
    progressData: ev.progressData ?? Buffer.alloc(0),
  };
}

function missedEvent(): QueueEvent {
  return {
    kind: 'events_missed', queue: '', jobId: '', type: '', attempts: 0, atMs: 0, result: Buffer.alloc(0), error: '',
    progressPercent: undefined, progressData: Buffer.alloc(0),
  };
}

/**
 * One subscription's rules, shared with nothing else: the events of each
 * message, the wait before subscribing again. One event loop; used by one
 * Subscription.
 */
export class SubscribeState {
  /** Calls failed since the last confirmation. */
  private attempt = 0;
  /** A stream ended: the next confirmation brings 'events_missed'. */
  private missed = false;

  /**
   * The events a message carries: one 'events_missed' first when it says
   * events were lost, or when it confirms a subscription made again after a
   * stream ended.
   */
  take(msg: SubscribeResponse__Output): QueueEvent[] {
    const out: QueueEvent[] = [];
    if (msg.eventsMissed || (msg.subscribed && this.missed)) out.push(missedEvent());
    if (msg.subscribed) {
      this.missed = false;
      this.attempt = 0;
    }
    for (const ev of msg.events ?? []) out.push(eventFromProto(ev));
    return out;
  }

  /**
   * The wait (ms) before subscribing again after a stream that ran ended
   * with `err` (or a call made again failed with it): the Claim stream's
   * reconnect backoff, or the broker's retryDelayMs when larger. Throws
   * `err` unless the broker went away (brokerWentAway: UNAVAILABLE, or
   * CANCELLED the client did not cause, a draining gRPC C++ broker,
   * grpc/grpc#41785), it is RESOURCE_EXHAUSTED with SUBSCRIBER_TOO_SLOW or
   * TOO_MANY_SUBSCRIPTIONS, or the client's own DEADLINE_EXCEEDED (no
   * confirmation in time, reason ''). Never sees the status of a stream the
   * client cancelled: pull() and resubscribe() stop once closed (close()
   * marks it closed before cancelling), and open() turns its own timer's
   * cancel into that DEADLINE_EXCEEDED.
   */
  retryDelay(err: JobwireError): number {
    const retry = brokerWentAway(err)
      || (err.code === Status.RESOURCE_EXHAUSTED && RESUBSCRIBE_REASONS.has(err.reason))
      || (err.code === Status.DEADLINE_EXCEEDED && err.reason === '');
    if (!retry) throw err;
    this.missed = true;
    const delay = reconnectDelayMs(this.attempt);
    if (this.attempt < 16) this.attempt++;
    return Math.max(delay, err.retryDelayMs ?? 0);
  }
}

/**
 * The events of Client.subscribe: an AsyncIterable<QueueEvent> (for await)
 * that is its own iterator. Made subscribed (the broker confirmed). Each
 * next() reads the stream only once the events already read are taken, so a
 * caller that falls behind is cut off by the broker (SUBSCRIBER_TOO_SLOW)
 * rather than buffered here; a gap is bridged inside next(), which waits
 * meanwhile. next() rejects with the error that ended the subscription (then
 * resolves done), and resolves done once closed. Calls of next() are served
 * one after the other. Leaving a for-await loop (break, throw) closes it.
 */
export class Subscription implements AsyncIterableIterator<QueueEvent> {
  private call!: grpc.ClientReadableStream<SubscribeResponse__Output>;
  private reader!: AsyncIterator<SubscribeResponse__Output>;
  private readonly pending: QueueEvent[] = [];
  private closedFlag = false;
  /** Ends the backoff wait early (set while waiting). */
  private wake: (() => void) | undefined;
  /** Removes the abort listener of the signal (set while listening). */
  private unlisten: (() => void) | undefined;
  /** The last next() call; the following one waits for it. */
  private tail: Promise<unknown> = Promise.resolve();

  /** @internal Use Client.subscribe. */
  constructor(
    private readonly stub: BrokerClient,
    private readonly metadata: () => grpc.Metadata,
    private readonly request: SubscribeRequest,
    private readonly confirmMs: number,
    signal?: AbortSignal,
    private readonly state: SubscribeState = new SubscribeState(),
  ) {
    if (signal) {
      const onAbort = () => this.close();
      signal.addEventListener('abort', onAbort, { once: true });
      this.unlisten = () => signal.removeEventListener('abort', onAbort);
    }
  }

  /** True once closed (close(), the signal, or an error that ended it). */
  get closed(): boolean {
    return this.closedFlag;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<QueueEvent, undefined>> {
    const result = this.tail.then(() => this.pull());
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Closes the subscription (what for-await calls when the loop is left). */
  async return(): Promise<IteratorResult<QueueEvent, undefined>> {
    this.close();
    return DONE;
  }

  /**
   * Ends the subscription: its call is cancelled, events not yet taken are
   * dropped, and iterating ends (next() resolves done). Idempotent.
   */
  close(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.pending.length = 0;
    this.call?.cancel();
    this.wake?.();
    this.unlisten?.();
    this.unlisten = undefined;
  }

  /**
   * One Subscribe call, confirmed: its first message's events are pending.
   * Rejects with JobwireError: the call's error, or DEADLINE_EXCEEDED
   * (reason '') when no message came within confirmMs. Resolves, with
   * nothing pending, when the subscription is closed meanwhile.
   * @internal
   */
  async open(): Promise<void> {
    if (this.closedFlag) return;
    const call = this.stub.Subscribe(this.request, this.metadata());
    call.on('error', () => { /* read through the iterator */ });
    this.call = call;
    this.reader = call[Symbol.asyncIterator]();
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      call.cancel();
    }, this.confirmMs);
    let first: IteratorResult<SubscribeResponse__Output>;
    try {
      first = await this.reader.next();
    } catch (e) {
      if (this.closedFlag) return;
      throw late ? this.notConfirmed() : JobwireError.from(e);
    } finally {
      clearTimeout(timer);
    }
    if (late) throw this.notConfirmed(); // the message came as the timer cancelled the call
    if (first.done) throw ended();
    this.pending.push(...this.state.take(first.value));
  }

  private async pull(): Promise<IteratorResult<QueueEvent, undefined>> {
    for (;;) {
      const ev = this.pending.shift();
      if (ev !== undefined) return { done: false, value: ev };
      if (this.closedFlag) return DONE;
      let err: JobwireError;
      try {
        const r = await this.reader.next();
        if (!r.done) {
          this.pending.push(...this.state.take(r.value));
          continue;
        }
        err = ended();
      } catch (e) {
        err = JobwireError.from(e);
      }
      if (this.closedFlag) return DONE;
      await this.resubscribe(err);
    }
  }

  /**
   * Subscribes again after the stream ended with `err`, waiting the backoff
   * before each call, until a call is confirmed or the subscription is
   * closed. Rejects (closing) with an error that is not one to subscribe
   * again after.
   */
  private async resubscribe(err: JobwireError): Promise<void> {
    for (;;) {
      let delay: number;
      try {
        delay = this.state.retryDelay(err);
      } catch (e) {
        this.close();
        throw e;
      }
      await this.sleep(delay);
      if (this.closedFlag) return;
      try {
        await this.open();
        return;
      } catch (e) {
        if (this.closedFlag) return;
        err = JobwireError.from(e);
      }
    }
  }

  /** Resolves after `ms`, or at once when closed meanwhile. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private notConfirmed(): JobwireError {
    return new JobwireError(Status.DEADLINE_EXCEEDED, `Subscribe not confirmed by the broker within ${this.confirmMs} ms`);
  }
}

function ended(): JobwireError {
  return new JobwireError(Status.INTERNAL, 'Subscribe stream ended without an error');
}

/** Subscribes; see Client.subscribe. */
export async function subscribe(
  stub: BrokerClient,
  metadata: () => grpc.Metadata,
  queues: string | readonly string[],
  options: SubscribeOptions | undefined,
  defaultTimeoutMs: number,
): Promise<Subscription> {
  const confirmMs = callTimeoutMs(options, defaultTimeoutMs);
  const request = subscribeRequest(queues, options);
  const signal = options?.signal;
  if (signal?.aborted) throw abortError(signal);
  const sub = new Subscription(stub, metadata, request, confirmMs, signal);
  try {
    await sub.open();
  } catch (e) {
    sub.close();
    throw e;
  }
  if (signal?.aborted) throw abortError(signal);
  return sub;
}
