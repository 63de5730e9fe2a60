// The Workers page (GET /workers): the Claim streams open on every broker
// replica, from ListWorkers, and the replicas that reported them; or the
// error ListWorkers failed with, explained for this page. Read-only: it has
// no form.
import { ListWorkersResponse, WorkerStream } from './broker_client';
import { showAgo, showQueueWeights, showTime, showTypes } from './format';
import { Html, html } from './html';
import { errorBox, explainCode, layout, PageContext, queueUrl } from './page_layout';

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
