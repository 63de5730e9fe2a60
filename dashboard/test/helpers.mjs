// Test helpers of the dashboard's suites: the dashboard as a child process,
// Debian's headless chromium through playwright-core (never a downloaded
// browser), an independent Admin gRPC client to check what the broker
// reports, jobs seeded in each state, and the Workers page's rows as a
// browser sees them. Redis and the broker come from the Node client's
// harness (client/node/test/harness.mjs: startStack), shared with its suites.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { chromium } from 'playwright-core';
import { freePort, startStack, waitFor, waitForPort, REPO_ROOT } from '../../client/node/test/harness.mjs';
import { Client } from '../../client/node/dist/index.js';

export { startStack, waitFor, sleep, freePort } from '../../client/node/test/harness.mjs';
export { Client, Worker } from '../../client/node/dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const DASHBOARD_MAIN = path.resolve(here, '..', 'dist', 'main.js');
/** Screenshots of the main pages land here (not committed). */
export const OUTPUT_DIR = path.resolve(here, '..', 'test-output');

/**
 * Starts `node dist/main.js --broker=<address> --listen=127.0.0.1:<free port>
 * ...args`. Returns { url, port, log(), signal(name), stop() }; log() is its
 * stderr and stdout.
 */
export async function startDashboard(brokerAddress, args = []) {
  const port = await freePort();
  const proc = spawn(process.execPath, [DASHBOARD_MAIN, `--broker=${brokerAddress}`, `--listen=127.0.0.1:${port}`, '--poll_interval_ms=500', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks = [];
  proc.stdout.on('data', (d) => chunks.push(d));
  proc.stderr.on('data', (d) => chunks.push(d));
  proc.logText = () => Buffer.concat(chunks).toString('utf8');
  await waitForPort(port, proc, 'jobwire-dashboard');
  return {
    url: `${args.some((a) => a.startsWith('--tls_cert')) ? 'https' : 'http'}://127.0.0.1:${port}`,
    log: () => proc.logText(),
    port,
    signal: (name) => proc.kill(name),
    stop: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', resolve);
        proc.kill('SIGTERM');
      }),
  };
}

/** `promise`, or an error naming `what` once it took longer than `ms`. */
async function bounded(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms); });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Debian's chromium, headless, on a fresh profile. Returns a playwright BrowserContext. */
export async function launchBrowser() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'jw-dash-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  // A page closed while a navigation commits (a form's answer loading) can
  // wait for Chromium forever: page.close() and context.close() take no
  // timeout. So a page's close waits for its load to end first, and each
  // close is bounded; a close that still hangs fails the test that asked
  // for it instead of the whole file timing out.
  const newPage = context.newPage.bind(context);
  context.newPage = async () => {
    const page = await newPage();
    const closePage = page.close.bind(page);
    page.close = async (options) => {
      await page.waitForLoadState('load', { timeout: 5000 }).catch(() => {});
      await bounded(closePage(options), 10_000, 'page.close()');
    };
    return page;
  };
  const close = context.close.bind(context);
  context.close = async () => {
    await bounded(close(), 20_000, 'closing the browser');
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return context;
}

/** AdminService and BrokerService stubs on the broker, promise-returning, with an optional token. */
export function brokerStubs(address, token) {
  const def = protoLoader.loadSync(['jobwire/v1/admin.proto', 'jobwire/v1/broker.proto'], {
    includeDirs: [path.join(REPO_ROOT, 'proto')],
    keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
  });
  const v1 = grpc.loadPackageDefinition(def).jobwire.v1;
  const creds = grpc.credentials.createInsecure();
  const clients = { admin: new v1.AdminService(address, creds), broker: new v1.BrokerService(address, creds) };
  const call = (svc, method, req) =>
    new Promise((resolve, reject) => {
      const md = new grpc.Metadata();
      if (token) md.set('authorization', `Bearer ${token}`);
      clients[svc][method](req, md, { deadline: Date.now() + 5000 }, (err, res) => (err ? reject(err) : resolve(res)));
    });
  return {
    stats: async (queue) => (await call('admin', 'GetQueueStats', { queue })).stats,
    getJob: async (queue, job_id) => (await call('broker', 'GetJob', { queue, job_id })).job,
    resume: (queue) => call('admin', 'ResumeQueue', { queue }),
    createQueue: (request) => call('admin', 'CreateQueue', request),
    putSchedule: (schedule) => call('admin', 'PutSchedule', { schedule }),
    listSchedules: async () => (await call('admin', 'ListSchedules', {})).schedules,
    listQueues: async () => (await call('admin', 'ListQueues', {})).queues,
    close: () => { clients.admin.close(); clients.broker.close(); },
  };
}

