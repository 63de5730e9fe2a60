// Every page and fragment the dashboard serves, as functions from data to
// Html (src/html.ts escapes every value). No page holds a bearer token:
// forms carry only the session's CSRF token.
import { Job, JobState, ListWorkersResponse, QueueEvent, QueueStats, ScheduleInfo, WorkerStream } from './broker_client';
import { showAgo, showBytes, showDuration, showLimits, showQueueWeights, showRate, showTime, showTypes, ShownBytes } from './format';
import { MAX_AGE_UNITS } from './actions';
import { Html, html } from './html';
import { sparkline } from './sparkline';
import { Snapshot, StatsPoller } from './stats_poller';

/** What every page needs to know about the viewer. */
export interface PageContext {
  csrf: string;
  readOnly: boolean;
  /** A logout button is shown (logins are on and this session has one). */
  loggedIn: boolean;
}

export const STATES: Record<string, JobState> = {
  pending: 'JOB_STATE_PENDING',
  active: 'JOB_STATE_ACTIVE',
  completed: 'JOB_STATE_COMPLETED',
  dead: 'JOB_STATE_DEAD',
};

export function queueUrl(queue: string, params: Record<string, string> = {}): string {
  const qs = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '')).toString();
  return `/queues/${encodeURIComponent(queue)}${qs ? `?${qs}` : ''}`;
}

export function jobUrl(queue: string, id: string): string {
  return `/queues/${encodeURIComponent(queue)}/jobs/${encodeURIComponent(id)}`;
}

export function layout(ctx: PageContext | undefined, title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · jobwire</title>
<link rel="stylesheet" href="/static/style.css">
<script src="/static/live.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/">jobwire</a>
<nav aria-label="Main"><a href="/">Queues</a> <a href="/schedules">Schedules</a> <a href="/workers">Workers</a></nav>
${ctx?.readOnly ? html`<span class="badge">read-only</span>` : ''}
${ctx?.loggedIn ? html`<form method="post" action="/logout" class="inline">${csrfField(ctx)}<button type="submit">Log out</button></form>` : ''}
</header>
<main id="main" tabindex="-1">
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
}

function csrfField(ctx: PageContext): Html {
  return html`<input type="hidden" name="csrf" value="${ctx.csrf}">`;
}

/** Hidden inputs, one per value (a list repeats its name). */
function hiddenFields(fields: Record<string, string | string[]>): Html[] {
  return Object.entries(fields).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((one) => html`<input type="hidden" name="${k}" value="${one}">`));
}

/** A POST form with one button; `fields` become hidden inputs. */
function actionForm(ctx: PageContext, action: string, label: string, fields: Record<string, string | string[]> = {}, danger = false): Html {
  if (ctx.readOnly) return html``;
  const hidden = hiddenFields(fields);
  return html`<form method="post" action="${action}" class="inline">${csrfField(ctx)}${hidden}<button type="submit"${danger ? html` class="danger"` : ''}>${label}</button></form>`;
}

