// The forms with fields, rendered into the pages that show them: create-queue
// (the queues page), enqueue, update-queue and purge-dead by age (a queue's
// page) and put-schedule (the schedules page, pre-filled to edit one). Every
// input has a label and a hint (formField). What they send is read back by
// forms.ts (create-queue, enqueue, put-schedule) and actions.ts (update-queue,
// purge-dead). createQueueForm, enqueueForm and scheduleForm render nothing
// in a read-only dashboard; queuePage shows settingsForm and purgeOlderForm
// only with the queue's actions.
import { QueueStats, ScheduleInfo } from './broker_client';
import { MAX_AGE_UNITS } from './actions';
import { Html, html } from './html';
import { csrfField, PageContext, queueUrl } from './page_layout';

/** A labelled input of a form grid, with a hint; `value` pre-fills it. */
function formField(id: string, name: string, label: string, hint: string, attrs: { value?: string; placeholder?: string; numeric?: boolean; required?: boolean; type?: string; maxlength?: number } = {}): Html {
  return html`<label for="${id}">${label}</label><input id="${id}" name="${name}"${attrs.type ? html` type="${attrs.type}"` : ''}${attrs.numeric ? html` inputmode="numeric" pattern="-?[0-9]*"` : ''}${attrs.required ? html` required` : ''}${attrs.maxlength ? html` maxlength="${attrs.maxlength}"` : ''} value="${attrs.value ?? ''}" placeholder="${attrs.placeholder ?? ''}" aria-describedby="${id}-hint"><span id="${id}-hint" class="muted">${hint}</span>`;
}

/** The payload textarea and its format (text or JSON). */
function payloadField(id: string, value = '', json = true): Html {
  return html`<label for="${id}">Payload</label><textarea id="${id}" name="payload" rows="4" aria-describedby="${id}-hint">${value}</textarea>
<span id="${id}-hint" class="muted"><label for="${id}-format" class="sr-only">Payload format</label><select id="${id}-format" name="payload_format"><option value="json"${json ? html` selected` : ''}>JSON (checked)</option><option value="text"${json ? '' : html` selected`}>text (as typed)</option></select></span>`;
}

/** create-queue: a name and the settings of a new queue (empty: the default). */
export function createQueueForm(ctx: PageContext): Html {
  if (ctx.readOnly) return html``;
  return html`<details class="settings create-queue"><summary>Create a queue</summary>
<form method="post" action="/create-queue">${csrfField(ctx)}
<p class="muted">A queue also appears with its first job; create one to give it settings first. Empty fields: the default (no limit, one partition).</p>
<div class="grid">
${formField('cq-queue', 'queue', 'Name', 'letters, digits, . _ : -', { required: true, maxlength: 128 })}
${formField('cq-partitions', 'partitions', 'Partitions', '1..256; a Redis Cluster spreads them', { numeric: true })}
${formField('cq-max_active', 'max_active', 'Max active jobs', 'empty: no limit', { numeric: true })}
${formField('cq-max_active_per_key', 'max_active_per_key', 'Max active per concurrency key', 'empty: no limit', { numeric: true })}
${formField('cq-rate_count', 'rate_count', 'Rate limit: jobs', 'empty: no rate limit', { numeric: true })}
${formField('cq-rate_interval_ms', 'rate_interval_ms', 'per (ms)', 'the interval', { numeric: true })}
${formField('cq-rate_burst', 'rate_burst', 'bursts of', 'empty: as jobs', { numeric: true })}
${formField('cq-key_rate_count', 'key_rate_count', 'Rate limit per concurrency key, jobs', 'empty: no rate limit per key', { numeric: true })}
${formField('cq-key_rate_interval_ms', 'key_rate_interval_ms', 'each key, interval (ms)', 'the interval', { numeric: true })}
${formField('cq-key_rate_burst', 'key_rate_burst', 'each key, burst', 'empty: as jobs', { numeric: true })}
${formField('cq-default_job_timeout_ms', 'default_job_timeout_ms', 'Default job timeout (ms)', "empty: the broker's; 0: none", { numeric: true })}
</div>
<button type="submit">Create queue</button>
</form></details>`;
}

