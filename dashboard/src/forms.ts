// The forms that create something: a queue (create-queue), a job (enqueue)
// and a schedule (put-schedule), read from their fields into the broker's
// requests. Each parser checks only what the broker cannot see from the
// request (a number that is not a whole number, a payload that is not the
// JSON it says it is, a time that is not a time, cron and interval both or
// neither given) and names the field; ranges and sizes are the broker's to
// check, and its INVALID_ARGUMENT names the field too.
import { CreateQueueRequest, EnqueueRequest, ScheduleRequest } from './broker_client';
import { parseQueueSettings } from './actions';

/** A form's fields, by name (URLSearchParams.get). */
export type FormGet = (name: string) => string | null;

export type Parsed<T> = T | { error: string };

/** The field as given, trimmed; '' when absent. */
function text(get: FormGet, name: string): string {
  return (get(name) ?? '').trim();
}

/** A whole number field: undefined when empty, else the number or an error naming it. */
function whole(get: FormGet, name: string): number | undefined | { error: string } {
  const v = text(get, name);
  if (v === '') return undefined;
  if (!/^-?\d{1,15}$/.test(v)) return { error: `${name} must be a whole number (got "${v.slice(0, 20)}").` };
  return Number(v);
}

/**
 * The payload textarea in the format its select names: "text" (sent as its
 * UTF-8 bytes, as typed) or "json" (must parse as JSON; sent as typed).
 * Empty is an empty payload in either.
 */
function payload(get: FormGet): Buffer | { error: string } {
  const raw = get('payload') ?? '';
  const format = get('payload_format') ?? 'text';
  if (format !== 'text' && format !== 'json') return { error: `payload_format must be text or json (got "${format.slice(0, 20)}").` };
  if (format === 'json' && raw !== '') {
    try {
      JSON.parse(raw);
    } catch (e) {
      return { error: `payload is not JSON: ${(e as Error).message.slice(0, 200)}` };
    }
  }
  return Buffer.from(raw, 'utf8');
}

/** A job's fields shared by enqueue and put-schedule: type, payload, priority, max_attempts, timeout_ms. */
function jobFields(get: FormGet, queue: string, timeoutField: string): Parsed<EnqueueRequest> {
  const type = text(get, 'type');
  if (type === '') return { error: 'type is required: the job type its workers handle.' };
  const body = payload(get);
  if (!Buffer.isBuffer(body)) return body;
  const job: EnqueueRequest = { queue, type, payload: body };
  for (const [field, key] of [['priority', 'priority'], ['max_attempts', 'max_attempts'], [timeoutField, 'timeout_ms']] as const) {
    const n = whole(get, field);
    if (typeof n === 'object') return n;
    if (n !== undefined) job[key] = n;
  }
  return job;
}

/** create-queue: its name, and the settings of update-queue (parseQueueSettings), none required. */
export function parseCreateQueue(get: FormGet): Parsed<CreateQueueRequest> {
  const queue = text(get, 'queue');
  if (queue === '') return { error: 'queue is required: the new queue\'s name.' };
  const settings = parseQueueSettings(get, { requireOne: false });
  if ('error' in settings) return settings;
  const out: CreateQueueRequest = { queue, ...settings };
  if (out.rate_limit?.count === 0) delete out.rate_limit;
  if (out.key_rate_limit?.count === 0) delete out.key_rate_limit;
  return out;
}

/** enqueue: one job into `queue`, with the options of `jobwire enqueue`. */
export function parseEnqueue(get: FormGet, queue: string): Parsed<EnqueueRequest> {
  const job = jobFields(get, queue, 'timeout_ms');
  if ('error' in job) return job;
  const delay = whole(get, 'delay_ms');
  if (typeof delay === 'object') return delay;
  if (delay !== undefined) job.delay_ms = delay;
  for (const key of ['idempotency_key', 'concurrency_key'] as const) {
    const v = get(key) ?? '';
    if (v !== '') job[key] = v;
  }
  return job;
}

/**
 * A date and time field of the form "YYYY-MM-DDTHH:MM[:SS]" (an
 * <input type="datetime-local">), read as UTC; undefined when empty.
 */
function utcTime(get: FormGet, name: string): number | undefined | { error: string } {
  const v = text(get, name);
  if (v === '') return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(v);
  const ms = m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] ?? 0)) : NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).getUTCDate() !== +m[3]) {
    return { error: `${name} must be a date and time, YYYY-MM-DDTHH:MM in UTC (got "${v.slice(0, 30)}").` };
  }
  return ms;
}

/** put-schedule: a schedule with the options of `jobwire put-schedule`; exactly one of cron and every_ms. */
export function parseSchedule(get: FormGet): Parsed<ScheduleRequest> {
  const name = text(get, 'name');
  if (name === '') return { error: 'name is required.' };
  const queue = text(get, 'queue');
  if (queue === '') return { error: 'queue is required: the queue each run enqueues into.' };
  const job = jobFields(get, queue, 'job_timeout_ms');
  if ('error' in job) return job;
  const cron = text(get, 'cron');
  const every = whole(get, 'every_ms');
  if (typeof every === 'object') return every;
  if ((cron === '') === (every === undefined)) return { error: 'Give exactly one of cron and every_ms.' };
  const jitter = whole(get, 'jitter_ms');
  if (typeof jitter === 'object') return jitter;
  const start = utcTime(get, 'start_at');
  if (typeof start === 'object') return start;
  const end = utcTime(get, 'end_at');
  if (typeof end === 'object') return end;
  const catchUp = get('catch_up') ?? 'skip';
  if (catchUp !== 'skip' && catchUp !== 'once') return { error: `catch_up must be skip or once (got "${catchUp.slice(0, 20)}").` };
  return {
    name,
    ...(cron !== '' ? { cron } : { interval_ms: every }),
    time_zone: text(get, 'time_zone'),
    job,
    jitter_ms: jitter ?? 0,
    start_at_ms: start ?? 0,
    end_at_ms: end ?? 0,
    catch_up: catchUp === 'once' ? 'CATCH_UP_ONCE' : 'CATCH_UP_SKIP',
  };
}
