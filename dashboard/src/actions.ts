// The actions an operator can take, one entry per POST /queues/<q>/<name>.
// Each says what it will change (the confirmation question, with the number
// of jobs it affects, read from the broker just before) and then does it.
// Pause, resume and update-queue change no job and are not confirmed.
import { BrokerClient, UpdateQueueRequest } from './broker_client';
import { showDuration } from './format';

export interface ActionInput {
  broker: BrokerClient;
  token: string | undefined;
  queue: string;
  /**
   * The jobs named by the form: exactly one for delete-job and cancel;
   * 1..MAX_SELECTED for retry-dead without all (a job page's one, or those
   * selected on the dead list).
   */
  jobIds: string[];
  /** retry-dead: every dead job of the queue (of `type` when it is set). */
  all: boolean;
  type: string;
  /** purge-dead: only the dead jobs that died more than this long ago; 0: all. */
  olderThanMs: number;
  /** delete-queue: also while jobs are active. */
  force: boolean;
  /** update-queue: the settings given (parseQueueSettings). */
  settings: Omit<UpdateQueueRequest, 'queue'>;
}

export interface Action {
  /** Asked (with the count) before the action runs; undefined: not confirmed. */
  question?: (input: ActionInput) => Promise<string>;
  /** Does it; answers the message shown after it. */
  run: (input: ActionInput) => Promise<string>;
  /** The action needs exactly one job id. */
  needsJob: boolean;
}

/** RetryDead takes at most this many ids per call (admin.proto). */
export const MAX_SELECTED = 1000;

/**
 * A count read by paging ListJobs stops after this many jobs: the question
 * then says "at least". Paging is what a count by type or by age costs (the
 * broker keeps counts per state only), so it is bounded.
 */
export const MAX_COUNTED = 100_000;

function plural(n: number): string {
  return `${n} job${n === 1 ? '' : 's'}`;
}

interface Count {
  n: number;
  /** More jobs than n may match: the count stopped at MAX_COUNTED. */
  more: boolean;
}

function showCount(c: Count): string {
  return c.more ? `at least ${plural(c.n)}` : plural(c.n);
}

/**
 * The dead jobs of the queue (of `type` when set) for which `matches` holds,
 * counted page by page. Without a type or a test the stats' count is exact.
 */
async function countDead(i: ActionInput, type: string, matches?: (finishedAtMs: number) => boolean): Promise<Count> {
  if (!type && !matches) return { n: (await i.broker.getQueueStats(i.token, i.queue)).stats.dead, more: false };
  let n = 0;
  let seen = 0;
  let pageToken = '';
  do {
    const page = await i.broker.listJobs(i.token, { queue: i.queue, state: 'JOB_STATE_DEAD', page_size: 1000, page_token: pageToken, type });
    for (const j of page.jobs) if (!matches || matches(j.finished_at_ms)) n++;
    seen += page.jobs.length;
    pageToken = page.next_page_token;
  } while (pageToken && seen < MAX_COUNTED);
  return { n, more: pageToken !== '' };
}