/** enqueue: one job into the queue, with the options of `jobwire enqueue`. */
export function enqueueForm(ctx: PageContext, q: string): Html {
  if (ctx.readOnly) return html``;
  return html`<details class="settings enqueue"><summary>Enqueue a job</summary>
<form method="post" action="${queueUrl(q)}/enqueue">${csrfField(ctx)}
<div class="grid">
${formField('eq-type', 'type', 'Job type', 'the type its workers handle', { required: true, maxlength: 128 })}
${payloadField('eq-payload')}
${formField('eq-priority', 'priority', 'Priority', '-1000..1000; higher first', { numeric: true })}
${formField('eq-delay_ms', 'delay_ms', 'Delay (ms)', 'due no earlier than now + this', { numeric: true })}
${formField('eq-max_attempts', 'max_attempts', 'Max attempts', "1..1000; empty: the broker's", { numeric: true })}
${formField('eq-timeout_ms', 'timeout_ms', 'Timeout (ms)', "longest a run may take; empty: the queue's", { numeric: true })}
${formField('eq-idempotency_key', 'idempotency_key', 'Job idempotency key', 'a second enqueue with it adds nothing', { maxlength: 256 })}
${formField('eq-concurrency_key', 'concurrency_key', 'Job concurrency key', 'for the limit per key', { maxlength: 128 })}
</div>
<button type="submit">Enqueue</button>
</form></details>`;
}

/** update-queue: each field empty means unchanged; the current value is its placeholder. */
export function settingsForm(ctx: PageContext, s: QueueStats): Html {
  const rate = s.rate_limit && s.rate_limit.count > 0 ? s.rate_limit : undefined;
  const keyRate = s.key_rate_limit && s.key_rate_limit.count > 0 ? s.key_rate_limit : undefined;
  return html`<details class="settings"><summary>Change settings</summary>
<form method="post" action="${queueUrl(s.queue)}/update-queue">${csrfField(ctx)}
<p class="muted">Empty fields stay as they are (the current value shows in grey).</p>
<div class="grid">
${formField('set-max_active', 'max_active', 'Max active jobs', '0: no limit', { numeric: true, placeholder: String(s.max_active) })}
${formField('set-max_active_per_key', 'max_active_per_key', 'Max active per concurrency key', '0: no limit', { numeric: true, placeholder: String(s.max_active_per_key) })}
${formField('set-rate_count', 'rate_count', 'Rate limit: jobs', '0: no rate limit', { numeric: true, placeholder: String(rate?.count ?? 0) })}
${formField('set-rate_interval_ms', 'rate_interval_ms', 'per (ms)', 'the interval', { numeric: true, placeholder: rate ? String(rate.interval_ms) : '' })}
${formField('set-rate_burst', 'rate_burst', 'bursts of', '0: as jobs', { numeric: true, placeholder: rate ? String(rate.burst) : '' })}
${formField('set-key_rate_count', 'key_rate_count', 'Rate limit per concurrency key, jobs', '0: no rate limit per key', { numeric: true, placeholder: String(keyRate?.count ?? 0) })}
${formField('set-key_rate_interval_ms', 'key_rate_interval_ms', 'each key, interval (ms)', 'the interval', { numeric: true, placeholder: keyRate ? String(keyRate.interval_ms) : '' })}
${formField('set-key_rate_burst', 'key_rate_burst', 'each key, burst', '0: as jobs', { numeric: true, placeholder: keyRate ? String(keyRate.burst) : '' })}
${formField('set-default_job_timeout_ms', 'default_job_timeout_ms', 'Default job timeout (ms)', "0: none; -1: the broker's default", { numeric: true })}
${formField('set-partitions', 'partitions', 'Partitions', 'only grows', { numeric: true, placeholder: String(s.partitions) })}
</div>
<button type="submit">Save settings</button>
</form></details>`;
}

/** purge-dead of the jobs that died more than a given time ago. */
export function purgeOlderForm(ctx: PageContext, q: string): Html {
  return html`<form method="post" action="${queueUrl(q)}/purge-dead" class="purge-older">${csrfField(ctx)}
<label for="older_than">Purge dead jobs that died more than</label>
<input id="older_than" name="older_than" type="number" min="1" max="${MAX_AGE_UNITS}" step="1" required inputmode="numeric">
<label for="unit" class="sr-only">Unit</label>
<select id="unit" name="unit"><option value="s">seconds</option><option value="min">minutes</option><option value="h">hours</option><option value="d" selected>days</option></select>
<span>ago</span> <button type="submit" class="danger">Purge older</button>
</form>`;
}

