/**
 * The Worker (docs/clients.md, Worker): runs registered handlers on the jobs
 * of one Claim stream (claim_stream.ts), renews their leases
 * (lease_renewer.ts), stops them when cancelled or timed out, and reports
 * their progress (run_control.ts), and settles each with an Ack or a Fail
 * (outcome_sender.ts, failure.ts). Options: worker_options.ts; the handler's
 * Job and the reported Outcome: job.ts.
 */
import { EventEmitter } from 'node:events';
import * as os from 'node:os';
import type * as grpc from '@grpc/grpc-js';
import { AckCoalescer, sendAckBatch } from './ack_coalescer';
import { ClaimStream, type StreamState } from './claim_stream';
import { checkHandlerCount } from './claim_types';
import { claimWeights } from './claim_weights';
import { encodeValue, toNumber } from './codec';
import type { JobwireError } from './errors';
import { failureOf } from './failure';
import type { HeldJob } from './held_job';
import { Job, JobAbort, type Handler, type Outcome, type WorkerStats } from './job';
import { leaseLength, LeaseRenewer } from './lease_renewer';
import { leaseEndedAgoMs } from './lease_rules';
import { runLayers, type Middleware } from './middleware';
import { OutcomeSender } from './outcome_sender';
import { RunControl } from './run_control';
import { defaultAddress, DEFAULT_TIMEOUT_MS, makeConnection, makeStub, type BrokerClient } from './proto';
import { stderrLogger, type Logger, type RunOptions, type WorkerOptions } from './worker_options';
import type { ClaimedJob__Output } from './generated/jobwire/v1/ClaimedJob';
import type { ClaimResponse__Output } from './generated/jobwire/v1/ClaimResponse';

/** The parts of one run(), made from its channel. */
interface RunParts {
  stub: BrokerClient;
  claims: ClaimStream;
  renewer: LeaseRenewer;
  control: RunControl;
  sender: OutcomeSender;
}

/**
 * Consumes queues over one Claim stream and runs registered handlers,
 * at most `concurrency` at once. Acks go through an AckCoalescer (batches
 * on the Work stream, else AckBatch calls; one in flight at a time); Fails
 * are unary calls. Emits 'outcome'
 * (Outcome).
 */
export class Worker extends EventEmitter {
  readonly address: string;
  readonly queues: string[];
  readonly concurrency: number;
  readonly leaseMs: number | undefined;
  readonly workerId: string;
  readonly graceMs: number;
  readonly timeoutMs: number;

  private readonly handlers = new Map<string, Handler>();
  /** Worker.use(), outermost first. */
  private readonly layers: Middleware[] = [];
  private readonly onOutcome?: (o: Outcome) => void;
  private readonly log: Logger | null;
  private readonly credentials: grpc.ChannelCredentials;
  /** Per-call metadata (the bearer token, kept in the closure only). */
  private readonly metadata: () => grpc.Metadata;
  private readonly channelOptions?: grpc.ChannelOptions;
  /** ClaimRequest.weights: one per queue, in the order of `queues`; empty for strict order. */
  private readonly weights: number[];
  /** Made by run(). */
  private parts?: RunParts;

  private running = false;
  private stopping = false;
  private readonly busy = new Set<HeldJob>();
  private stopPromise?: Promise<void>;
  private fatal?: JobwireError;
  private resolveRun?: () => void;
  private rejectRun?: (e: Error) => void;
  private signalHandler?: () => void;
  private expiredDropped = 0;

