// StatsPoller: one ListQueues call every interval for one bearer token (or
// none), shared by every viewer using that token: the queues page renders
// from its latest snapshot and every server-sent-events stream is fed by its
// ticks, so viewers add no load on the broker. Keeps each queue's depth
// (pending + active) over the last `historyLength` ticks for the sparklines,
// and the highest depth of each minute over the last hour.
// Its RateTracker follows the queues of the latest poll through the event
// stream, for the rates and the throughput history.
// A poller with no subscriber that nobody read for `idleMs` stops itself (and
// its RateTracker) and calls onIdle (StatsPollerHub then forgets it).
// Thread safety: single-threaded (Node's event loop).
import { BrokerClient, BrokerError, QueueStats } from './broker_client';
import { MinuteSeries } from './minute_series';
import { RateTracker } from './rate_tracker';

export interface Snapshot {
  /** When the poll answered (epoch ms). */
  at: number;
  /** The queues, by name; empty when `error` is set. */
  queues: QueueStats[];
  /** The failed poll's error; the previous queues are not kept. */
  error?: BrokerError;
}

export interface StatsPollerOptions {
  intervalMs: number;
  historyLength: number;
  idleMs: number;
  onIdle: () => void;
}

export function depthOf(q: QueueStats): number {
  return q.pending_due + q.pending_scheduled + q.active;
}

export class StatsPoller {
  private latest: Snapshot | undefined;
  private readonly history = new Map<string, number[]>();
  /** queue -> the highest depth polled in each minute of the last hour. */
  private readonly minutes = new Map<string, MinuteSeries>();
  private readonly subscribers = new Set<(s: Snapshot) => void>();
  private readonly firstWaiters: ((s: Snapshot) => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastUsedAt = Date.now();
  private polling = false;
  /** Rates and throughput of the queues of the latest poll. */
  readonly rates: RateTracker;

  constructor(
    private readonly client: BrokerClient,
    private readonly token: string | undefined,
    private readonly options: StatsPollerOptions,
  ) {
    this.rates = new RateTracker(client, token);
  }

  /** Polls at once, then every intervalMs. */
  start(): void {
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.rates.stop();
  }

  /** The latest snapshot; waits for the first poll when none has answered yet. */
  snapshot(): Promise<Snapshot> {
    this.lastUsedAt = Date.now();
    if (this.latest) return Promise.resolve(this.latest);
    return new Promise((resolve) => this.firstWaiters.push(resolve));
  }

  /** The queue's depth at each of the last ticks, oldest first. */
  depthHistory(queue: string): readonly number[] {
    return this.history.get(queue) ?? [];
  }

  /**
   * The highest depth polled in each minute, oldest first, from the first
   * minute this poller saw the queue (the last HISTORY_MINUTES at most); a
   * minute without a poll (a failed one) repeats the one before.
   */
  depthPerMinute(queue: string): number[] {
    const m = this.minutes.get(queue);
    const span = m?.span();
    if (!m || !span) return [];
    return m.range(span.first, span.last, (before) => before ?? 0);
  }

  /** Calls fn with every new snapshot until the returned function is called. */
  subscribe(fn: (s: Snapshot) => void): () => void {
    this.subscribers.add(fn);
    return () => {
      this.subscribers.delete(fn);
      this.lastUsedAt = Date.now();
    };
  }

  private async tick(): Promise<void> {
    if (this.subscribers.size === 0 && Date.now() - this.lastUsedAt > this.options.idleMs) {
      this.stop();
      this.options.onIdle();
      return;
    }
    if (this.polling) return; // a slow broker: skip a tick rather than pile up calls
    this.polling = true;
    let snap: Snapshot;
    try {
      const res = await this.client.listQueues(this.token);
      const queues = [...res.queues].sort((a, b) => a.queue.localeCompare(b.queue));
      snap = { at: Date.now(), queues };
      this.record(queues);
      this.rates.follow(queues.map((q) => q.queue));
    } catch (err) {
      const e = err instanceof BrokerError ? err : new BrokerError(2, String(err));
      snap = { at: Date.now(), queues: [], error: e };
    } finally {
      this.polling = false;
    }
    this.latest = snap;
    for (const w of this.firstWaiters.splice(0)) w(snap);
    for (const fn of this.subscribers) fn(snap);
  }

  private record(queues: QueueStats[]): void {
    const seen = new Set<string>();
    const now = Date.now();
    for (const q of queues) {
      seen.add(q.queue);
      const h = this.history.get(q.queue) ?? [];
      h.push(depthOf(q));
      if (h.length > this.options.historyLength) h.shift();
      this.history.set(q.queue, h);
      const m = this.minutes.get(q.queue) ?? new MinuteSeries(Math.max);
      m.add(now, depthOf(q));
      this.minutes.set(q.queue, m);
    }
    for (const name of this.history.keys()) if (!seen.has(name)) this.history.delete(name);
    for (const name of this.minutes.keys()) if (!seen.has(name)) this.minutes.delete(name);
  }
}

/** The pollers by token: one per distinct token in use, none per viewer. */
export class StatsPollerHub {
  private readonly pollers = new Map<string, StatsPoller>();

  constructor(
    private readonly client: BrokerClient,
    private readonly options: Omit<StatsPollerOptions, 'onIdle'>,
  ) {}

  /** The running poller for this token, started on first use. */
  get(token: string | undefined): StatsPoller {
    const key = token ?? '';
    let p = this.pollers.get(key);
    if (!p) {
      p = new StatsPoller(this.client, token, { ...this.options, onIdle: () => this.pollers.delete(key) });
      this.pollers.set(key, p);
      p.start();
    }
    return p;
  }

  /** Pollers running now (for tests and /healthz). */
  get size(): number {
    return this.pollers.size;
  }

  stopAll(): void {
    for (const p of this.pollers.values()) p.stop();
    this.pollers.clear();
  }
}
