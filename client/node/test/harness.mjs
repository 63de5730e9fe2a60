// Test helper: a real redis-server and a real jobwire-broker on free ports.
import { spawn, execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { before, after } from 'node:test';
import { Client } from '../dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '..', '..', '..');
export const BROKER_BIN = process.env.JOBWIRE_BROKER_BIN || path.join(REPO_ROOT, 'build', 'broker', 'jobwire-broker');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    const done = (ok) => { s.destroy(); resolve(ok); };
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
    s.setTimeout(500, () => done(false));
  });
}

export async function waitForPort(port, proc, what, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`${what} exited (${proc.exitCode ?? proc.signalCode}) before listening:\n${proc.logText?.() ?? ''}`);
    }
    if (await canConnect(port)) return;
    await sleep(50);
  }
  throw new Error(`${what} did not listen on ${port} within ${timeoutMs} ms:\n${proc.logText?.() ?? ''}`);
}

function track(proc) {
  const chunks = [];
  let size = 0;
  const keep = (d) => { chunks.push(d); size += d.length; while (size > 256 * 1024) size -= chunks.shift().length; };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  proc.logText = () => Buffer.concat(chunks).toString('utf8');
  return proc;
}

function stopProc(proc, signal = 'SIGTERM', timeoutMs = 5000) {
  return new Promise((resolve) => {
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const t = setTimeout(() => { try { proc.kill('SIGKILL'); } catch {} }, timeoutMs);
    proc.once('exit', () => { clearTimeout(t); resolve(); });
    try { proc.kill(signal); } catch { clearTimeout(t); resolve(); }
  });
}

/**
 * Starts redis-server and the broker. Returns { address, brokerPort,
 * redisPort, killBroker(), stopBroker(), restartBroker(), stop() }.
 * With `redisPort` (another stack's), starts only a broker on that Redis
 * (several brokers sharing one Redis, as replicas do); its stop() stops only
 * that broker.
 */