  /**
   * Throws TypeError without queues or on bad weights (see
   * WorkerOptions.weights), and JobwireError INVALID_ARGUMENT when a TLS PEM
   * file cannot be read or does not parse (see SecurityOptions).
   */
  constructor(options: WorkerOptions) {
    super();
    if (!options || !Array.isArray(options.queues) || options.queues.length === 0) {
      throw new TypeError('jobwire Worker: options.queues must list at least one queue');
    }
    this.address = options.address ?? defaultAddress();
    this.queues = [...options.queues];
    this.weights = claimWeights(this.queues, options.weights);
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
    this.leaseMs = options.leaseMs && options.leaseMs > 0 ? options.leaseMs : undefined;
    this.workerId = options.workerId ?? `node-${os.hostname()}-${process.pid}`;
    this.graceMs = options.graceMs ?? 25_000;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.onOutcome = options.onOutcome;
    this.log = options.logger === null ? null : options.logger ?? stderrLogger(this.workerId);
    const conn = makeConnection(options);
    this.credentials = conn.credentials;
    this.metadata = conn.metadata;
    this.channelOptions = options.channelOptions;
  }

  /**
   * Registers the handler of a job type (replacing any previous one). The
   * Claim names these types (at most 64), so the broker delivers only them.
   */
  register(type: string, handler: Handler): this {
    if (typeof handler !== 'function') throw new TypeError('jobwire Worker: handler must be a function');
    this.handlers.set(type, handler);
    return this;
  }

  /**
   * Adds a middleware around every handler of this Worker (all job types);
   * the first added is the outermost (see Middleware):
   * `worker.use(async (job, next) => { ...; return await next(); })`.
   * Throws TypeError when `middleware` is not a function, and an Error once
   * run() was called.
   */
  use(middleware: Middleware): this {
    if (typeof middleware !== 'function') throw new TypeError('jobwire Worker: middleware must be a function');
    if (this.running || this.stopPromise) throw new Error('jobwire Worker: use() must be called before run()');
    this.layers.push(middleware);
    return this;
  }

  /** Alias of register(). */
  handle(type: string, handler: Handler): this {
    return this.register(type, handler);
  }

  /** Number of jobs held right now (handler running or its Ack/Fail pending). */
  get activeJobs(): number {
    return this.busy.size;
  }

  /** The worker's counters. */
  stats(): WorkerStats {
    return { expiredDeliveriesDropped: this.expiredDropped };
  }

  /**
   * Consumes until stop() (or SIGTERM / SIGINT when
   * `installSignalHandlers: true`, off by default; the listeners are removed
   * before run() settles). Resolves once stopped; rejects when the broker
   * refuses the Claim with INVALID_ARGUMENT. Throws at once, starting
   * nothing, an Error when no handler is registered and a RangeError when
   * more than 64 job types have one (the limit of ClaimRequest.types).
   */
  run(options: RunOptions = {}): Promise<void> {
    if (this.running || this.stopPromise) throw new Error('jobwire Worker: run() was already called');
    checkHandlerCount(this.handlers.size);
    this.running = true;
    const stub = makeStub(this.address, this.credentials, this.channelOptions);
    // On the Work stream when one is open, else (or when it ended before
    // answering) as an AckBatch call.
    const acks = new AckCoalescer(async (batch) => {
      const onStream = await this.parts?.claims.sendAcks(batch);
      return onStream ?? sendAckBatch(stub, batch, this.timeoutMs, this.metadata());
    });
    const renewer = new LeaseRenewer({
      stub, metadata: this.metadata, timeoutMs: this.timeoutMs, requestLeaseMs: this.leaseMs ?? 0, log: this.log,
    });
    this.parts = {
      stub,
      claims: new ClaimStream({
        stub, metadata: this.metadata, queues: this.queues, weights: this.weights, concurrency: this.concurrency,
        leaseMs: this.leaseMs ?? 0, workerId: this.workerId, timeoutMs: this.timeoutMs,
        types: () => this.handlers.keys(), log: this.log,
        host: {
          freeSlots: () => this.concurrency - this.busy.size,
          idle: () => this.busy.size === 0,
          onMessage: (s, msg) => this.onMessage(s, msg),
          onFatal: (err) => {
            this.fatal = err;
            void this.stop();
          },
        },
      }),
      renewer,
      control: new RunControl({ stub, metadata: this.metadata, timeoutMs: this.timeoutMs, renewer, log: this.log }),
      sender: new OutcomeSender({
        stub, acks, metadata: this.metadata, timeoutMs: this.timeoutMs, renewer, log: this.log,
        report: (o) => this.report(o),
      }),
    };
    const done = new Promise<void>((resolve, reject) => {
      this.resolveRun = resolve;
      this.rejectRun = reject;
    });
    if (options.installSignalHandlers === true) {
      this.signalHandler = () => {
        this.log?.info('signal received, stopping');
        void this.stop();
      };
      process.on('SIGTERM', this.signalHandler);
      process.on('SIGINT', this.signalHandler);
    }
    this.parts.claims.open();
    return done;
  }

