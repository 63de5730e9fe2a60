/** The options of a Worker and of its run(), and its default logger. */
import type * as grpc from '@grpc/grpc-js';
import type { SecurityOptions } from './proto';
import type { Outcome } from './job';

/** Where a Worker logs (WorkerOptions.logger). */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** Also takes the bearer token and TLS options of the Client (SecurityOptions). */
export interface WorkerOptions extends SecurityOptions {
  /** Broker `host:port`. Default: $JOBWIRE_ADDR, else `localhost:50051`. */
  address?: string;
  /** Queues to consume, earlier ones served first (unless `weights`). */
  queues: string[];
  /**
   * Weighted fair claiming (ClaimRequest.weights): queue name -> weight, an
   * integer 1..1000, for every queue of `queues` and no other. While several
   * of the queues have due jobs, the broker splits the worker's free slots
   * between them in proportion to their weights (`{ heavy: 3, light: 1 }`:
   * about three `heavy` jobs per `light` one); a queue without due jobs
   * leaves its share to the others. Unset or empty (the default): strict
   * order, every free slot to the first of `queues` with due jobs. A bad
   * value throws TypeError at construction.
   */
  weights?: Record<string, number>;
  /** Handlers running at once (default 1). */
  concurrency?: number;
  /**
   * Lease per job in ms, 1000..43200000 (default 0: the broker's, 30 s).
   * Renewed every third of the lease the broker grants (job.leaseMs).
   */
  leaseMs?: number;
  /** Stored on claimed jobs. Default `node-<host>-<pid>`. */
  workerId?: string;
  /** How long stop() waits for running handlers and their Ack/Fail (default 25000). */
  graceMs?: number;
  /** Deadline of each unary call (AckBatch, Fail, ExtendLease), default 10000. */
  timeoutMs?: number;
  /** Receives every final outcome (also emitted as the 'outcome' event). */
  onOutcome?: (outcome: Outcome) => void;
  /** Where the worker logs; default stderr. `null` silences it. */
  logger?: Logger | null;
  /** Channel credentials, exclusive with the tls options (as in ClientOptions). */
  credentials?: grpc.ChannelCredentials;
  /**
   * Extra grpc-js channel options, over the client's own (src/proto.ts).
   * `'grpc.service_config'` replaces the default service config,
   * round_robin (ROUND_ROBIN_SERVICE_CONFIG in src/proto.ts).
   */
  channelOptions?: grpc.ChannelOptions;
}

export interface RunOptions {
  /**
   * Stop gracefully (as stop()) on SIGTERM / SIGINT: run() adds one listener
   * for each to `process` and removes them when it ends. Default false: run()
   * touches no signal, and the process's own handling (or Node's default,
   * exit) stays as it was.
   */
  installSignalHandlers?: boolean;
}

/** The default logger: one line per message on stderr. */
export function stderrLogger(workerId: string): Logger {
  const w = (level: string, msg: string) => process.stderr.write(`jobwire worker ${workerId} ${level}: ${msg}\n`);
  return { info: (m) => w('info', m), warn: (m) => w('warn', m), error: (m) => w('error', m) };
}