/** The queue table, also sent as it is on the /events stream. */
export function queuesFragment(snap: Snapshot, poller: StatsPoller): Html {
  const updated = html`<p class="muted">Updated <time datetime="${new Date(snap.at).toISOString()}">${showTime(snap.at)}</time></p>`;
  if (snap.error) return html`${errorBox(snap.error.code, snap.error.details)}${updated}`;
  if (snap.queues.length === 0) return html`<p>No queues yet: a queue appears with its first job.</p>${updated}`;
  const rateCell = (col: string, count: number | undefined, windowS: number) =>
    count === undefined
      ? html`<td data-col="${col}" class="muted" title="not counted yet: the event stream is not subscribed">–</td>`
      : html`<td data-col="${col}" data-count="${count}" title="${count} in the last ${windowS} s">${showRate(count, windowS)}</td>`;
  const rows = snap.queues.map((q) => {
    const depth = poller.depthHistory(q.queue);
    const r = poller.rates.rates(q.queue);
    const done = poller.rates.completedPerMinute(q.queue);
    const doneTotal = done.reduce((a, b) => a + b, 0);
    return html`<tr data-queue="${q.queue}">
<th scope="row"><a href="${queueUrl(q.queue)}">${q.queue}</a>${q.paused ? html` <span class="badge paused">paused</span>` : ''}</th>
<td data-col="pending_due">${q.pending_due}</td>
<td data-col="pending_scheduled">${q.pending_scheduled}</td>
<td data-col="active">${q.active}</td>
<td data-col="completed">${q.completed}</td>
<td data-col="dead">${q.dead}</td>
<td data-col="oldest_due_age">${q.pending_due > 0 ? showDuration(q.oldest_due_age_ms) : '–'}</td>
${rateCell('enqueued_rate', r?.enqueued, r?.windowS ?? 0)}
${rateCell('completed_rate', r?.completed, r?.windowS ?? 0)}
${rateCell('failed_rate', r?.failed, r?.windowS ?? 0)}
<td data-col="depth">${sparkline(depth, `Depth of ${q.queue} over the last ${depth.length} polls, now ${depth[depth.length - 1] ?? 0}`)}</td>
<td data-col="throughput">${r ? sparkline(done, `Jobs of ${q.queue} completed per minute over the last ${done.length} min: ${doneTotal} in all`) : html`<span class="muted">–</span>`}</td>
</tr>`;
  });
  return html`<div class="scroll"><table class="queues">
<caption class="sr-only">Queues and their jobs per state</caption>
<thead><tr><th scope="col">Queue</th><th scope="col">Due</th><th scope="col">Scheduled</th><th scope="col">Active</th><th scope="col">Completed</th><th scope="col">Dead</th><th scope="col">Oldest due</th><th scope="col"><abbr title="enqueued per second over the last minute">In</abbr></th><th scope="col"><abbr title="completed per second over the last minute">Done</abbr></th><th scope="col"><abbr title="failed (retried or dead) per second over the last minute">Failed</abbr></th><th scope="col">Depth</th><th scope="col">Completed per min (1 h)</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>${updated}`;
}

export function queuesPage(ctx: PageContext, snap: Snapshot, poller: StatsPoller): Html {
  return layout(ctx, 'Queues', html`
${liveStatus()}
<div id="queues-live" data-events="/events" data-event="queues">${queuesFragment(snap, poller)}</div>
${createQueueForm(ctx)}`);
}

