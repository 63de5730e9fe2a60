// The forms that create things (src/forms.ts, built into dist/), without a
// broker: create-queue, enqueue and put-schedule read into the broker's
// requests, or a refusal naming the field. Against a real broker:
// create_and_follow.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCreateQueue, parseEnqueue, parseSchedule } from '../dist/forms.js';

const form = (fields) => (name) => (name in fields ? fields[name] : null);

test('create-queue: a name alone, or with settings; a rate count of 0 is no rate limit', () => {
  assert.deepEqual(parseCreateQueue(form({ queue: ' q1 ' })), { queue: 'q1' });
  assert.deepEqual(parseCreateQueue(form({ queue: 'q2', partitions: '4', max_active: '', default_job_timeout_ms: '0' })),
    { queue: 'q2', partitions: 4, default_job_timeout_ms: 0 });
  assert.deepEqual(parseCreateQueue(form({ queue: 'q3', rate_count: '5', rate_interval_ms: '1000', rate_burst: '10', max_active_per_key: '2' })),
    { queue: 'q3', rate_limit: { count: 5, interval_ms: 1000, burst: 10 }, max_active_per_key: 2 });
  assert.deepEqual(parseCreateQueue(form({ queue: 'q4', rate_count: '0' })), { queue: 'q4' });
  assert.deepEqual(parseCreateQueue(form({ queue: 'q5', key_rate_count: '2', key_rate_interval_ms: '1000' })),
    { queue: 'q5', key_rate_limit: { count: 2, interval_ms: 1000, burst: 0 } });
  assert.deepEqual(parseCreateQueue(form({ queue: 'q6', key_rate_count: '0' })), { queue: 'q6' });
});

test('create-queue: refusals name the field', () => {
  const cases = [
    [{}, /queue is required/],
    [{ queue: '  ' }, /queue is required/],
    [{ queue: 'q', partitions: 'two' }, /partitions must be a whole number \(got "two"\)/],
    [{ queue: 'q', rate_count: '5' }, /rate_interval_ms is required/],
    [{ queue: 'q', rate_interval_ms: '5' }, /rate_count is required/],
    [{ queue: 'q', key_rate_count: '5' }, /^key_rate_interval_ms is required/],
    [{ queue: 'q', key_rate_burst: '5' }, /^key_rate_count is required/],
  ];
  for (const [fields, message] of cases) assert.match(parseCreateQueue(form(fields)).error, message, JSON.stringify(fields));
});

test('enqueue: type and payload as typed; options only when given', () => {
  const job = parseEnqueue(form({ type: 'send', payload: '{"to": "a"}', payload_format: 'json' }), 'mail');
  assert.deepEqual({ ...job, payload: job.payload.toString() }, { queue: 'mail', type: 'send', payload: '{"to": "a"}' });
  const full = parseEnqueue(form({
    type: 'send', payload: 'plain words', payload_format: 'text', priority: '-5', delay_ms: '60000', max_attempts: '3',
    timeout_ms: '1000', idempotency_key: ' k 1 ', concurrency_key: 'customer-7',
  }), 'mail');
  assert.deepEqual({ ...full, payload: full.payload.toString() }, {
    queue: 'mail', type: 'send', payload: 'plain words', priority: -5, delay_ms: 60000, max_attempts: 3, timeout_ms: 1000,
    idempotency_key: ' k 1 ', concurrency_key: 'customer-7',
  });
  assert.equal(parseEnqueue(form({ type: 't', payload: 'é', payload_format: 'text' }), 'q').payload.length, 2, 'UTF-8 bytes');
  assert.equal(parseEnqueue(form({ type: 't' }), 'q').payload.length, 0);
  assert.equal(parseEnqueue(form({ type: 't', payload: '', payload_format: 'json' }), 'q').payload.length, 0, 'empty is no payload in JSON too');
});

test('enqueue: refusals name the field', () => {
  const cases = [
    [{ payload: '{}' }, /type is required/],
    [{ type: 't', payload: '{"a":', payload_format: 'json' }, /payload is not JSON/],
    [{ type: 't', payload_format: 'yaml' }, /payload_format must be text or json/],
    [{ type: 't', priority: '1.5' }, /priority must be a whole number/],
    [{ type: 't', delay_ms: 'soon' }, /delay_ms must be a whole number/],
    [{ type: 't', max_attempts: '3x' }, /max_attempts must be a whole number/],
    [{ type: 't', timeout_ms: '1e3' }, /timeout_ms must be a whole number/],
  ];
  for (const [fields, message] of cases) assert.match(parseEnqueue(form(fields), 'q').error, message, JSON.stringify(fields));
});

test('put-schedule: cron with a time zone, or an interval; times in UTC; catch-up', () => {
  const cron = parseSchedule(form({
    name: 'nightly', queue: 'reports', type: 'build', payload: '{"full":true}', payload_format: 'json', cron: '0 3 * * *',
    time_zone: 'Europe/Berlin', job_timeout_ms: '60000', max_attempts: '2', catch_up: 'once',
  }));
  assert.deepEqual({ ...cron, job: { ...cron.job, payload: cron.job.payload.toString() } }, {
    name: 'nightly', cron: '0 3 * * *', time_zone: 'Europe/Berlin',
    job: { queue: 'reports', type: 'build', payload: '{"full":true}', max_attempts: 2, timeout_ms: 60000 },
    jitter_ms: 0, start_at_ms: 0, end_at_ms: 0, catch_up: 'CATCH_UP_ONCE',
  });
  const every = parseSchedule(form({
    name: 'tick', queue: 'q', type: 't', every_ms: '5000', jitter_ms: '100', start_at: '2027-01-02T03:04', end_at: '2027-02-01T00:00:30',
  }));
  assert.equal(every.interval_ms, 5000);
  assert.equal(every.cron, undefined);
  assert.equal(every.jitter_ms, 100);
  assert.equal(every.start_at_ms, Date.UTC(2027, 0, 2, 3, 4));
  assert.equal(every.end_at_ms, Date.UTC(2027, 1, 1, 0, 0, 30));
  assert.equal(every.catch_up, 'CATCH_UP_SKIP');
});

test('put-schedule: refusals name the field', () => {
  const base = { name: 'n', queue: 'q', type: 't' };
  const cases = [
    [{ ...base }, /exactly one of cron and every_ms/],
    [{ ...base, cron: '* * * * *', every_ms: '1000' }, /exactly one of cron and every_ms/],
    [{ ...base, name: '', cron: '* * * * *' }, /name is required/],
    [{ ...base, queue: '', cron: '* * * * *' }, /queue is required/],
    [{ ...base, type: '', cron: '* * * * *' }, /type is required/],
    [{ ...base, every_ms: 'hourly' }, /every_ms must be a whole number/],
    [{ ...base, cron: '* * * * *', jitter_ms: '-' }, /jitter_ms must be a whole number/],
    [{ ...base, cron: '* * * * *', start_at: 'tomorrow' }, /start_at must be a date and time/],
    [{ ...base, cron: '* * * * *', end_at: '2027-02-30T00:00' }, /end_at must be a date and time/],
    [{ ...base, cron: '* * * * *', catch_up: 'all' }, /catch_up must be skip or once/],
    [{ ...base, cron: '* * * * *', job_timeout_ms: 'x' }, /job_timeout_ms must be a whole number/],
  ];
  for (const [fields, message] of cases) assert.match(parseSchedule(form(fields)).error, message, JSON.stringify(fields));
});