export async function startStack({ brokerArgs = [], redisPort: sharedRedisPort } = {}) {
  let redis;
  let redisPort = sharedRedisPort;
  if (redisPort === undefined) {
    redisPort = await freePort();
    redis = track(spawn('redis-server', [
      '--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    ], { stdio: ['ignore', 'pipe', 'pipe'] }));
    await waitForPort(redisPort, redis, 'redis-server');
  }

  const brokerPort = await freePort();
  const args = [
    `--listen=127.0.0.1:${brokerPort}`,
    `--redis_url=redis://127.0.0.1:${redisPort}`,
    '--log_level=warning',
    '--shutdown_grace_ms=2000',
    ...brokerArgs,
  ];
  let broker;
  const startBroker = async () => {
    broker = track(spawn(BROKER_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    await waitForPort(brokerPort, broker, 'jobwire-broker');
  };
  await startBroker();

  return {
    address: `127.0.0.1:${brokerPort}`,
    brokerPort,
    redisPort,
    brokerLog: () => broker.logText(),
    /** SIGKILL the broker and wait for it to be gone. */
    async killBroker() {
      await stopProc(broker, 'SIGKILL');
    },
    /** SIGTERM the broker (it drains for --shutdown_grace_ms) and wait for it to be gone. */
    async stopBroker() {
      await stopProc(broker, 'SIGTERM');
    },
    async restartBroker() {
      await startBroker();
    },
    async stop() {
      await stopProc(broker, 'SIGTERM');
      if (redis) await stopProc(redis, 'SIGTERM');
    },
  };
}

/**
 * A suite's stack: registers before() (startStack and a Client on it) and
 * after() (stops the Workers the suite pushed to `workers`, closes the
 * client, stops the stack). `stack` and `client` are set once before() ran.
 */
export function useStack({ brokerArgs = [], timeoutMs = 5000 } = {}) {
  const suite = { stack: undefined, client: undefined, workers: [] };
  before(async () => {
    suite.stack = await startStack({ brokerArgs });
    suite.client = new Client({ address: suite.stack.address, timeoutMs });
  });
  after(async () => {
    await Promise.all(suite.workers.map((w) => w.stop()));
    suite.client?.close();
    await suite.stack?.stop();
  });
  return suite;
}

/** Polls fn() until it returns a truthy value, or throws after timeoutMs. */
export async function waitFor(fn, { timeoutMs = 10_000, intervalMs = 50, what = 'condition' } = {}) {
  const until = Date.now() + timeoutMs;
  let last;
  while (Date.now() < until) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

/**
 * Claims one job of `queue` on a raw Claim stream of `stub` (a BrokerService
 * stub, makeStub of dist/proto.js), then cancels the stream: the job stays
 * ACTIVE under its lease. Returns { jobId, leaseToken, leaseMs }.
 */
export function claimOne(stub, queue, { leaseMs = 30_000, workerId = 'node-test' } = {}) {
  return new Promise((resolve, reject) => {
    const call = stub.Claim({ queues: [queue], maxInFlight: 1, leaseMs, workerId });
    const timer = setTimeout(() => { call.cancel(); reject(new Error('no job claimed within 10 s')); }, 10_000);
    call.on('data', (msg) => {
      const cj = msg.jobs[0];
      if (!cj) return; // a message with stops only
      clearTimeout(timer);
      call.cancel();
      resolve({ jobId: cj.job.id, leaseToken: cj.leaseToken, leaseMs: Number(cj.leaseMs) });
    });
    call.on('error', () => {});
  });
}

let adminService;
/** One unary call of the AdminService (proto/jobwire/v1/admin.proto, loaded from the repository). */
async function adminCall(address, method, req) {
  if (!adminService) {
    const def = protoLoader.loadSync('jobwire/v1/admin.proto', {
      includeDirs: [path.join(REPO_ROOT, 'proto')], longs: String, enums: String, defaults: true, oneofs: true,
    });
    adminService = grpc.loadPackageDefinition(def).jobwire.v1.AdminService;
  }
  const stub = new adminService(address, grpc.credentials.createInsecure());
  try {
    return await new Promise((resolve, reject) => {
      stub[method](req, { deadline: Date.now() + 5000 }, (err, res) => (err ? reject(err) : resolve(res)));
    });
  } finally {
    stub.close();
  }
}

/**
 * AdminService.DeleteJob (the package itself has no Admin stub): removes a job in
 * any state; a worker holding its lease then gets NOT_FOUND on ExtendLease /
 * Ack / Fail.
 */
export async function adminDeleteJob(address, queue, jobId) {
  await adminCall(address, 'DeleteJob', { queue, jobId });
}

/**
 * AdminService.GetQueueStats with the int64 counts as numbers: { pendingDue,
 * pendingScheduled, active, completed, dead, ... } (all 0 for a queue that
 * never had jobs).
 */
export async function adminQueueStats(address, queue) {
  const { stats: s } = await adminCall(address, 'GetQueueStats', { queue });
  const out = { ...s };
  for (const k of ['pendingDue', 'pendingScheduled', 'active', 'completed', 'dead']) out[k] = Number(s[k]);
  return out;
}

/**
 * Sum of jobwire_rpc_requests_total for one BrokerService method, over all
 * codes, from the /metrics of a broker started with
 * --metrics_listen=127.0.0.1:<metricsPort>.
 */
export async function rpcCount(metricsPort, method) {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  let sum = 0;
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('jobwire_rpc_requests_total{')) continue;
    if (!line.includes('service="jobwire.v1.BrokerService"') || !line.includes(`method="${method}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

let seq = 0;
/** A queue name unique within this process. */
export function uniqueQueue(prefix = 'q') {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${++seq}`;
}

// The PKI script every language's TLS tests share: a CA, a server
// certificate for 127.0.0.1 / localhost, a client certificate of that CA, and
// a client certificate of another CA.
const PKI_SCRIPT = path.join(REPO_ROOT, 'tests', 'make_test_pki.sh');

/**
 * A throwaway PKI in a temp dir (openssl CLI). Returns { dir, path(name),
 * read(name), writeFile(name, text), cleanup() }; files: ca.pem, server.pem /
 * server.key, client.pem / client.key, other-ca.pem, other-client.pem / .key.
 */
export function makePki() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jobwire-node-pki-'));
  try {
    execFileSync('sh', [PKI_SCRIPT, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`openssl failed: ${e.stderr?.toString() ?? e.message}`);
  }
  const p = (name) => path.join(dir, name);
  return {
    dir,
    path: p,
    read: (name) => fs.readFileSync(p(name), 'utf8'),
    writeFile: (name, text) => { fs.writeFileSync(p(name), text); return p(name); },
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** Hex SHA-256 of a token, as --auth_tokens_file wants it. */
export function sha256Hex(text) {
  return crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * A client interceptor that makes the broker look older than Work (for a
 * Worker's channelOptions.interceptors): a Work call's messages go out as
 * an empty acks message, which the real broker refuses (INVALID_ARGUMENT)
 * before claiming anything, and the call's status is reported as
 * UNIMPLEMENTED, what a broker without Work answers. Other calls pass.
 * `counts.work` counts the Work calls.
 */
export function olderBroker(counts = { work: 0 }) {
  return (options, nextCall) => {
    if (!options.method_definition.path.endsWith('/Work')) return new grpc.InterceptingCall(nextCall(options));
    counts.work++;
    return new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        next(metadata, {
          onReceiveMessage() { /* none: the broker claims nothing for it */ },
          onReceiveStatus(status, nextStatus) {
            nextStatus({ code: grpc.status.UNIMPLEMENTED, details: 'stand-in: a broker older than Work', metadata: new grpc.Metadata() });
          },
        });
      },
      sendMessage(message, next) {
        next({ acks: { id: 0, acks: [] } });
      },
    });
  };
}

/**
 * A client interceptor standing in for a draining gRPC C++ broker that ends
 * a call with CANCELLED instead of UNAVAILABLE (grpc/grpc#41785, a call that
 * reached the server after Server::Shutdown began): the first call of
 * `method` ('WaitJob', 'Subscribe'), 100 ms after its first message arrived
 * (and was passed on), is cancelled underneath and ends, for the client,
 * with status CANCELLED, details 'CANCELLED' (what gRPC core sends); a
 * message still arriving is dropped. With `cancelFirst: false` no call is
 * ended (it only counts). Other calls pass. `counts.calls`: the calls of
 * `method`; `counts.cancelled`: the calls it ended so.
 */
export function brokerCancelsFirst(method, counts = { calls: 0, cancelled: 0 }, { cancelFirst = true } = {}) {
  return (options, nextCall) => {
    if (!options.method_definition.path.endsWith(`/${method}`)) return new grpc.InterceptingCall(nextCall(options));
    counts.calls++;
    if (!cancelFirst || counts.calls !== 1) return new grpc.InterceptingCall(nextCall(options));
    const inner = nextCall(options);
    let timer;
    let ended = false;
    return new grpc.InterceptingCall(inner, {
      start(metadata, listener, next) {
        next(metadata, {
          onReceiveMessage(message, nextMessage) {
            if (ended) return; // the call is over for the client
            nextMessage(message);
            timer ??= setTimeout(() => {
              ended = true;
              inner.cancelWithStatus(grpc.status.CANCELLED, 'CANCELLED');
            }, 100);
          },
          onReceiveStatus(status, nextStatus) {
            clearTimeout(timer);
            if (!ended) {
              nextStatus(status);
              return;
            }
            counts.cancelled++;
            nextStatus({ code: grpc.status.CANCELLED, details: 'CANCELLED', metadata: new grpc.Metadata() });
          },
        });
      },
    });
  };
}

/**
 * A client interceptor standing in for a draining gRPC C++ broker that ends
 * a unary call with CANCELLED before any handler saw it (grpc/grpc#41785: the
 * call reached the server after Server::Shutdown began and was "zombified"):
 * a call of `method` ('Fail', 'AckBatch', ...) for which `cancel(n)` is true
 * (`n`: 1 for the method's first call) is not sent at all and ends, for the
 * client, with status CANCELLED and `details` (default 'CANCELLED', what
 * gRPC core sends; 'Cancelled on client' makes it look like grpc-js's own
 * cancel). Other calls pass. `counts.calls`: the calls of `method`;
 * `counts.cancelled`: the calls ended so.
 */
export function brokerCancelsUnsent(method, counts = { calls: 0, cancelled: 0 }, { cancel = (n) => n === 1, details = 'CANCELLED' } = {}) {
  return (options, nextCall) => {
    if (!options.method_definition.path.endsWith(`/${method}`)) return new grpc.InterceptingCall(nextCall(options));
    counts.calls++;
    if (!cancel(counts.calls)) return new grpc.InterceptingCall(nextCall(options));
    let listener;
    return new grpc.InterceptingCall(nextCall(options), {
      start(metadata, l) { listener = l; },
      sendMessage() {},
      halfClose() {
        setImmediate(() => {
          counts.cancelled++;
          listener.onReceiveStatus({ code: grpc.status.CANCELLED, details, metadata: new grpc.Metadata() });
        });
      },
      cancel() {},
    });
  };
}