/** The line that shows the state of the page's live stream (static/live.js). */
function liveStatus(): Html {
  return html`<p class="live-status" id="live-status" role="status" aria-live="polite" data-state="connecting">Live updates: connecting…</p>`;
}

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
function createQueueForm(ctx: PageContext): Html {
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
${formField('cq-default_job_timeout_ms', 'default_job_timeout_ms', 'Default job timeout (ms)', "empty: the broker's; 0: none", { numeric: true })}
</div>
<button type="submit">Create queue</button>
</form></details>`;
}

/** enqueue: one job into the queue, with the options of `jobwire enqueue`. */
function enqueueForm(ctx: PageContext, q: string): Html {
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

export interface QueuePageData {
  stats: QueueStats;
  state: string;
  type: string;
  pageToken: string;
  jobs: Job[];
  nextPageToken: string;
  /** The last hour as this dashboard saw it: depth (highest per minute) and completed per minute (undefined: not counted yet). */
  hour: { depth: number[]; completed: number[] | undefined };
}

/** The queue's last hour: two small charts from the poller's and the rate tracker's memory. */
function hourCharts(q: string, hour: QueuePageData['hour']): Html {
  const { depth, completed } = hour;
  const depthChart = depth.length === 0
    ? html`<p class="muted">No poll yet.</p>`
    : sparkline(depth, `Depth of ${q}, the highest of each minute over the last ${depth.length} min: now ${depth[depth.length - 1]}, at most ${Math.max(...depth)}`, 300, 48);
  const doneChart = completed === undefined
    ? html`<p class="muted">Not counted yet: the event stream is not subscribed.</p>`
    : sparkline(completed, `Jobs of ${q} completed per minute over the last ${completed.length} min: ${completed.reduce((a, b) => a + b, 0)} in all`, 300, 48);
  return html`<section aria-labelledby="hour"><h2 id="hour">Last hour</h2>
<div class="charts">
<figure data-chart="depth"><figcaption>Depth, the highest of each minute</figcaption>${depthChart}</figure>
<figure data-chart="completed"><figcaption>Completed per minute</figcaption>${doneChart}</figure>
</div>
<p class="muted">As this dashboard saw it since it started (or since the queue appeared), oldest minute first.</p>
</section>`;
}

export function queuePage(ctx: PageContext, d: QueuePageData): Html {
  const s = d.stats;
  const q = s.queue;
  const counts: Record<string, number> = {
    pending: s.pending_due + s.pending_scheduled,
    active: s.active,
    completed: s.completed,
    dead: s.dead,
  };
  const tabs = Object.keys(STATES).map((st) => {
    const current = st === d.state;
    return html`<a href="${queueUrl(q, { state: st, type: d.type })}"${current ? html` aria-current="page"` : ''}>${st} <span class="count" data-state="${st}">${counts[st]}</span></a>`;
  });
  const actions = ctx.readOnly ? html`` : html`<section aria-labelledby="qa"><h2 id="qa">Actions</h2><div class="actions">
${s.paused ? actionForm(ctx, `${queueUrl(q)}/resume`, 'Resume queue') : actionForm(ctx, `${queueUrl(q)}/pause`, 'Pause queue')}
${actionForm(ctx, `${queueUrl(q)}/retry-dead`, `Retry all dead jobs (${s.dead})`, { all: '1' })}
${actionForm(ctx, `${queueUrl(q)}/purge-dead`, `Purge dead jobs (${s.dead})`, {}, true)}
</div>
${purgeOlderForm(ctx, q)}
<form method="post" action="${queueUrl(q)}/delete-queue" class="delete-queue">${csrfField(ctx)}
<label><input type="checkbox" name="force" value="1"> also its running jobs</label>
<button type="submit" class="danger">Delete queue</button>
</form>
${settingsForm(ctx, s)}
</section>`;
  const dead = d.state === 'dead';
  // On the dead list: a checkbox per job, the boxes and "Retry selected" in
  // one form (the table sits inside it); with a type filter, a retry of
  // every dead job of that type.
  const selectable = dead && !ctx.readOnly && d.jobs.length > 0;
  const byType = dead && d.type !== '' ? actionForm(ctx, `${queueUrl(q)}/retry-dead`, `Retry all dead jobs of type ${d.type}`, { all: '1', type: d.type }) : html``;
  const rows = d.jobs.map(
    (j) => html`<tr>${selectable ? html`<td><input type="checkbox" name="job_id" value="${j.id}" form="selected-jobs" aria-label="Select job ${j.id}"></td>` : ''}<td><a href="${jobUrl(q, j.id)}">${j.id}</a></td><td>${j.type}</td><td>${j.attempts}/${j.max_attempts}</td><td>${showTime(j.created_at_ms)}</td><td>${showTime(j.finished_at_ms || j.available_at_ms)}</td><td class="error">${truncate(j.error, 120)}</td></tr>`,
  );
  return layout(ctx, `Queue ${q}`, html`
<p>${s.paused ? html`<span class="badge paused">paused</span> ` : ''}${s.pending_due} due, ${s.pending_scheduled} scheduled, ${s.active} active, ${s.completed} completed, ${s.dead} dead${s.pending_due > 0 ? html`; oldest due ${showDuration(s.oldest_due_age_ms)}` : ''}.</p>
<p class="limits">Limits: ${showLimits(s.rate_limit, s.max_active, s.max_active_per_key)}.</p>
<p><a href="${queueUrl(q)}/watch">Live events of this queue</a></p>
${hourCharts(q, d.hour)}
${actions}
${enqueueForm(ctx, q)}
<section aria-labelledby="jl"><h2 id="jl">Jobs</h2>
<nav aria-label="Job states" class="tabs">${tabs}</nav>
<div class="filters">
<form method="get" action="${queueUrl(q)}" role="search">
<input type="hidden" name="state" value="${d.state}">
<label for="type">Type</label> <input id="type" name="type" value="${d.type}">
<button type="submit">Filter</button>
</form>
<form method="get" action="${queueUrl(q)}" role="search">
<label for="job_id">Job id</label> <input id="job_id" name="job_id" required>
<button type="submit">Open job</button>
</form>
<form method="get" action="${queueUrl(q)}" role="search">
<label for="idempotency_key">Idempotency key</label> <input id="idempotency_key" name="idempotency_key" required maxlength="256">
<button type="submit">Find job</button>
</form>
</div>
${byType}
${d.jobs.length === 0 ? html`<p>No ${d.state} jobs${d.type ? html` of type ${d.type}` : ''} on this page.</p>` : html`${selectable ? html`<form method="post" action="${queueUrl(q)}/retry-dead" id="selected-jobs" class="inline">${csrfField(ctx)}<button type="submit">Retry selected</button></form>` : ''}<div class="scroll"><table class="jobs">
<caption class="sr-only">${d.state} jobs</caption>
<thead><tr>${selectable ? html`<th scope="col"><span class="sr-only">Select</span></th>` : ''}<th scope="col">Id</th><th scope="col">Type</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">${d.state === 'completed' || d.state === 'dead' ? 'Finished' : 'Due'}</th><th scope="col">Error</th></tr></thead>
<tbody>${rows}</tbody></table></div>`}
<p class="pager">${d.pageToken ? html`<a href="${queueUrl(q, { state: d.state, type: d.type })}">First page</a> ` : ''}${d.nextPageToken ? html`<a href="${queueUrl(q, { state: d.state, type: d.type, page_token: d.nextPageToken })}" rel="next">Next page</a>` : ''}</p>
</section>`);
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

/** Bytes of a job (showBytes), with a link to download them whole. */
function bytesBlock(label: string, b: ShownBytes, size: number, downloadUrl: string): Html {
  if (b.kind === 'empty') return html`<h2>${label}</h2><p class="muted">(empty)</p>`;
  return html`<h2>${label} <span class="muted">(${b.kind === 'json' ? 'JSON' : 'hex'})</span></h2>
<pre class="bytes" tabindex="0">${b.text}</pre>${b.omitted > 0 ? html`<p class="muted">${b.omitted} more ${b.kind === 'json' ? 'characters' : 'bytes'} not shown.</p>` : ''}
<p><a href="${downloadUrl}" download>Download ${label.toLowerCase()} (${size} byte${size === 1 ? '' : 's'})</a></p>`;
}

/** update-queue: each field empty means unchanged; the current value is its placeholder. */
function settingsForm(ctx: PageContext, s: QueueStats): Html {
  const field = (name: string, label: string, current: string, hint: string) =>
    html`<label for="set-${name}">${label}</label><input id="set-${name}" name="${name}" inputmode="numeric" pattern="-?[0-9]*" placeholder="${current}" aria-describedby="hint-${name}"><span id="hint-${name}" class="muted">${hint}</span>`;
  const rate = s.rate_limit && s.rate_limit.count > 0 ? s.rate_limit : undefined;
  return html`<details class="settings"><summary>Change settings</summary>
<form method="post" action="${queueUrl(s.queue)}/update-queue">${csrfField(ctx)}
<p class="muted">Empty fields stay as they are (the current value shows in grey).</p>
<div class="grid">
${field('max_active', 'Max active jobs', String(s.max_active), '0: no limit')}
${field('max_active_per_key', 'Max active per concurrency key', String(s.max_active_per_key), '0: no limit')}
${field('rate_count', 'Rate limit: jobs', String(rate?.count ?? 0), '0: no rate limit')}
${field('rate_interval_ms', 'per (ms)', rate ? String(rate.interval_ms) : '', 'the interval')}
${field('rate_burst', 'bursts of', rate ? String(rate.burst) : '', '0: as jobs')}
${field('default_job_timeout_ms', 'Default job timeout (ms)', '', "0: none; -1: the broker's default")}
${field('partitions', 'Partitions', String(s.partitions), 'only grows')}
</div>
<button type="submit">Save settings</button>
</form></details>`;
}

/** purge-dead of the jobs that died more than a given time ago. */
function purgeOlderForm(ctx: PageContext, q: string): Html {
  return html`<form method="post" action="${queueUrl(q)}/purge-dead" class="purge-older">${csrfField(ctx)}
<label for="older_than">Purge dead jobs that died more than</label>
<input id="older_than" name="older_than" type="number" min="1" max="${MAX_AGE_UNITS}" step="1" required inputmode="numeric">
<label for="unit" class="sr-only">Unit</label>
<select id="unit" name="unit"><option value="s">seconds</option><option value="min">minutes</option><option value="h">hours</option><option value="d" selected>days</option></select>
<span>ago</span> <button type="submit" class="danger">Purge older</button>
</form>`;
}

/** The state of a job as its page and its URLs name it: pending, active, completed or dead. */
function stateName(j: Job): string {
  return j.state.replace('JOB_STATE_', '').toLowerCase();
}

/**
 * A job's page. While the job is pending or active its fields follow the
 * job live (WaitJob through /queues/<q>/jobs/<id>/events) until it finishes.
 */
export function jobPage(ctx: PageContext, j: Job): Html {
  const state = stateName(j);
  const finished = state === 'completed' || state === 'dead';
  return layout(ctx, `Job ${j.id}`, html`
<p><a href="${queueUrl(j.queue, { state })}">Back to queue ${j.queue}</a></p>
${finished ? '' : liveStatus()}
<div id="job-live"${finished ? '' : html` data-events="${jobUrl(j.queue, j.id)}/events" data-event="job"`}>${jobFragment(ctx, j)}</div>`);
}

/** A job's actions, fields, headers, payload, result and progress data; also sent on its event stream. */
export function jobFragment(ctx: PageContext, j: Job): Html {
  const state = stateName(j);
  const fields: [string, string | number][] = [
    ['Id', j.id],
    ['Queue', j.queue],
    ['Type', j.type],
    ['State', state],
    ['Attempts', `${j.attempts} of ${j.max_attempts}`],
    ['Priority', j.priority],
    ['Error', j.error],
    ['Created', showTime(j.created_at_ms)],
    ['Available at', showTime(j.available_at_ms)],
    ['Lease expires', showTime(j.lease_expires_at_ms)],
    ['Finished', showTime(j.finished_at_ms)],
    ['Run deadline', showTime(j.run_deadline_ms)],
    ['Cancel requested', showTime(j.cancel_requested_at_ms)],
    ['Timeout', j.timeout_ms ? showDuration(j.timeout_ms) : 'none'],
    ['Backoff', `${showDuration(j.backoff_base_ms)} base, ${showDuration(j.backoff_max_ms)} max`],
    ['Idempotency key', j.idempotency_key],
    ['Worker', j.worker_id],
    ['Progress', j.progress_percent === undefined || j.progress_percent === null ? '' : `${j.progress_percent}%`],
  ];
  const headers = Object.entries(j.headers ?? {});
  const q = j.queue;
  const fieldsHidden = { job_id: j.id };
  const actions = ctx.readOnly
    ? html``
    : html`<div class="actions">
${state === 'dead' ? actionForm(ctx, `${queueUrl(q)}/retry-dead`, 'Retry this job', fieldsHidden) : ''}
${state === 'pending' || state === 'active' ? actionForm(ctx, `${queueUrl(q)}/cancel`, 'Cancel this job', fieldsHidden, true) : ''}
${actionForm(ctx, `${queueUrl(q)}/delete-job`, 'Delete this job', fieldsHidden, true)}
</div>`;
  return html`${actions}
<dl class="fields">${fields.map(([k, v]) => html`<dt>${k}</dt><dd data-field="${k}">${v === '' ? '–' : v}</dd>`)}</dl>
${errorHistory(j)}
${headers.length ? html`<h2>Headers</h2><dl class="fields">${headers.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>` : ''}
${bytesBlock('Payload', showBytes(j.payload), j.payload?.length ?? 0, `${jobUrl(q, j.id)}/payload`)}
${bytesBlock('Result', showBytes(j.result), j.result?.length ?? 0, `${jobUrl(q, j.id)}/result`)}
${j.progress_data?.length ? bytesBlock('Progress data', showBytes(j.progress_data), j.progress_data.length, `${jobUrl(q, j.id)}/progress_data`) : ''}`;
}

/** A job's error history (Job.errors), oldest first; nothing when it never failed. */
function errorHistory(j: Job): Html {
  const errors = j.errors ?? [];
  if (errors.length === 0) return html``;
  return html`<h2 id="errors">Error history</h2>
<div class="scroll"><table class="errors">
<caption class="sr-only">The job's last ${errors.length} errors, oldest first</caption>
<thead><tr><th scope="col">Attempt</th><th scope="col">Time</th><th scope="col">Error</th></tr></thead>
<tbody>${errors.map((e) => html`<tr><td>${e.attempt === 0 ? '–' : e.attempt}</td><td><time datetime="${new Date(e.at_ms).toISOString()}">${showTime(e.at_ms)}</time></td><td class="error">${e.error}</td></tr>`)}</tbody>
</table></div>
<p class="muted">The last 10 failed runs and a cancel, each error cut to at most 512 bytes; the Error field above is the latest whole.</p>`;
}

/** What a live stream says when it ends: `okText` when it ended well, else why it stopped. */
export function streamEnd(code: number, details: string, okText: string): Html {
  return code === 0 ? html`${okText}` : html`stopped. ${explainCode(code)} ${details}`;
}

/** The events of one queue as they happen (Subscribe through /queues/<q>/watch/events), newest first. */
export function watchPage(ctx: PageContext, q: string): Html {
  return layout(ctx, `Events of queue ${q}`, html`
<p><a href="${queueUrl(q)}">Back to queue ${q}</a></p>
${liveStatus()}
<p class="muted">Every event of the queue from when this page opened, newest first (the last ${WATCH_ROWS} are kept). Best effort: events the broker could not deliver are marked as missed, never made up.</p>
<div class="scroll"><table class="events">
<caption class="sr-only">Events of queue ${q}</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Job</th><th scope="col">Type</th><th scope="col">Attempts</th><th scope="col">Error or progress</th></tr></thead>
<tbody id="events-live" data-events="${queueUrl(q)}/watch/events" data-event="events" data-mode="prepend" data-keep="${WATCH_ROWS}"></tbody>
</table></div>`);
}

/** A watch page keeps this many rows. */
export const WATCH_ROWS = 500;

/** Rows of the watch page for one message of the stream, newest first; a gap is a row of its own. */
export function eventRows(q: string, events: QueueEvent[], missed: boolean): Html {
  const rows = [...events].reverse().map((e) => {
    const kind = e.kind.replace('EVENT_KIND_', '').toLowerCase().replace(/_/g, ' ');
    const detail = e.error ? e.error : e.progress_percent !== undefined && e.progress_percent !== null ? `${e.progress_percent}%` : '';
    return html`<tr data-kind="${kind}" data-job="${e.job_id}"><td><time datetime="${new Date(e.at_ms).toISOString()}">${showTime(e.at_ms)}</time></td><td>${kind}</td><td><a href="${jobUrl(q, e.job_id)}">${e.job_id}</a></td><td>${e.type ?? ''}</td><td>${e.attempts ?? ''}</td><td class="error">${truncate(detail, 200)}</td></tr>`;
  });
  return html`${rows}${missed ? html`<tr class="missed"><td colspan="6">Events may have been missed here (the broker lost its Redis subscription for a moment).</td></tr>` : ''}`;
}

/** Asks before a destructive action, saying how many jobs it affects. */
export function confirmPage(ctx: PageContext, title: string, question: string, action: string, fields: Record<string, string | string[]>, cancelUrl: string): Html {
  return layout(ctx, title, html`<p class="confirm">${question}</p>
<div class="actions">${actionForm(ctx, action, 'Yes, do it', { ...fields, confirm: 'yes' }, true)} <a href="${cancelUrl}">No, go back</a></div>`);
}

export function messagePage(ctx: PageContext | undefined, title: string, message: string, back?: { url: string; label: string }): Html {
  return layout(ctx, title, html`<p role="status">${message}</p>${back ? html`<p><a href="${back.url}">${back.label}</a></p>` : ''}`);
}

/** A broker error: `explanation` (else explainCode's sentence) and the broker's message. */
export function errorBox(code: number, details: string, explanation = explainCode(code)): Html {
  return html`<div class="error-box" role="alert"><strong>${explanation}</strong><p>${details}</p></div>`;
}

/** A sentence for the gRPC codes an operator can act on. */
export function explainCode(code: number): string {
  switch (code) {
    case 16:
      return 'The broker requires a valid token (UNAUTHENTICATED): log in again with an admin token (a dashboard started without --require_login never asks for one).';
    case 7:
      return 'Your token may not do this (PERMISSION_DENIED): it needs the admin permission on this queue.';
    case 5:
      return 'Not found (NOT_FOUND).';
    case 14:
      return 'The broker or its Redis cannot be reached right now (UNAVAILABLE): try again.';
    case 3:
      return 'The broker refused the request (INVALID_ARGUMENT).';
    case 9:
      return 'The job is not in a state that allows this (FAILED_PRECONDITION).';
    case 6:
      return 'It exists already (ALREADY_EXISTS).';
    case 4:
      return 'The broker did not answer in time (DEADLINE_EXCEEDED).';
    case 12:
      return 'The broker does not know this call (UNIMPLEMENTED): it is older than this dashboard; upgrade the brokers.';
    default:
      return `The broker answered with an error (code ${code}).`;
  }
}

export function brokerErrorPage(ctx: PageContext | undefined, code: number, details: string): Html {
  return layout(ctx, 'Error', html`${errorBox(code, details)}<p><a href="/">Back to the queues</a>${code === 16 ? html` · <a href="/login">Log in</a>` : ''}</p>`);
}

export function loginPage(csrf: string, error?: string): Html {
  return layout(undefined, 'Log in', html`${error ? html`<div class="error-box" role="alert"><p>${error}</p></div>` : ''}
<form method="post" action="/login" class="login">
<input type="hidden" name="csrf" value="${csrf}">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="off" required autofocus>
<button type="submit">Log in</button>
</form>
<p class="muted">The broker requires a bearer token with the admin permission. It is kept in this server's memory for your session only.</p>`);
}

