// RateTracker: how many jobs each queue of one token enqueued, completed and
// failed (retried or dead) per second over the last minute, and completed per
// minute over the last hour, counted in this process from the broker's event
// stream (Subscribe, events ENQUEUED, COMPLETED, RETRY and DEAD): one set of
// streams per token, at most 100 queues each, shared by every viewer, so
// viewers add no load on the broker or on Redis. A queue that appears gets a
// stream of its own and the others keep theirs (and their counts); past
// SPARE_STREAMS more streams than the list needs, all are opened again.
//
// Counts start when a queue's stream is subscribed: a queue's rates are
// unknown (undefined) until then, and its counts are dropped and start again
// after any gap (the stream ended, or the broker says events were missed),
// so a rate is never made of a partial count. A restarted dashboard starts
// with no history. Events are counted at the time they reach this process.
// Thread safety: single-threaded (Node's event loop).
import { BrokerClient, BrokerError, EventKind, QueueEvent } from './broker_client';
import { HISTORY_MINUTES, MinuteSeries, minuteOf } from './minute_series';

const KINDS: EventKind[] = ['EVENT_KIND_ENQUEUED', 'EVENT_KIND_COMPLETED', 'EVENT_KIND_RETRY', 'EVENT_KIND_DEAD'];

/** Subscribe takes at most this many queues per stream. */
export const QUEUES_PER_STREAM = 100;
/** The rates' window. */
export const RATE_WINDOW_S = 60;

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
  readonly completed = new MinuteSeries((a, b) => a + b);

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
      this.completed.add(nowMs, 1);
    } else c.failed++;
    this.prune(nowMs);
  }

  prune(nowMs: number): void {
    const oldestSec = Math.floor(nowMs / 1000) - RATE_WINDOW_S;
    for (const s of this.seconds.keys()) if (s <= oldestSec) this.seconds.delete(s);
    this.completed.prune(nowMs);
  }
}

interface Stream {
  /** The queues the stream was opened with. */
  queues: string[];
  /** Those of them still followed (a queue gone from the list stays in its stream, uncounted). */
  wanted: Set<string>;
  cancel: () => void;
  retry?: NodeJS.Timeout;
}

/**
 * Streams opened for queues added one by one may outnumber the fewest that
 * cover the list by this many before they are all opened again as full
 * streams of 100 (which starts every queue's counts again).
 */
const SPARE_STREAMS = 8;

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

  /**
   * Follows exactly these queues (the poller's latest list). Queues that
   * stay keep their stream and their counts: new ones get new streams, a
   * stream whose queues are all gone is closed.
   */
  follow(queues: readonly string[]): void {
    if (this.stopped) return;
    const sorted = [...new Set(queues)].sort();
    const key = sorted.join('\n');
    if (key === this.following) return;
    this.following = key;
    const want = new Set(sorted);
    for (const s of [...this.streams]) {
      for (const q of s.wanted) {
        if (!want.has(q)) {
          s.wanted.delete(q);
          this.series.delete(q);
        }
      }
      if (s.wanted.size === 0) this.close(s);
    }
    const covered = new Set(this.streams.flatMap((s) => [...s.wanted]));
    let added = sorted.filter((q) => !covered.has(q));
    if (added.length === 0) return;
    const fewest = Math.ceil(sorted.length / QUEUES_PER_STREAM);
    if (this.streams.length + Math.ceil(added.length / QUEUES_PER_STREAM) > fewest + SPARE_STREAMS) {
      this.closeAll();
      added = sorted;
    }
    for (let i = 0; i < added.length; i += QUEUES_PER_STREAM) this.open(added.slice(i, i + QUEUES_PER_STREAM));
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
    const last = minuteOf(now);
    const first = Math.max(minuteOf(s.since), last - HISTORY_MINUTES + 1);
    return s.completed.range(first, last, () => 0);
  }

  private open(queues: string[]): void {
    const stream: Stream = { queues, wanted: new Set(queues), cancel: () => {} };
    const restart = (err: BrokerError) => {
      // A stream closed by closeAll (its queues' counts already dropped there).
      if (this.stopped || !this.streams.includes(stream)) return;
      for (const q of stream.wanted) this.series.delete(q);
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
          for (const q of stream.wanted) this.series.set(q, new Series(this.now()));
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

  private close(s: Stream): void {
    this.streams = this.streams.filter((x) => x !== s);
    clearTimeout(s.retry);
    s.cancel();
    for (const q of s.wanted) this.series.delete(q);
  }

  private closeAll(): void {
    for (const s of [...this.streams]) this.close(s);
  }
}