/** A payload as a form shows it: its text, and whether it is JSON; undefined when it is not UTF-8. */
function editablePayload(b: Uint8Array | undefined): { text: string; json: boolean } | undefined {
  if (!b || b.length === 0) return { text: '', json: true };
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(b);
    try {
      JSON.parse(text);
      return { text, json: true };
    } catch {
      return { text, json: false };
    }
  } catch {
    return undefined;
  }
}

/** A time as an <input type="datetime-local"> value in UTC; '' for 0. */
function utcInput(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString().slice(0, 16) : '';
}

/** put-schedule: the options of `jobwire put-schedule`; pre-filled from `edit` (the same name replaces it). */
export function scheduleForm(ctx: PageContext, edit?: ScheduleInfo): Html {
  if (ctx.readOnly) return html``;
  const s = edit?.schedule;
  const job = s?.job;
  const payload = editablePayload(job?.payload);
  const num = (n: number | undefined) => (n ? String(n) : '');
  return html`<section aria-labelledby="schedule-form"><h2 id="schedule-form" tabindex="-1">${s ? `Edit schedule ${s.name}` : 'New schedule'}</h2>
${payload === undefined ? html`<p class="muted">Its payload is not UTF-8 text, so the form cannot show it: saving replaces it with the one below.</p>` : ''}
<form method="post" action="/schedules" class="settings">${csrfField(ctx)}
<p class="muted">A schedule with the name of one that exists replaces it, whole: what this form does not show (the job's headers, backoff, retention, concurrency key) goes back to its default, as with <code>jobwire put-schedule</code>. Exactly one of cron and interval.</p>
<div class="grid">
${formField('ps-name', 'name', 'Name', 'letters, digits, . _ : -', { required: true, maxlength: 128, value: s?.name })}
${formField('ps-cron', 'cron', 'Cron', '5 fields (or 6, seconds first), @daily …', { value: s?.cron, placeholder: '*/5 * * * *' })}
${formField('ps-every_ms', 'every_ms', 'or every (ms)', 'at least 1000', { numeric: true, value: num(s?.interval_ms) })}
${formField('ps-time_zone', 'time_zone', 'Time zone', 'of the cron fields (IANA); empty: UTC', { value: s?.time_zone, placeholder: 'Europe/Berlin' })}
${formField('ps-queue', 'queue', 'Queue', 'each run enqueues into it', { required: true, maxlength: 128, value: job?.queue })}
${formField('ps-type', 'type', 'Job type', 'of the jobs it enqueues', { required: true, maxlength: 128, value: job?.type })}
${payloadField('ps-payload', payload?.text ?? '', payload?.json ?? true)}
${formField('ps-priority', 'priority', 'Priority', '-1000..1000', { numeric: true, value: num(job?.priority) })}
${formField('ps-max_attempts', 'max_attempts', 'Max attempts', "1..1000; empty: the broker's", { numeric: true, value: num(job?.max_attempts) })}
${formField('ps-job_timeout_ms', 'job_timeout_ms', 'Job timeout (ms)', "empty: the queue's", { numeric: true, value: num(job?.timeout_ms) })}
${formField('ps-jitter_ms', 'jitter_ms', 'Jitter (ms)', 'each run due up to this long after its instant', { numeric: true, value: num(s?.jitter_ms) })}
${formField('ps-start_at', 'start_at', 'Start (UTC)', 'no run before', { type: 'datetime-local', value: utcInput(s?.start_at_ms ?? 0) })}
${formField('ps-end_at', 'end_at', 'End (UTC)', 'no run after', { type: 'datetime-local', value: utcInput(s?.end_at_ms ?? 0) })}
<label for="ps-catch_up">Missed runs</label><select id="ps-catch_up" name="catch_up" aria-describedby="ps-catch_up-hint"><option value="skip">skip</option><option value="once"${s?.catch_up === 'CATCH_UP_ONCE' ? html` selected` : ''}>run once</option></select><span id="ps-catch_up-hint" class="muted">runs missed while no broker ran</span>
</div>
<button type="submit">${s ? 'Save schedule' : 'Create schedule'}</button>
</form></section>`;
}
