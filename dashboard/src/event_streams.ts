// EventStreams: the dashboard's server-sent-events answers, and the state of
// those open.
//
//   events()       GET /events                      the queue table after every poll of the viewer's token's StatsPoller
//   jobEvents()    GET /queues/<q>/jobs/<id>/events  the job's fields at each change (WaitJob), until it finishes
//   watchEvents()  GET /queues/<q>/watch/events      the rows of each Subscribe message of the queue
//
// The queue table costs the broker nothing per viewer (the poll is shared).
// A job's or a queue's stream is one broker stream per viewer, cancelled
// when the viewer goes, at most MAX_VIEWER_STREAMS at once over every viewer
// (503 beyond). A viewer more than MAX_UNSENT bytes behind in reading any
// stream is cut off. endAll() ends every open stream (DashboardServer.stop).
// The data of each event is an Html fragment of pages.ts, which
// static/live.js puts in place.
// Thread safety: single-threaded (Node's event loop).
import * as http from 'node:http';
import { BrokerClient } from './broker_client';
import type { Logger } from './dashboard_server';
import { Html } from './html';
import { SECURITY_HEADERS, send } from './http_responses';
import { PageContext } from './page_layout';
import * as pages from './pages';
import { Session } from './session_store';
import { StatsPollerHub } from './stats_poller';

/** Event streams of one job or one queue open at once, over every viewer. */
const MAX_VIEWER_STREAMS = 200;
/** A viewer's event stream is ended when this many bytes wait to be sent to it. */
const MAX_UNSENT = 1024 * 1024;

/** What a stream needs of the request it answers (DashboardServer's RequestContext has it). */
export interface StreamRequest {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  url: URL;
  session: Session;
  ctx: PageContext;
}

/** Sends one event; does nothing once the stream ended. */
type SendEvent = (event: string, data: Html) => void;

export class EventStreams {
  /** Every open event stream, to end them at a stop. */
  private readonly openStreams = new Set<http.ServerResponse>();
  /** The broker streams of the viewers' job and queue event streams. */
  private viewerStreams = 0;

  constructor(
    private readonly broker: BrokerClient,
    private readonly hub: StatsPollerHub,
    private readonly log: Logger,
  ) {}

  /** Ends every open event stream; their broker streams are cancelled as their viewers' requests close. */
  endAll(): void {
    for (const res of this.openStreams) res.end();
  }

  /** The queue table (pages.queuesFragment) now, then after every poll, until the viewer goes. */
  async events(r: StreamRequest): Promise<void> {
    const poller = this.hub.get(r.session.token);
    const sendEvent = this.openEventStream(r);
    const unsubscribe = poller.subscribe((snap) => sendEvent('queues', pages.queuesFragment(snap, poller)));
    r.req.on('close', unsubscribe);
    sendEvent('queues', pages.queuesFragment(await poller.snapshot(), poller));
  }

  /** The job's fields at every change (WaitJob), then an `end` event once it finished (or the stream failed). */
  jobEvents(r: StreamRequest, queue: string, id: string): void {
    this.viewerStream(r, (send, end) =>
      this.broker.waitJob(
        r.session.token,
        { queue, job_id: id, timeout_ms: 0 },
        (job) => send('job', pages.jobFragment(r.ctx, job)),
        (err) => end('end', pages.streamEnd(err.code, err.details, 'ended: the job finished')),
      ),
    );
  }

  /** The queue's events (Subscribe, every kind, with errors), as table rows. */
  watchEvents(r: StreamRequest, queue: string): void {
    this.viewerStream(r, (send, end) =>
      this.broker.subscribe(
        r.session.token,
        { queues: [queue], kinds: [], include_details: true },
        (m) => {
          if (m.events.length > 0 || m.events_missed) send('events', pages.eventRows(queue, m.events, m.events_missed));
        },
        (err) => end('end', pages.streamEnd(err.code, err.details, 'ended by the broker (reload to follow again)')),
      ),
    );
  }

  /**
   * Starts a server-sent-events answer; answers a function that sends one
   * event (its data the Html's lines), and does nothing once the stream
   * ended. A viewer more than MAX_UNSENT bytes behind is cut off.
   */
  private openEventStream(r: StreamRequest): SendEvent {
    const { req, res } = r;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS });
    res.write('retry: 2000\n\n');
    this.openStreams.add(res);
    req.on('close', () => this.openStreams.delete(res));
    return (event, data) => {
      if (res.writableEnded || res.destroyed) return;
      if (res.writableLength > MAX_UNSENT) {
        this.log({ msg: 'event stream cut off', path: r.url.pathname, unsent: res.writableLength });
        res.destroy();
        return;
      }
      const lines = data.text.split('\n').map((l) => `data: ${l}`);
      res.write(`event: ${event}\n${lines.join('\n')}\n\n`);
    };
  }

  /**
   * An event stream fed by one broker stream of this viewer (`open` starts
   * it and answers its cancel function), cancelled when the viewer goes; at
   * most MAX_VIEWER_STREAMS at once, else 503. `end` sends the stream's last
   * event; the stream ends after it.
   */
  private viewerStream(r: StreamRequest, open: (send: SendEvent, end: SendEvent) => () => void): void {
    if (this.viewerStreams >= MAX_VIEWER_STREAMS) {
      return send(r.res, 503, `Too many live views open on this dashboard (${MAX_VIEWER_STREAMS}): close some and reload.\n`, 'text/plain; charset=utf-8');
    }
    this.viewerStreams++;
    const sendEvent = this.openEventStream(r);
    let done = false;
    let cancel = () => {};
    const release = () => {
      if (done) return;
      done = true;
      this.viewerStreams--;
      cancel();
    };
    cancel = open(sendEvent, (event, data) => {
      sendEvent(event, data);
      release();
      r.res.end();
    });
    r.req.on('close', release);
  }
}
