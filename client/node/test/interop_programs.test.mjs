// The Node interop programs (tests/interop/node/producer.mjs, worker.mjs;
// tests/interop/README.md) against a real redis-server + jobwire-broker:
// the producer's out lines carry its batch's publish span ids, and the
// worker's `span` line after each traced `start` names the same trace and
// the producer span as its handler span's parent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '../dist/index.js';
import { REPO_ROOT, startStack, uniqueQueue, waitFor } from './harness.mjs';

const PROGRAMS = path.join(REPO_ROOT, 'tests', 'interop', 'node');
let stack;
let dir;

before(async () => {
  stack = await startStack();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jobwire-node-interop-'));
});

after(async () => {
  await stack?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs `program` with `env`; resolves with its exit code (and stderr). */
function run(program, env) {
  const p = spawn(process.execPath, [path.join(PROGRAMS, program)], {
    env: { ...process.env, JOBWIRE_ADDR: stack.address, ...env }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  p.stderr.on('data', (d) => { stderr += d; });
  p.result = new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal, stderr })));
  return p;
}

const lines = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

test('producer out lines carry the publish span; worker span lines name it as the parent', async () => {
  const q = uniqueQueue('interop');
  const jobsFile = path.join(dir, 'jobs.jsonl');
  const outFile = path.join(dir, 'out.txt');
  const logFile = path.join(dir, 'worker.log');
  // 150 jobs: two batches (100 + 50); every 10th fails its first attempt.
  fs.writeFileSync(jobsFile, Array.from({ length: 150 }, (_, n) =>
    JSON.stringify({ n, type: 'interop', payload: { n, fail_first: n % 10 === 0 }, max_attempts: 3, backoff_base_ms: 50 })).join('\n'));
  const prod = await run('producer.mjs', { INTEROP_QUEUE: q, INTEROP_JOBS: jobsFile, INTEROP_OUT: outFile }).result;
  assert.equal(prod.code, 0, prod.stderr);

  const out = lines(outFile).map((l) => l.split(' '));
  assert.equal(out.length, 150);
  const spanOf = new Map();
  for (const f of out) {
    assert.equal(f.length, 5, `out line ${f.join(' ')}`);
    assert.match(f[3], /^[0-9a-f]{32}$/);
    assert.match(f[4], /^[0-9a-f]{16}$/);
    spanOf.set(f[1], `${f[3]} ${f[4]}`);
  }
  const batches = new Set(spanOf.values());
  assert.equal(batches.size, 2, 'one publish span per batch');
  assert.equal(new Set(out.slice(0, 100).map((f) => f[4])).size, 1, 'the first 100 share one');

  const client = new Client({ address: stack.address });
  const tp = (await client.getJob(q, out[0][1])).headers.traceparent;
  assert.equal(tp, `00-${out[0][3]}-${out[0][4]}-01`);
  client.close();

  const worker = run('worker.mjs', {
    INTEROP_QUEUE: q, INTEROP_CONCURRENCY: '4', INTEROP_LEASE_MS: '5000', INTEROP_LOG: logFile, INTEROP_LANG: 'node',
  });
  try {
    await waitFor(() => lines(logFile).filter((l) => l.startsWith('ack_ok ')).length === 150,
      { timeoutMs: 30_000, what: '150 ack_ok lines' });
  } finally {
    worker.kill('SIGTERM');
  }
  const w = await worker.result;
  assert.equal(w.code, 0, w.stderr);

  const log = lines(logFile);
  const starts = log.filter((l) => l.startsWith('start '));
  assert.equal(starts.length, 165, '150 first runs and 15 retries');
  for (let i = 0; i < log.length; i++) {
    if (!log[i].startsWith('start ')) continue;
    const [, id, attempt, lang] = log[i].split(' ');
    const next = log.slice(i + 1).find((l) => l.split(' ')[1] === id && l.split(' ')[2] === attempt);
    assert.ok(next?.startsWith('span '), `a span line follows ${log[i]}: ${next}`);
    assert.equal(next, `span ${id} ${attempt} ${lang} ${spanOf.get(id)}`);
  }
});