  /**
   * Stops taking jobs, lets running handlers finish and their Ack/Fail be
   * sent within graceMs, then resolves (and so does run()).
   */
  stop(): Promise<void> {
    if (this.stopPromise) return this.stopPromise;
    if (!this.running) {
      this.stopPromise = Promise.resolve();
      return this.stopPromise;
    }
    this.stopping = true;
    this.stopPromise = this.doStop();
    return this.stopPromise;
  }

  private async doStop(): Promise<void> {
    this.parts?.claims.close();

    // Wait for every held job, including those delivered after the stream
    // was cancelled (onClaimed fails them at once and adds them to busy).
    if (this.busy.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'timeout'>((r) => { timer = setTimeout(() => r('timeout'), this.graceMs); });
      const allDone = (async () => {
        while (this.busy.size > 0) await Promise.all([...this.busy].map((h) => h.done));
        return 'done' as const;
      })();
      const res = await Promise.race([allDone, graceOver]);
      clearTimeout(timer);
      if (res === 'timeout') {
        for (const h of this.busy) {
          h.abandoned = true;
          this.parts?.renewer.stop(h);
          this.parts?.control.end(h);
          h.abort.abort(new Error('worker stop grace expired'));
        }
        this.log?.warn(`stop grace of ${this.graceMs} ms expired; abandoning ${this.busy.size} running job(s) (their leases will expire)`);
      }
    }
    if (this.signalHandler) {
      process.removeListener('SIGTERM', this.signalHandler);
      process.removeListener('SIGINT', this.signalHandler);
      this.signalHandler = undefined;
    }
    this.parts?.renewer.close();
    this.parts?.stub.close();
    this.running = false;
    if (this.fatal) this.rejectRun?.(this.fatal);
    else this.resolveRun?.();
  }

  // ---- One job ------------------------------------------------------------

  /**
   * One Claim stream message: every job claimed for the stream since the
   * previous message (0..max_in_flight), taken one by one in claim order,
   * then the runs it asks to stop (StopRun), which may be runs it carried.
   */
  private onMessage(s: StreamState, msg: ClaimResponse__Output): void {
    for (const cj of msg.jobs ?? []) this.onClaimed(s, cj);
    if (msg.stops?.length) this.parts!.control.onStops(msg.stops, this.busy);
  }

  private onClaimed(s: StreamState, cj: ClaimedJob__Output): void {
    if (!cj.job) return;
    if (!this.running) {
      // Delivered after the worker fully stopped (channel closed): nothing
      // can be sent; the lease expires and the broker retries the job.
      this.log?.warn(`job ${cj.job.id} delivered after the worker stopped; its lease will expire`);
      return;
    }
    s.inFlight++;
    const abort = new JobAbort();
    const leaseMs = leaseLength(cj, this.leaseMs);
    const receivedAt = Date.now();
    const job = new Job(cj, abort, { receivedAt, reportProgress: (p) => this.parts!.control.reportProgress(h, p) });
    const h: HeldJob = {
      job,
      token: cj.leaseToken,
      stream: s,
      leaseMs,
      runDeadlineMs: toNumber(cj.job.runDeadlineMs),
      localLeaseDeadline: receivedAt + leaseMs,
      renewAt: 0,
      renewQueue: undefined,
      renewing: false,
      renewalStopped: false,
      finished: false,
      leaseLost: false,
      leaseLostWhileRunning: false,
      abandoned: false,
      abort,
      stopped: undefined,
      deadlineTimer: undefined,
      done: Promise.resolve(),
    };
    this.busy.add(h);
    // A delivery whose lease has ended is dropped. A job delivered after
    // stop() (the stream was already cancelled) is not started: it is failed
    // (retryable) at once, and doStop waits for that.
    const endedAgo = leaseEndedAgoMs(Date.now(), job.leaseExpiresAtMs, h.localLeaseDeadline);
    // The lease of a job not dropped is renewed from here until its final
    // outcome is decided (the OutcomeSender stops it then), or it is
    // abandoned at the end of the stop grace; settle() stops it in any case.
    if (endedAgo === undefined) this.parts!.renewer.start(h);
    const work = endedAgo !== undefined ? this.dropExpired(h, endedAgo)
      : this.stopping ? this.failStopping(h) : this.process(h);
    h.done = work.catch((e) => {
      this.log?.error(`internal error processing job ${job.id}: ${String(e?.stack ?? e)}`);
    }).finally(() => this.settle(h));
  }

