// How values from the broker are shown: bytes as pretty JSON when they parse
// as JSON, else as hex, both truncated; epoch milliseconds and durations as
// text.

/** Bytes shown at most (the rest is counted, not shown). */
export const MAX_SHOWN_BYTES = 16 * 1024;

export interface ShownBytes {
  kind: 'empty' | 'json' | 'hex';
  text: string;
  /** Bytes left out of `text` (0 when everything is shown). */
  omitted: number;
}

/** JSON (pretty-printed) when the whole value is UTF-8 JSON, else hex of its first bytes. */
export function showBytes(bytes: Uint8Array | null | undefined): ShownBytes {
  if (!bytes || bytes.length === 0) return { kind: 'empty', text: '', omitted: 0 };
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    const pretty = JSON.stringify(JSON.parse(text), null, 2);
    if (pretty.length <= MAX_SHOWN_BYTES) return { kind: 'json', text: pretty, omitted: 0 };
    return { kind: 'json', text: pretty.slice(0, MAX_SHOWN_BYTES), omitted: pretty.length - MAX_SHOWN_BYTES };
  } catch {
    // not UTF-8 JSON: hex below
  }
  const shown = bytes.subarray(0, MAX_SHOWN_BYTES / 4);
  const lines: string[] = [];
  for (let i = 0; i < shown.length; i += 16) {
    lines.push(Buffer.from(shown.subarray(i, i + 16)).toString('hex').replace(/(..)(?!$)/g, '$1 '));
  }
  return { kind: 'hex', text: lines.join('\n'), omitted: bytes.length - shown.length };
}

/**
 * `count` jobs over `windowS` seconds as a rate: "0/s", "<0.1/s", "0.4/s",
 * "12/s" (one decimal below 10 a second, whole numbers above).
 */
export function showRate(count: number, windowS: number): string {
  const r = count / Math.max(1, windowS);
  if (r === 0) return '0/s';
  if (r < 0.05) return '<0.1/s';
  const tenths = Math.round(r * 10) / 10;
  return tenths < 10 ? `${tenths.toFixed(1)}/s` : `${Math.round(r)}/s`;
}

/** An epoch-ms time as ISO 8601 UTC; 0 as an empty string. */
export function showTime(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString().replace('.000Z', 'Z') : '';
}

/**
 * A queue's limits as one sentence: "at most 5 jobs per 1 s (bursts of 10);
 * at most 3 active jobs", or "no rate limit, no limit on active jobs"; a
 * per-key limit adds "; at most 2 active jobs per concurrency key".
 * Intervals are exact (whole seconds, else ms): a rate is not rounded.
 */
export function showLimits(
  rateLimit: { count: number; interval_ms: number; burst: number } | null | undefined,
  maxActive: number,
  maxActivePerKey = 0,
  keyRateLimit: { count: number; interval_ms: number; burst: number } | null = null,
): string {
  const interval = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);
  const jobs = (n: number) => `${n} job${n === 1 ? '' : 's'}`;
  const perInterval = (limit: { count: number; interval_ms: number; burst: number }) =>
    `at most ${jobs(limit.count)} per ${interval(limit.interval_ms)}` +
    (limit.burst > 0 && limit.burst !== limit.count ? ` (bursts of ${limit.burst})` : '');
  const rate = rateLimit && rateLimit.count > 0 ? perInterval(rateLimit) : 'no rate limit';
  const active = maxActive > 0 ? `at most ${maxActive} active job${maxActive === 1 ? '' : 's'}` : 'no limit on active jobs';
  const perKey = maxActivePerKey > 0
    ? `; at most ${maxActivePerKey} active job${maxActivePerKey === 1 ? '' : 's'} per concurrency key`
    : '';
  const keyRate = keyRateLimit && keyRateLimit.count > 0
    ? `; ${perInterval(keyRateLimit)} per concurrency key`
    : '';
  return `${rate}; ${active}${perKey}${keyRate}`;
}

/** A duration in ms as "850 ms", "12 s", "3 min", "5 h", "2 d". */
export function showDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/**
 * How long ago `atMs` was, seen at `nowMs`: "12 s ago" (showDuration); a
 * time ahead of now (another replica's clock) counts as "0 ms ago"; 0 (no
 * time) as an empty string.
 */
export function showAgo(atMs: number, nowMs: number): string {
  return atMs > 0 ? `${showDuration(Math.max(0, nowMs - atMs))} ago` : '';
}

/**
 * A Claim's queues, each with its weight when the claim has weights (one per
 * queue): ["high ×3", "low ×1"]; the names alone in strict order (no
 * weights): ["high", "low"].
 */
export function showQueueWeights(queues: readonly string[], weights: readonly number[] | null | undefined): string[] {
  const weighted = Boolean(weights) && weights!.length === queues.length && queues.length > 0;
  return queues.map((q, i) => (weighted ? `${q} ×${weights![i]}` : q));
}

/** A Claim's job types, "a, b", or "all" when it names none (every type). */
export function showTypes(types: readonly string[] | null | undefined): string {
  return types && types.length > 0 ? types.join(', ') : 'all';
}
