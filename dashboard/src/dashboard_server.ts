// DashboardServer: the HTTP(S) server. Routes, sessions and their cookie,
// the CSRF and Origin checks on every POST, the read-only and login rules;
// pages come from pages.ts and workers_page.ts, actions from actions.ts, the
// forms that create things from forms.ts, the server-sent-events streams from
// EventStreams (event_streams.ts), broker calls from BrokerClient.
//
//   GET  /healthz                      200 "ok" (no session, no broker call)
//   GET  /favicon.ico                  204 (no session): there is no icon
//   GET  /static/{style.css,live.js}
//   GET  /login, POST /login, POST /logout
//   GET  /                             the queues (from the shared poll)
//   GET  /events                       server-sent events: the queue table on every poll
//   POST /create-queue                 CreateQueue (forms.ts)
//   GET  /schedules?edit=<name>        the schedules, and a form to create one (or edit <name>)
//   POST /schedules                    PutSchedule (forms.ts): creates, or replaces the one of that name
//   GET  /workers                      the Claim streams open on every replica (ListWorkers)
//   GET  /queues/<q>?state=&type=&page_token=&job_id=&idempotency_key=   (job_id, idempotency_key: to the job's page)
//   GET  /queues/<q>/watch             the queue's events as they happen
//   GET  /queues/<q>/watch/events      server-sent events: the rows of each Subscribe message
//   GET  /queues/<q>/jobs/<id>
//   GET  /queues/<q>/jobs/<id>/events  server-sent events: the job's fields at each change (WaitJob), until it finishes
//   GET  /queues/<q>/jobs/<id>/{payload,result,progress_data}   the bytes, as a download
//   POST /queues/<q>/enqueue           Enqueue (forms.ts)
//   POST /queues/<q>/<action>          actions.ts; asks first unless confirm=yes
//   POST /schedules/<name>/delete      DeleteSchedule; asks first unless confirm=yes
//
// The server-sent-events routes (the three .../events) are EventStreams',
// which also bounds them: the streams of one job or one queue (WaitJob,
// Subscribe) are one broker stream per viewer, with a cap on those open at
// once (503 beyond), and a viewer that does not read its stream is cut off.
//
// Every POST needs the session's CSRF token in its form and an Origin (or,
// without one, a Referer) of this server: else 403 and nothing is done.
// With --read_only every action answers 403. With --require_login every page
// but /login and /healthz needs a session that logged in with a token the
// broker accepted; the token stays in the session (session_store.ts) and is
// sent only to the broker.
// Thread safety: single-threaded (Node's event loop).
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import { ACTIONS, MAX_SELECTED, parseOlderThan, parseQueueSettings } from './actions';
import { BrokerClient, BrokerError } from './broker_client';
import { Config, splitHostPort } from './config';
import { EventStreams, StreamRequest } from './event_streams';
import { parseCreateQueue, parseEnqueue, parseSchedule } from './forms';
import { showTime } from './format';
import { noContent, redirect, SECURITY_HEADERS, send } from './http_responses';
import { explainCode, jobUrl, PageContext, queueUrl } from './page_layout';
import * as pages from './pages';
import { SealedSessions } from './sealed_sessions';
import { csrfMatches, Session, Sessions, SessionStore } from './session_store';
import { StatsPollerHub } from './stats_poller';
import { workersPage } from './workers_page';

const COOKIE = 'jw_session';
const QUEUE_NAME = /^[A-Za-z0-9._:-]{1,128}$/;
const SCHEDULE_NAME = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_BODY = 64 * 1024;
const STATIC_FILES: Record<string, string> = {
  'style.css': 'text/css; charset=utf-8',
  'live.js': 'text/javascript; charset=utf-8',
};

/** Logs one JSON line per event; never given a token. */
export type Logger = (fields: Record<string, unknown>) => void;

export const stderrLogger: Logger = (fields) => process.stderr.write(`${JSON.stringify({ ts: new Date().toISOString(), ...fields })}\n`);

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