export const ACTIONS: Record<string, Action> = {
  pause: {
    needsJob: false,
    run: async (i) => {
      await i.broker.pauseQueue(i.token, i.queue);
      return `Queue ${i.queue} is paused: it accepts jobs but hands none to workers until resumed.`;
    },
  },
  resume: {
    needsJob: false,
    run: async (i) => {
      await i.broker.resumeQueue(i.token, i.queue);
      return `Queue ${i.queue} is resumed.`;
    },
  },
  'retry-dead': {
    needsJob: false,
    question: async (i) => {
      if (i.all) {
        const which = i.type ? `all dead jobs of type ${i.type}` : 'all dead jobs';
        return `Move ${which} of queue ${i.queue} back to pending? This affects ${showCount(await countDead(i, i.type))}.`;
      }
      if (i.jobIds.length === 1) return `Move dead job ${i.jobIds[0]} of queue ${i.queue} back to pending? This affects 1 job.`;
      return `Move the ${i.jobIds.length} selected dead jobs of queue ${i.queue} back to pending? This affects ${plural(i.jobIds.length)} (any that is no longer dead is skipped).`;
    },
    run: async (i) => {
      const { moved } = await i.broker.retryDead(i.token, i.queue, i.all ? { all: true, type: i.type } : { jobIds: i.jobIds });
      return `Moved ${plural(moved)} back to pending.`;
    },
  },
  'purge-dead': {
    needsJob: false,
    question: async (i) => {
      if (i.olderThanMs === 0) {
        return `Remove all dead jobs of queue ${i.queue} for good? This affects ${showCount(await countDead(i, ''))}.`;
      }
      // Counted with this server's clock; the broker removes by Redis time.
      const cutoff = Date.now() - i.olderThanMs;
      const count = await countDead(i, '', (finishedAtMs) => finishedAtMs < cutoff);
      return `Remove the dead jobs of queue ${i.queue} that died more than ${showDuration(i.olderThanMs)} ago, for good? This affects ${showCount(count)}.`;
    },
    run: async (i) => {
      const { purged } = await i.broker.purgeDead(i.token, i.queue, i.olderThanMs);
      return `Removed ${plural(purged)}.`;
    },
  },
  'delete-queue': {
    needsJob: false,
    question: async (i) => {
      const s = (await i.broker.getQueueStats(i.token, i.queue)).stats;
      const all = s.pending_due + s.pending_scheduled + s.active + s.completed + s.dead;
      const active = s.active > 0
        ? i.force
          ? ` ${plural(s.active)} of them are running: their workers' Ack and Fail will get NOT_FOUND.`
          : ` ${plural(s.active)} of them are running: the broker refuses unless "also running jobs" is ticked.`
        : '';
      return `Delete queue ${i.queue} and every job it holds, for good? This affects ${plural(all)}.${active}`;
    },
    run: async (i) => {
      const { deleted } = await i.broker.deleteQueue(i.token, i.queue, i.force);
      return `Deleted queue ${i.queue}: ${plural(deleted)} removed.`;
    },
  },
  'update-queue': {
    needsJob: false,
    run: async (i) => {
      await i.broker.updateQueue(i.token, { queue: i.queue, ...i.settings });
      return `Queue ${i.queue} updated: ${describeSettings(i.settings)}.`;
    },
  },
  'delete-job': {
    needsJob: true,
    question: async (i) => `Delete job ${i.jobIds[0]} of queue ${i.queue}, whatever its state, for good? This affects 1 job.`,
    run: async (i) => {
      await i.broker.deleteJob(i.token, i.queue, i.jobIds[0]);
      return `Deleted job ${i.jobIds[0]}.`;
    },
  },
  cancel: {
    needsJob: true,
    question: async (i) =>
      `Cancel job ${i.jobIds[0]} of queue ${i.queue}? This affects 1 job: a pending job becomes dead at once, an active one is asked to stop.`,
    run: async (i) => {
      const id = i.jobIds[0];
      const { cancel_requested } = await i.broker.cancel(i.token, i.queue, id);
      return cancel_requested
        ? `Job ${id} was running: its worker was asked to stop; it becomes dead when it does.`
        : `Job ${id} is cancelled (dead).`;
    },
  },
};

