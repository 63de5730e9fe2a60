// MinuteSeries: one number per minute (epoch ms / 60000) over the last
// HISTORY_MINUTES, each minute's values merged as they come (summed for a
// count, the highest kept for a depth). The charts of the last hour: jobs
// completed per minute (RateTracker) and the highest depth polled in each
// minute (StatsPoller).
// Thread safety: single-threaded (Node's event loop).

/** How many minutes of history are kept. */
export const HISTORY_MINUTES = 60;

export function minuteOf(ms: number): number {
  return Math.floor(ms / 60_000);
}

export class MinuteSeries {
  private readonly minutes = new Map<number, number>();

  /** `merge(old, value)`: a minute's value once it has one. */
  constructor(private readonly merge: (old: number, value: number) => number) {}

  /** Merges `value` into the minute of `nowMs`, and forgets minutes older than the history. */
  add(nowMs: number, value: number): void {
    const m = minuteOf(nowMs);
    const old = this.minutes.get(m);
    this.minutes.set(m, old === undefined ? value : this.merge(old, value));
    this.prune(nowMs);
  }

  /** Forgets the minutes more than HISTORY_MINUTES before the minute of `nowMs`. */
  prune(nowMs: number): void {
    const oldest = minuteOf(nowMs) - HISTORY_MINUTES;
    for (const m of this.minutes.keys()) if (m <= oldest) this.minutes.delete(m);
  }

  /** The first and last minutes holding a value; undefined when none does. */
  span(): { first: number; last: number } | undefined {
    if (this.minutes.size === 0) return undefined;
    const keys = [...this.minutes.keys()];
    return { first: Math.min(...keys), last: Math.max(...keys) };
  }

  /** The values of minutes `first` to `last`, oldest first; a minute without one gets `gap(the value before it)`. */
  range(first: number, last: number, gap: (before: number | undefined) => number): number[] {
    const out: number[] = [];
    for (let m = first; m <= last; m++) out.push(this.minutes.get(m) ?? gap(out[out.length - 1]));
    return out;
  }
}
