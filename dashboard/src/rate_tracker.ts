// RateTracker: how many jobs each queue of one token enqueued, completed and
// failed (retried or dead) per second over the last minute, and completed per
// minute over the last hour, counted in this process from the broker's event
// stream (Subscribe, events ENQUEUED, COMPLETED, RETRY and DEAD): one set of
// streams per token, at most 100 queues each, shared by every viewer, so
// viewers add no load on the broker or on Redis.
//
// Counts start when a queue's stream is subscribed: a queue's rates are
// unknown (undefined) until then, and its counts are dropped and start again
// after any gap (the stream ended, or the broker says events were missed),
// so a rate is never made of a partial count. A restarted dashboard starts
// with no history. Events are counted at the time they reach this process.
// Thread safety: single-threaded (Node's event loop).
import { BrokerClient, BrokerError, EventKind, QueueEvent } from './broker_client';

const KINDS: EventKind[] = ['EVENT_KIND_ENQUEUED', 'EVENT_KIND_COMPLETED', 'EVENT_KIND_RETRY', 'EVENT_KIND_DEAD'];

/** Subscribe takes at most this many queues per stream. */
export const QUEUES_PER_STREAM = 100;
/** The rates' window. */
export const RATE_WINDOW_S = 60;
/** The throughput history's length. */
export const HISTORY_MINUTES = 60;

export interface Rates {
  /** Jobs counted in the window. */
  enqueued: number;
  completed: number;
  failed: number;
  /** The window in seconds: RATE_WINDOW_S, or less while counting began less than that ago. */
  windowS: number;
}

interface Counts {
  enqueued: number;
  completed: number;
  failed: number;
}

/** One queue's counts: per second (the last RATE_WINDOW_S) and completed per minute. */
class Series {
  readonly seconds = new Map<number, Counts>();
  readonly minutes = new Map<number, number>();

  constructor(readonly since: number) {}

  add(kind: EventKind, nowMs: number): void {
    const sec = Math.floor(nowMs / 1000);
    let c = this.seconds.get(sec);
    if (!c) {
      c = { enqueued: 0, completed: 0, failed: 0 };
      this.seconds.set(sec, c);
    }
    if (kind === 'EVENT_KIND_ENQUEUED') c.enqueued++;
    else if (kind === 'EVENT_KIND_COMPLETED') {
      c.completed++;
      const min = Math.floor(nowMs / 60_000);
      this.minutes.set(min, (this.minutes.get(min) ?? 0) + 1);
    } else c.failed++;
    this.prune(nowMs);
  }

  prune(nowMs: number): void {
    const oldestSec = Math.floor(nowMs / 1000) - RATE_WINDOW_S;
    for (const s of this.seconds.keys()) if (s <= oldestSec) this.seconds.delete(s);
    const oldestMin = Math.floor(nowMs / 60_000) - HISTORY_MINUTES;
    for (const m of this.minutes.keys()) if (m <= oldestMin) this.minutes.delete(m);
  }
}

interface Stream {
  queues: string[];
  cancel: () => void;
  retry?: NodeJS.Timeout;
}

export class RateTracker {
  private following = '';
  private streams: Stream[] = [];
  /** The queues whose stream is subscribed now, with their counts. */
  private readonly series = new Map<string, Series>();
  private stopped = false;

  constructor(
    private readonly client: BrokerClient,
    private readonly token: string | undefined,
    private readonly retryMs = 2000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Follows exactly these queues (the poller's latest list); a changed list opens its streams again. */
  follow(queues: readonly string[]): void {
    if (this.stopped) return;
    const sorted = [...new Set(queues)].sort();
    const key = sorted.join('\n');
    if (key === this.following) return;
    this.following = key;
    this.closeAll();
    for (let i = 0; i < sorted.length; i += QUEUES_PER_STREAM) this.open(sorted.slice(i, i + QUEUES_PER_STREAM));
  }

  stop(): void {
    this.stopped = true;
    this.closeAll();
  }

  /** The queue's counts over the window; undefined while its stream is not subscribed. */
  rates(queue: string): Rates | undefined {
    const s = this.series.get(queue);
    if (!s) return undefined;
    const now = this.now();
    s.prune(now);
    const out: Rates = { enqueued: 0, completed: 0, failed: 0, windowS: Math.min(RATE_WINDOW_S, Math.max(1, Math.round((now - s.since) / 1000))) };
    for (const c of s.seconds.values()) {
      out.enqueued += c.enqueued;
      out.completed += c.completed;
      out.failed += c.failed;
    }
    return out;
  }

  /** Jobs completed in each minute since counting began, the last HISTORY_MINUTES at most, oldest first (the current minute last). */
  completedPerMinute(queue: string): number[] {
    const s = this.series.get(queue);
    if (!s) return [];
    const now = this.now();
    s.prune(now);
    const last = Math.floor(now / 60_000);
    const first = Math.max(Math.floor(s.since / 60_000), last - HISTORY_MINUTES + 1);
    const out: number[] = [];
    for (let m = first; m <= last; m++) out.push(s.minutes.get(m) ?? 0);
    return out;
  }

  private open(queues: string[]): void {
    const stream: Stream = { queues, cancel: () => {} };
    const restart = (err: BrokerError) => {
      // A stream closed by closeAll (its queues' counts already dropped there).
      if (this.stopped || !this.streams.includes(stream)) return;
      for (const q of queues) this.series.delete(q);
      // A refused token or permission will not change soon: wait longer.
      const wait = err.code === 7 || err.code === 16 ? 30_000 : this.retryMs;
      stream.retry = setTimeout(start, wait);
      stream.retry.unref();
    };
    const start = () => {
      stream.cancel = this.client.subscribe(this.token, { queues, kinds: KINDS }, (m) => {
        if (!this.streams.includes(stream)) return; // closed: what it still delivers is not counted
        if (m.subscribed || m.events_missed) {
          // Counting (again) from now: a gap's events are gone.
          for (const q of queues) this.series.set(q, new Series(this.now()));
        }
        for (const e of m.events) this.count(e);
      }, restart);
    };
    this.streams.push(stream);
    start();
  }

  private count(e: QueueEvent): void {
    this.series.get(e.queue)?.add(e.kind, this.now());
  }

  private closeAll(): void {
    const old = this.streams;
    this.streams = [];
    for (const s of old) {
      clearTimeout(s.retry);
      s.cancel();
      for (const q of s.queues) this.series.delete(q);
    }
  }
}