/**
 * What a suite runs against: Redis and the broker (startStack, with
 * `brokerArgs`), a Client and brokerStubs with `token`, a dashboard with
 * `dashArgs`, and the browser (none with `browser: false`). stop() ends them
 * in reverse order; whatever started is stopped even when a later start
 * failed.
 */
export async function startAll({ brokerArgs = [], dashArgs = [], token, browser = true } = {}) {
  const all = {};
  all.stop = async () => {
    await all.browser?.close();
    await all.dash?.stop();
    all.stubs?.close();
    all.client?.close();
    await all.stack?.stop();
  };
  all.stack = await startStack({ brokerArgs });
  all.client = new Client({ address: all.stack.address, timeoutMs: 5000, ...(token ? { token } : {}) });
  all.stubs = brokerStubs(all.stack.address, token);
  all.dash = await startDashboard(all.stack.address, dashArgs);
  if (browser) all.browser = await launchBrowser();
  return all;
}

/**
 * A session of the dashboard at `url` as a browser gets it from a first GET
 * of `page`: { cookie, csrf, post(path, fields) }. csrf is null when the
 * page has no form (read-only). post() sends a form as the dashboard's pages
 * do (the session's cookie and CSRF token, this origin); `fields` is an
 * object or a list of [name, value] pairs (a name may repeat).
 */
export async function formSession(url, page = '/') {
  const first = await fetch(`${url}${page}`);
  const cookie = first.headers.get('set-cookie').split(';')[0];
  const csrf = /name="csrf" value="([^"]+)"/.exec(await first.text())?.[1] ?? null;
  const post = (path, fields = {}) => {
    const body = new URLSearchParams(csrf ? { csrf } : {});
    for (const [k, v] of Array.isArray(fields) ? fields : Object.entries(fields)) body.append(k, v);
    return fetch(`${url}${path}`, {
      method: 'POST', redirect: 'manual', body,
      headers: { cookie, origin: url, 'content-type': 'application/x-www-form-urlencoded' },
    });
  };
  return { cookie, csrf, post };
}

/** A screenshot of the page in OUTPUT_DIR/<name>.png. */
export async function screenshot(page, name) {
  fs.mkdirSync(OUTPUT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(OUTPUT_DIR, `${name}.png`), fullPage: true });
}

/** Enqueues with `client` `due` due jobs, `scheduled` delayed ones and `dead` cancelled ones into `queue`; returns the dead ids. */
export async function seed(client, queue, { due = 0, scheduled = 0, dead = 0 }) {
  const deadIds = [];
  for (let i = 0; i < due; i++) await client.enqueue(queue, 'send', { n: i });
  for (let i = 0; i < scheduled; i++) await client.enqueue(queue, 'later', { n: i }, { delayMs: 3_600_000 });
  for (let i = 0; i < dead; i++) {
    const { jobId } = await client.enqueue(queue, 'doomed', { n: i });
    await client.cancel(queue, jobId);
    deadIds.push(jobId);
  }
  return deadIds;
}

/** The Workers page's rows, by worker id: the text of each cell. */
async function workerRows(page) {
  return page.locator('table.workers tbody tr').evaluateAll((trs) => Object.fromEntries(trs.map((tr) => [
    tr.dataset.worker,
    Object.fromEntries([...tr.querySelectorAll('td[data-col]')].map((td) => [td.dataset.col, td.innerText])),
  ])));
}

/** Reloads /workers until `ok(rows)` holds (a few seconds at most); returns the rows. */
export async function workersUntil(page, url, ok, what) {
  let rows = {};
  await waitFor(async () => {
    await page.goto(url);
    rows = await workerRows(page);
    return ok(rows);
  }, { timeoutMs: 8000, intervalMs: 250, what });
  return rows;
}