/** The schedules, and a form that creates one or, named in `edit`, replaces it (pre-filled). */
export function schedulesPage(ctx: PageContext, schedules: ScheduleInfo[], edit?: ScheduleInfo): Html {
  const rows = schedules.map(
    (s) => html`<tr data-schedule="${s.schedule.name}"><td>${s.schedule.name}</td><td>${s.schedule.job ? html`<a href="${queueUrl(s.schedule.job.queue)}">${s.schedule.job.queue}</a>` : ''}</td><td>${s.schedule.job?.type ?? ''}</td><td>${s.schedule.cron || (s.schedule.interval_ms ? `every ${showDuration(s.schedule.interval_ms)}` : '')}</td><td>${showTime(s.next_run_at_ms)}</td><td>${showTime(s.last_run_at_ms)}</td>${ctx.readOnly ? '' : html`<td><a href="/schedules?edit=${encodeURIComponent(s.schedule.name)}#schedule-form">Edit ${s.schedule.name}</a> ${actionForm(ctx, `/schedules/${encodeURIComponent(s.schedule.name)}/delete`, `Delete ${s.schedule.name}`, {}, true)}</td>`}</tr>`,
  );
  return layout(ctx, 'Schedules', html`${schedules.length === 0 ? html`<p>No schedules.</p>` : html`<div class="scroll"><table>
<thead><tr><th scope="col">Name</th><th scope="col">Queue</th><th scope="col">Type</th><th scope="col">When</th><th scope="col">Next run</th><th scope="col">Last run</th>${ctx.readOnly ? '' : html`<th scope="col"><span class="sr-only">Actions</span></th>`}</tr></thead>
<tbody>${rows}</tbody></table></div>`}
${scheduleForm(ctx, edit)}`);
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
function scheduleForm(ctx: PageContext, edit?: ScheduleInfo): Html {
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

/** What the Workers page shows: ListWorkers' answer, or the error it failed with. */
export type WorkersPageData =
  | { now: number; workers: ListWorkersResponse; error?: undefined }
  | { now: number; error: { code: number; details: string }; workers?: undefined };

/** The sentence above a ListWorkers error, for the codes that mean something else here. */
function explainWorkersError(code: number): string {
  switch (code) {
    case 7:
      return 'Your token may not list the workers (PERMISSION_DENIED): it needs the admin permission on at least one queue, and a worker is listed only when the token may administer every queue it consumes.';
    case 12:
      return 'This broker cannot list workers (UNIMPLEMENTED): it is older than ListWorkers; upgrade the brokers.';
    default:
      return explainCode(code);
  }
}

function timeAgo(ms: number, now: number): Html {
  if (ms <= 0) return html`<span class="muted">–</span>`;
  return html`<time datetime="${new Date(ms).toISOString()}">${showTime(ms)}</time> <span class="muted">(${showAgo(ms, now)})</span>`;
}

function workerRow(s: WorkerStream, now: number): Html {
  // Each label is the queue's name, then its weight when the claim has weights.
  const shown = showQueueWeights(s.queues, s.weights);
  const queues = s.queues.map((q, i) => html`${i > 0 ? ', ' : ''}<span class="nowrap"><a href="${queueUrl(q)}">${q}</a>${shown[i].slice(q.length)}</span>`);
  return html`<tr data-worker="${s.worker_id}">
<th scope="row">${s.worker_id || html`<span class="muted">(no id)</span>`}</th>
<td data-col="broker">${s.broker}</td>
<td data-col="queues">${queues}</td>
<td data-col="types">${showTypes(s.types)}</td>
<td data-col="in_flight" class="nowrap">${s.in_flight} / ${s.max_in_flight}</td>
<td data-col="since">${timeAgo(s.opened_at_ms, now)}</td>
<td data-col="peer">${s.peer}</td>
</tr>`;
}

/** The Claim streams open on every replica (ListWorkers), and the replicas that reported them. */
export function workersPage(ctx: PageContext, d: WorkersPageData): Html {
  const asOf = html`<p class="muted">As of <time datetime="${new Date(d.now).toISOString()}">${showTime(d.now)}</time> (reload for news). The replica that answered shows its own workers as they are now; the others as of their last report, renewed every 10 s by default (the broker's <code>--worker_report_interval_ms</code>).</p>`;
  if (d.error) return layout(ctx, 'Workers', html`${errorBox(d.error.code, d.error.details, explainWorkersError(d.error.code))}${asOf}`);
  const { streams, brokers } = d.workers;
  const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  const table = streams.length === 0
    ? html`<p class="empty">No worker is connected.</p>`
    : html`<p>${plural(streams.length, 'Claim stream', 'Claim streams')} open on ${plural(new Set(streams.map((s) => s.broker)).size, 'replica', 'replicas')}.</p>
<div class="scroll" role="region" aria-labelledby="workers-caption" tabindex="0"><table class="workers">
<caption id="workers-caption" class="sr-only">Workers connected now, one row per Claim stream</caption>
<thead><tr><th scope="col">Worker</th><th scope="col">Broker</th><th scope="col">Queues</th><th scope="col">Types</th><th scope="col">In flight / max</th><th scope="col">Connected since</th><th scope="col">Peer</th></tr></thead>
<tbody>${streams.map((s) => workerRow(s, d.now))}</tbody>
</table></div>`;
  const truncated = brokers.some((b) => b.truncated);
  const replicas = brokers.length === 0
    ? html`<p>No replica is reporting.</p>`
    : html`<ul class="replicas">${brokers.map((b) => html`<li data-broker="${b.broker}"><strong>${b.broker}</strong>: <span data-col="streams">${plural(b.streams, 'stream', 'streams')}</span>, reported ${timeAgo(b.reported_at_ms, d.now)}${b.truncated ? html` <span class="badge truncated">truncated</span>` : ''}</li>`)}</ul>`;
  return layout(ctx, 'Workers', html`${table}
<section aria-labelledby="replicas-heading"><h2 id="replicas-heading">Replicas reporting</h2>
<p class="muted">A replica's count is every Claim stream open there at its report, including any the table leaves out because the token may not administer all of their queues.</p>
${replicas}
${truncated ? html`<p>A <span class="badge truncated">truncated</span> replica has more streams than it reports: the table lists its first 1,000.</p>` : ''}
</section>
${asOf}`);
}
