// Every page and fragment the dashboard serves but the Workers page
// (workers_page.ts), as functions from data to Html (src/html.ts escapes
// every value): the queues, a queue, a job, a queue's events, the schedules,
// login, confirmation, message and error pages, and the one-button action
// forms. What every page shares is in page_layout.ts, the forms with fields
// in page_forms.ts. No page holds a bearer token: forms carry only the
// session's CSRF token.
import { Job, JobState, QueueEvent, QueueStats, ScheduleInfo } from './broker_client';
import { showBytes, showDuration, showLimits, showRate, showTime, ShownBytes } from './format';
import { Html, html } from './html';
import { createQueueForm, enqueueForm, purgeOlderForm, scheduleForm, settingsForm } from './page_forms';
import { csrfField, errorBox, explainCode, jobUrl, layout, PageContext, parentUrl, queueUrl } from './page_layout';
import { sparkline } from './sparkline';
import { Snapshot, StatsPoller } from './stats_poller';

export const STATES: Record<string, JobState> = {
  pending: 'JOB_STATE_PENDING',
  active: 'JOB_STATE_ACTIVE',
  completed: 'JOB_STATE_COMPLETED',
  dead: 'JOB_STATE_DEAD',
};

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
<p class="limits">Limits: ${showLimits(s.rate_limit, s.max_active, s.max_active_per_key, s.key_rate_limit)}.</p>
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
${dependencies(j)}
${headers.length ? html`<h2>Headers</h2><dl class="fields">${headers.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>` : ''}
${bytesBlock('Payload', showBytes(j.payload), j.payload?.length ?? 0, `${jobUrl(q, j.id)}/payload`)}
${bytesBlock('Result', showBytes(j.result), j.result?.length ?? 0, `${jobUrl(q, j.id)}/result`)}
${j.progress_data?.length ? bytesBlock('Progress data', showBytes(j.progress_data), j.progress_data.length, `${jobUrl(q, j.id)}/progress_data`) : ''}`;
}

/**
 * A job's parents (Job.depends_on), each linked, with how many have not
 * ended and what a dead one does; then each completed parent's result as
 * the child holds it. Nothing for a job without parents.
 */
function dependencies(j: Job): Html {
  const parents = j.depends_on ?? [];
  if (parents.length === 0) return html``;
  const results = Object.entries(j.dependency_results ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const left = j.dependencies_left ?? 0;
  return html`<h2 id="dependencies">Dependencies</h2>
<p>${left === 0 ? 'No parent left to wait for' : `Waiting for ${left} of ${parents.length} parent${parents.length === 1 ? '' : 's'}`}; a dead parent ${j.run_after_failed_dependency ? 'counts as done' : 'makes this job dead'}.</p>
<ul class="parents">${parents.map((id) => html`<li><a href="${parentUrl(j.queue, id)}">${id}</a></li>`)}</ul>
${results.map(([id, bytes]) => bytesBlock(`Result of ${id}`, showBytes(bytes), bytes.length, `${parentUrl(j.queue, id)}/result`))}`;
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