  private settle(h: HeldJob): void {
    this.parts!.renewer.stop(h);
    this.parts!.control.end(h);
    this.busy.delete(h);
    h.stream.inFlight--;
    if (!this.stopping) this.parts!.claims.afterSettle();
  }

  /**
   * The handler has returned (or will not run): job.signal is no longer
   * aborted, and the outcome reports whether the lease was lost until now.
   */
  private finish(h: HeldJob): void {
    h.finished = true;
    h.leaseLostWhileRunning = h.leaseLost;
  }

  /** No handler, no Ack / Fail: the broker's reaper delivers the job again. */
  private async dropExpired(h: HeldJob, endedAgoMs: number): Promise<void> {
    this.finish(h);
    this.expiredDropped++;
    this.log?.warn(`delivery of job ${h.job.id} in queue ${h.job.queue} (attempt ${h.job.attempt}) dropped: ` +
      `its lease ended ${Math.round(endedAgoMs)} ms ago, before its handler could start`);
    this.report({ kind: 'expired_dropped', job: h.job, leaseLost: h.leaseLostWhileRunning });
  }

  private async failStopping(h: HeldJob): Promise<void> {
    this.finish(h);
    this.log?.warn(`job ${h.job.id} delivered while stopping; failing it for a retry`);
    await this.parts!.sender.fail(h, { text: 'worker stopping', nonRetryable: false, retryAfterMs: 0, keepAttempt: false });
  }

  private async process(h: HeldJob): Promise<void> {
    const { control, sender } = this.parts!;
    const job = h.job;
    const handler = this.handlers.get(job.type);
    if (!handler) {
      // Only a broker older than ClaimRequest.types delivers a type the
      // Claim did not name: failed for a retry, so that a worker that
      // handles it takes the job.
      const text = `no handler for job type "${job.type}" in worker ${this.workerId}`;
      this.log?.warn(`${text} (job ${job.id} in queue ${job.queue}); failing it for retry`);
      await sender.fail(h, { text, nonRetryable: false, retryAfterMs: 0, keepAttempt: false });
      return;
    }
    control.start(h);
    let result: Buffer;
    try {
      const value = await (this.layers.length === 0
        ? Promise.resolve().then(() => handler(job))
        : runLayers(this.layers, handler, job));
      this.finish(h);
      result = encodeValue(value);
    } catch (err) {
      this.finish(h);
      if (h.abandoned) return;
      await sender.fail(h, failureOf(err, h.stopped?.reason));
      return;
    }
    if (h.abandoned) return;
    await sender.ack(h, result);
  }

  private report(o: Outcome): void {
    try {
      this.onOutcome?.(o);
    } catch (e) {
      this.log?.error(`onOutcome threw: ${String((e as Error)?.stack ?? e)}`);
    }
    try {
      this.emit('outcome', o);
    } catch (e) {
      this.log?.error(`an 'outcome' listener threw: ${String((e as Error)?.stack ?? e)}`);
    }
  }
}