/** The units of purge-dead's older_than field, in ms. */
export const AGE_UNITS: Record<string, number> = { s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** older_than is at most this many units. */
export const MAX_AGE_UNITS = 100_000;

/**
 * purge-dead's age from its form fields: `older_than` (a whole number
 * 1..MAX_AGE_UNITS) in `unit` (AGE_UNITS), in ms; both absent: 0 (every dead
 * job). Anything else answers the refusal's message, naming the field.
 */
export function parseOlderThan(value: string | null, unit: string | null): number | { error: string } {
  if ((value === null || value.trim() === '') && unit === null) return 0;
  const v = (value ?? '').trim();
  if (!/^\d{1,6}$/.test(v) || Number(v) < 1 || Number(v) > MAX_AGE_UNITS) {
    return { error: `older_than must be a whole number from 1 to ${MAX_AGE_UNITS} (got "${v.slice(0, 20)}").` };
  }
  const per = unit !== null ? AGE_UNITS[unit] : undefined;
  if (per === undefined) return { error: `unit must be one of ${Object.keys(AGE_UNITS).join(', ')} (got "${(unit ?? '').slice(0, 20)}").` };
  return Number(v) * per;
}

/** update-queue's form fields, each a whole number when given (empty: unchanged). */
export const SETTING_FIELDS = ['partitions', 'max_active', 'max_active_per_key', 'default_job_timeout_ms', 'rate_count', 'rate_interval_ms', 'rate_burst', 'key_rate_count', 'key_rate_interval_ms', 'key_rate_burst'] as const;

type RateLimitValue = { count: number; interval_ms: number; burst: number };

/**
 * update-queue's settings from its form (and create-queue's): the fields
 * given, as whole numbers (their ranges are the broker's to check, and it
 * names the field). A rate limit needs rate_count, and rate_interval_ms
 * unless rate_count is 0 (which removes the limit); the rate limit per
 * concurrency key likewise (key_rate_*). A field that is not a
 * whole number, or nothing given when `requireOne` (update-queue), answers
 * the refusal's message, naming the field.
 */
export function parseQueueSettings(
  get: (name: string) => string | null,
  { requireOne = true }: { requireOne?: boolean } = {},
): Omit<UpdateQueueRequest, 'queue'> | { error: string } {
  const n: Partial<Record<(typeof SETTING_FIELDS)[number], number>> = {};
  for (const f of SETTING_FIELDS) {
    const v = (get(f) ?? '').trim();
    if (v === '') continue;
    if (!/^-?\d{1,12}$/.test(v)) return { error: `${f} must be a whole number (got "${v.slice(0, 20)}").` };
    n[f] = Number(v);
  }
  const out: Omit<UpdateQueueRequest, 'queue'> = {};
  if (n.partitions !== undefined) out.partitions = n.partitions;
  if (n.max_active !== undefined) out.max_active = n.max_active;
  if (n.max_active_per_key !== undefined) out.max_active_per_key = n.max_active_per_key;
  if (n.default_job_timeout_ms !== undefined) out.default_job_timeout_ms = n.default_job_timeout_ms;
  for (const [prefix, field] of [['rate', 'rate_limit'], ['key_rate', 'key_rate_limit']] as const) {
    const count = n[`${prefix}_count`];
    const interval = n[`${prefix}_interval_ms`];
    const burst = n[`${prefix}_burst`];
    if (count === undefined && interval === undefined && burst === undefined) continue;
    if (count === undefined) return { error: `${prefix}_count is required to set a rate limit (0 removes it).` };
    if (count !== 0 && interval === undefined) return { error: `${prefix}_interval_ms is required with a ${prefix}_count above 0.` };
    const limit: RateLimitValue = count === 0 ? { count: 0, interval_ms: 0, burst: 0 } : { count, interval_ms: interval ?? 0, burst: burst ?? 0 };
    out[field] = limit;
  }
  if (requireOne && Object.keys(out).length === 0) return { error: 'Nothing to change: give at least one setting.' };
  return out;
}

/** The settings as the message after an update says them. */
function describeSettings(s: Omit<UpdateQueueRequest, 'queue'>): string {
  const parts: string[] = [];
  if (s.partitions !== undefined) parts.push(`partitions ${s.partitions}`);
  if (s.max_active !== undefined) parts.push(s.max_active === 0 ? 'no limit on active jobs' : `max active ${s.max_active}`);
  if (s.max_active_per_key !== undefined) parts.push(s.max_active_per_key === 0 ? 'no limit per concurrency key' : `max active per key ${s.max_active_per_key}`);
  if (s.default_job_timeout_ms !== undefined) parts.push(s.default_job_timeout_ms < 0 ? "the broker's default job timeout" : `default job timeout ${s.default_job_timeout_ms} ms`);
  const rate = (l: RateLimitValue) => `${l.count} per ${l.interval_ms} ms${l.burst ? ` (bursts of ${l.burst})` : ''}`;
  if (s.rate_limit) parts.push(s.rate_limit.count === 0 ? 'no rate limit' : `rate limit ${rate(s.rate_limit)}`);
  if (s.key_rate_limit) parts.push(s.key_rate_limit.count === 0 ? 'no rate limit per concurrency key' : `rate limit per key ${rate(s.key_rate_limit)}`);
  return parts.join(', ');
}