interface RequestContext extends StreamRequest {
  form: URLSearchParams;
}

export class DashboardServer {
  private readonly server: http.Server;
  private readonly sessions: Sessions;
  private readonly hub: StatsPollerHub;
  private readonly eventStreams: EventStreams;
  private readonly staticDir: string;
  private readonly tls: boolean;

  constructor(
    private readonly config: Config,
    private readonly broker: BrokerClient,
    private readonly log: Logger = stderrLogger,
  ) {
    this.tls = Boolean(config.tlsCert);
    this.sessions = config.sessionKey ? new SealedSessions(config.sessionKey) : new SessionStore();
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => void this.handle(req, res);
    this.server = this.tls ? https.createServer({ cert: config.tlsCert, key: config.tlsKey }, handler) : http.createServer(handler);
    this.hub = new StatsPollerHub(broker, { intervalMs: config.pollIntervalMs, historyLength: 150, idleMs: 5 * 60_000 });
    this.eventStreams = new EventStreams(broker, this.hub, log);
    this.staticDir = path.join(__dirname, '..', 'static');
  }

  /** Listens on config.listen; resolves with the bound port. */
  start(): Promise<number> {
    const { host, port } = splitHostPort(this.config.listen);
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        const addr = this.server.address();
        resolve(typeof addr === 'object' && addr ? addr.port : port);
      });
    });
  }

  /** A new certificate and key for new HTTPS connections (open ones keep theirs). Only with TLS on. */
  setTlsCertificate(cert: Buffer, key: Buffer): void {
    (this.server as https.Server).setSecureContext({ cert, key });
  }

  /** Ends the event streams and the pollers, then closes the listener. */
  stop(): Promise<void> {
    this.eventStreams.endAll();
    this.hub.stopAll();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = Date.now();
    const url = new URL(req.url ?? '/', 'http://dashboard');
    res.on('finish', () => this.log({ msg: 'request', method: req.method, path: url.pathname, status: res.statusCode, ms: Date.now() - started }));
    try {
      if (url.pathname === '/healthz') return send(res, 200, 'ok\n', 'text/plain; charset=utf-8');
      // No icon; answered so that a browser's own request for one logs no 404.
      if (url.pathname === '/favicon.ico') return noContent(res);
      if (url.pathname.startsWith('/static/')) return this.serveStatic(res, url.pathname.slice(8));
      await this.route(await this.begin(req, res, url));
    } catch (err) {
      if (res.headersSent) {
        res.end();
      } else if (err instanceof HttpError) {
        send(res, err.status, pages.messagePage(undefined, 'Refused', err.message));
      } else {
        this.log({ msg: 'internal error', path: url.pathname, error: String(err) });
        send(res, 500, pages.messagePage(undefined, 'Error', 'The dashboard failed to answer; see its log.'));
      }
    }
  }

  /** The session (new when none), the form of a POST and its CSRF and Origin checks. */
  private async begin(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<RequestContext> {
    let session = this.sessions.get(readCookie(req.headers.cookie, COOKIE));
    if (!session) {
      session = this.sessions.create();
      this.setCookie(res, session);
    } else if (this.sessions.needsCookie(session)) {
      this.setCookie(res, session);
    }
    let form = new URLSearchParams();
    if (req.method === 'POST') {
      if (this.config.readOnly && url.pathname !== '/login' && url.pathname !== '/logout') {
        throw new HttpError(403, 'This dashboard is read-only: actions are refused.');
      }
      form = new URLSearchParams(await readBody(req));
      if (!this.sameOrigin(req)) throw new HttpError(403, 'This form was not sent from this dashboard (Origin / Referer check).');
      if (!csrfMatches(session, form.get('csrf') ?? undefined)) {
        throw new HttpError(403, 'The form is missing its CSRF token or it has expired: reload the page and try again.');
      }
    } else if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new HttpError(405, 'Method not allowed.');
    }
    const ctx: PageContext = { csrf: session.csrf, readOnly: this.config.readOnly, loggedIn: this.config.requireLogin && Boolean(session.token) };
    return { req, res, url, session, ctx, form };
  }

  private async route(r: RequestContext): Promise<void> {
    const { req, url, session } = r;
    const post = req.method === 'POST';
    if (url.pathname === '/login') return post ? this.login(r) : this.showLogin(r);
    if (url.pathname === '/logout' && post) {
      // A new session replaces the browser's cookie: with sealed sessions
      // the old cookie would otherwise still be one.
      this.sessions.delete(session);
      this.setCookie(r.res, this.sessions.create());
      return redirect(r.res, this.config.requireLogin ? '/login' : '/');
    }
    if (this.config.requireLogin && !session.token) {
      if (!post && !url.pathname.endsWith('/events')) return redirect(r.res, '/login');
      throw new HttpError(401, 'Log in first.');
    }
    let parts: string[];
    try {
      parts = url.pathname.split('/').slice(1).map(decodeURIComponent);
    } catch {
      throw new HttpError(400, 'Malformed path.');
    }
    try {
      if (!post && parts.length === 1 && parts[0] === '') return await this.queues(r);
      if (!post && parts.length === 1 && parts[0] === 'events') return await this.eventStreams.events(r);
      if (!post && parts.length === 1 && parts[0] === 'schedules') return await this.schedules(r);
      if (post && parts.length === 1 && parts[0] === 'schedules') return await this.putSchedule(r);
      if (post && parts.length === 1 && parts[0] === 'create-queue') return await this.createQueue(r);
      if (post && parts.length === 3 && parts[0] === 'schedules' && parts[2] === 'delete') {
        if (!SCHEDULE_NAME.test(parts[1])) throw new HttpError(400, 'Not a schedule name.');
        return await this.deleteSchedule(r, parts[1]);
      }
      if (!post && parts.length === 1 && parts[0] === 'workers') return await this.workers(r);
      if (parts[0] === 'queues' && parts.length >= 2) {
        if (!QUEUE_NAME.test(parts[1])) throw new HttpError(400, 'Not a queue name.');
        if (!post && parts.length === 2) return await this.queue(r, parts[1]);
        if (!post && parts.length === 3 && parts[2] === 'watch') return send(r.res, 200, pages.watchPage(r.ctx, parts[1]));
        if (!post && parts.length === 4 && parts[2] === 'watch' && parts[3] === 'events') return this.eventStreams.watchEvents(r, parts[1]);
        if (!post && parts.length === 4 && parts[2] === 'jobs') return await this.job(r, parts[1], parts[3]);
        if (!post && parts.length === 5 && parts[2] === 'jobs' && parts[4] === 'events') return this.eventStreams.jobEvents(r, parts[1], parts[3]);
        if (post && parts.length === 3 && parts[2] === 'enqueue') return await this.enqueue(r, parts[1]);
        if (!post && parts.length === 5 && parts[2] === 'jobs' && isDownloadPart(parts[4])) return await this.download(r, parts[1], parts[3], parts[4]);
        if (post && parts.length === 3 && parts[2] in ACTIONS) return await this.action(r, parts[1], parts[2]);
      }
    } catch (err) {
      if (!(err instanceof BrokerError)) throw err;
      if (err.code === 16) {
        // Revoked or rotated: log in again.
        session.token = undefined;
        if (!r.res.headersSent) this.setCookie(r.res, session);
      }
      return send(r.res, statusFor(err.code), pages.brokerErrorPage(r.ctx, err.code, err.details));
    }
    throw new HttpError(404, 'No such page.');
  }

  private showLogin(r: RequestContext): void {
    if (!this.config.requireLogin) return redirect(r.res, '/');
    send(r.res, 200, pages.loginPage(r.session.csrf));
  }

  /** Checks the token with a ListQueues; on success a new session (new id) holds it. */
  private async login(r: RequestContext): Promise<void> {
    if (!this.config.requireLogin) return redirect(r.res, '/');
    const token = r.form.get('token') ?? '';
    if (token === '') return send(r.res, 400, pages.loginPage(r.session.csrf, 'Enter an admin token.'));
    try {
      await this.broker.listQueues(token);
    } catch (err) {
      if (!(err instanceof BrokerError)) throw err;
      const why =
        err.code === 16 ? 'The broker did not accept this token (UNAUTHENTICATED).'
        : err.code === 7 ? 'This token may not administer any queue (PERMISSION_DENIED).'
        : explainCode(err.code);
      this.log({ msg: 'login refused', code: err.code });
      return send(r.res, statusFor(err.code), pages.loginPage(r.session.csrf, why));
    }
    this.sessions.delete(r.session);
    this.setCookie(r.res, this.sessions.create(token));
    this.log({ msg: 'login' });
    redirect(r.res, '/');
  }

  private async queues(r: RequestContext): Promise<void> {
    const poller = this.hub.get(r.session.token);
    const snap = await poller.snapshot();
    send(r.res, 200, pages.queuesPage(r.ctx, snap, poller));
  }

  private async schedules(r: RequestContext): Promise<void> {
    const { schedules } = await this.broker.listSchedules(r.session.token);
    const edit = r.url.searchParams.get('edit');
    const editing = edit ? schedules.find((s) => s.schedule.name === edit) : undefined;
    if (edit && !editing) throw new HttpError(404, `There is no schedule ${edit}.`);
    send(r.res, 200, pages.schedulesPage(r.ctx, schedules, editing));
  }

  /** PutSchedule from the schedules page's form. */
  private async putSchedule(r: RequestContext): Promise<void> {
    const schedule = parseSchedule((f) => r.form.get(f));
    if ('error' in schedule) throw new HttpError(400, schedule.error);
    const { replaced, next_run_at_ms } = await this.broker.putSchedule(r.session.token, schedule);
    this.log({ msg: 'action', action: 'put-schedule', schedule: schedule.name, queue: schedule.job.queue, replaced });
    const next = next_run_at_ms > 0 ? `its next run is at ${showTime(next_run_at_ms)}` : 'it has no next run';
    send(r.res, 200, pages.messagePage(r.ctx, 'Done', `${replaced ? 'Replaced' : 'Created'} schedule ${schedule.name}: ${next}.`, { url: '/schedules', label: 'Back to the schedules' }));
  }

  /** CreateQueue from the queues page's form. */
  private async createQueue(r: RequestContext): Promise<void> {
    const req = parseCreateQueue((f) => r.form.get(f));
    if ('error' in req) throw new HttpError(400, req.error);
    await this.broker.createQueue(r.session.token, req);
    this.log({ msg: 'action', action: 'create-queue', queue: req.queue });
    send(r.res, 200, pages.messagePage(r.ctx, 'Done', `Created queue ${req.queue}.`, { url: queueUrl(req.queue), label: `Go to queue ${req.queue}` }));
  }

  /** Enqueue from the queue page's form; the message links to the job. */
  private async enqueue(r: RequestContext, queue: string): Promise<void> {
    const req = parseEnqueue((f) => r.form.get(f), queue);
    if ('error' in req) throw new HttpError(400, req.error);
    const { job_id, duplicate } = await this.broker.enqueue(r.session.token, req);
    this.log({ msg: 'action', action: 'enqueue', queue, job_id, duplicate });
    const message = duplicate ? `A job with this idempotency key exists: ${job_id}. Nothing was added.` : `Enqueued job ${job_id}.`;
    send(r.res, 200, pages.messagePage(r.ctx, 'Done', message, { url: jobUrl(queue, job_id), label: 'Go to the job' }));
  }

  /**
   * ListWorkers. Its errors are shown on the Workers page itself, with the
   * page's status code, but for UNAUTHENTICATED, which ends the login (route()).
   */
  private async workers(r: RequestContext): Promise<void> {
    try {
      const workers = await this.broker.listWorkers(r.session.token);
      send(r.res, 200, workersPage(r.ctx, { now: Date.now(), workers }));
    } catch (err) {
      if (!(err instanceof BrokerError) || err.code === 16) throw err;
      send(r.res, statusFor(err.code), workersPage(r.ctx, { now: Date.now(), error: { code: err.code, details: err.details } }));
    }
  }

  /** DeleteSchedule, after a confirmation. */
  private async deleteSchedule(r: RequestContext, name: string): Promise<void> {
    const action = `/schedules/${encodeURIComponent(name)}/delete`;
    if (r.form.get('confirm') !== 'yes') {
      const question = `Delete schedule ${name}? It enqueues no more runs; the jobs it already enqueued stay.`;
      return send(r.res, 200, pages.confirmPage(r.ctx, 'Please confirm', question, action, {}, '/schedules'));
    }
    const { deleted } = await this.broker.deleteSchedule(r.session.token, name);
    this.log({ msg: 'action', action: 'delete-schedule', schedule: name });
    send(r.res, 200, pages.messagePage(r.ctx, 'Done', deleted ? `Deleted schedule ${name}.` : `There was no schedule ${name}.`, { url: '/schedules', label: 'Back to the schedules' }));
  }

  private async queue(r: RequestContext, queue: string): Promise<void> {
    const q = r.url.searchParams;
    const jobId = q.get('job_id')?.trim();
    if (jobId) return redirect(r.res, jobUrl(queue, jobId));
    const idempotencyKey = q.get('idempotency_key') ?? '';
    if (idempotencyKey !== '') {
      const { job } = await this.broker.getJobByIdempotencyKey(r.session.token, queue, idempotencyKey);
      return redirect(r.res, jobUrl(queue, job.id));
    }
    const state = q.get('state') ?? 'pending';
    if (!(state in pages.STATES)) throw new HttpError(400, 'Unknown state.');
    const type = q.get('type')?.trim() ?? '';
    const pageToken = q.get('page_token') ?? '';
    const token = r.session.token;
    const [{ stats }, list] = await Promise.all([
      this.broker.getQueueStats(token, queue),
      this.broker.listJobs(token, { queue, state: pages.STATES[state], page_size: 50, page_token: pageToken, type }),
    ]);
    const poller = this.hub.get(token);
    const hour = { depth: poller.depthPerMinute(queue), completed: poller.rates.rates(queue) ? poller.rates.completedPerMinute(queue) : undefined };
    send(r.res, 200, pages.queuePage(r.ctx, { stats, state, type, pageToken, jobs: list.jobs, nextPageToken: list.next_page_token, hour }));
  }

  private async job(r: RequestContext, queue: string, id: string): Promise<void> {
    const { job } = await this.broker.getJob(r.session.token, queue, id);
    send(r.res, 200, pages.jobPage(r.ctx, job));
  }

  /** An action's form checked (400 naming the field, nothing done), then confirmed, then run. */
  private async action(r: RequestContext, queue: string, name: string): Promise<void> {
    const action = ACTIONS[name];
    const jobIds = [...new Set(r.form.getAll('job_id').map((id) => id.trim()).filter((id) => id !== ''))];
    const all = r.form.get('all') === '1';
    const type = name === 'retry-dead' && all ? (r.form.get('type') ?? '').trim() : '';
    if (action.needsJob && jobIds.length !== 1) {
      throw new HttpError(400, jobIds.length === 0 ? 'Which job? (job_id missing)' : `One job at a time: job_id is given ${jobIds.length} times.`);
    }
    if (name === 'retry-dead' && !all) {
      if (jobIds.length === 0) throw new HttpError(400, 'Which jobs? Select at least one dead job (job_id missing).');
      if (jobIds.length > MAX_SELECTED) throw new HttpError(400, `job_id: at most ${MAX_SELECTED} jobs at a time (${jobIds.length} selected).`);
    }
    const olderThan = name === 'purge-dead' ? parseOlderThan(r.form.get('older_than'), r.form.get('unit')) : 0;
    if (typeof olderThan !== 'number') throw new HttpError(400, olderThan.error);
    const settings = name === 'update-queue' ? parseQueueSettings((f) => r.form.get(f)) : {};
    if ('error' in settings) throw new HttpError(400, settings.error);
    const force = name === 'delete-queue' && r.form.get('force') === '1';
    const input = { broker: this.broker, token: r.session.token, queue, jobIds, all, type, olderThanMs: olderThan, force, settings };
    const oneJob = jobIds.length === 1 && name !== 'delete-job';
    const back = oneJob ? jobUrl(queue, jobIds[0])
      : name === 'delete-queue' ? '/'
      : queueUrl(queue, name.endsWith('-dead') ? { state: 'dead' } : {});
    if (action.question && r.form.get('confirm') !== 'yes') {
      const fields: Record<string, string | string[]> = {};
      if (jobIds.length > 0) fields.job_id = jobIds;
      if (all) fields.all = '1';
      if (type) fields.type = type;
      if (force) fields.force = '1';
      if (olderThan > 0) {
        fields.older_than = r.form.get('older_than')!.trim();
        fields.unit = r.form.get('unit')!;
      }
      const question = await action.question(input);
      return send(r.res, 200, pages.confirmPage(r.ctx, 'Please confirm', question, `${queueUrl(queue)}/${name}`, fields, back));
    }
    const message = await action.run(input);
    this.log({ msg: 'action', action: name, queue, jobs: jobIds.length || undefined, job_id: jobIds.length === 1 ? jobIds[0] : undefined, type: type || undefined, older_than_ms: olderThan || undefined });
    send(r.res, 200, pages.messagePage(r.ctx, 'Done', message, { url: back, label: oneJob ? 'Back to the job' : name === 'delete-queue' ? 'Back to the queues' : `Back to queue ${queue}` }));
  }

  /** A job's payload, result or progress data as a file (the job page shows at most MAX_SHOWN_BYTES). */
  private async download(r: RequestContext, queue: string, id: string, part: DownloadPart): Promise<void> {
    const { job } = await this.broker.getJob(r.session.token, queue, id);
    const bytes = job[part] ?? Buffer.alloc(0);
    const filename = `${id.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100)}-${part}.bin`;
    r.res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-disposition': `attachment; filename="${filename}"`,
      'cache-control': 'no-store',
      'content-length': bytes.length,
      ...SECURITY_HEADERS,
    });
    r.res.end(bytes);
  }

  /** The Origin header (or, without one, the Referer) names this server: --public_origin when set. */
  private sameOrigin(req: http.IncomingMessage): boolean {
    const own = this.config.publicOrigin ?? `${this.tls ? 'https' : 'http'}://${req.headers.host ?? ''}`;
    const origin = req.headers.origin;
    if (origin !== undefined) return origin === own;
    const referer = req.headers.referer;
    return referer !== undefined && (referer === own || referer.startsWith(`${own}/`));
  }

  private setCookie(res: http.ServerResponse, session: Session): void {
    const secure = this.tls || Boolean(this.config.publicOrigin?.startsWith('https://'));
    res.setHeader('set-cookie', `${COOKIE}=${this.sessions.cookie(session)}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`);
  }

  private serveStatic(res: http.ServerResponse, name: string): void {
    const type = STATIC_FILES[name];
    if (!type) return send(res, 404, 'not found\n', 'text/plain; charset=utf-8');
    send(res, 200, fs.readFileSync(path.join(this.staticDir, name), 'utf8'), type);
  }

}

type DownloadPart = 'payload' | 'result' | 'progress_data';

function isDownloadPart(s: string): s is DownloadPart {
  return s === 'payload' || s === 'result' || s === 'progress_data';
}

function statusFor(code: number): number {
  return ({ 16: 401, 7: 403, 5: 404, 3: 400, 6: 409, 9: 409, 14: 503, 4: 504 } as Record<number, number>)[code] ?? 502;
}

function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new HttpError(413, 'Form too large.'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
