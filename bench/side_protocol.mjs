// The side-by-side benchmark's program protocol (bench/side_protocol.md) for
// the Node.js programs: flags, the 64-byte payload, the JSON event lines, the
// "go" line, latency percentiles and the open-loop sender. Imported by
// bench/clients/side.mjs (jobwire) and bench/peers/bullmq/side.mjs (BullMQ);
// it needs nothing outside Node.js.

export const now = () => performance.timeOrigin + performance.now();
export const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Prints `msg` on stderr with the program's `name` and exits 2. */
export function fail(name, msg) {
  process.stderr.write(`${name}: ${msg}\n`);
  process.exit(2);
}

/**
 * The protocol's flags (--f v or --f=v; unknown flags are an error), with
 * `defaults` for addr / redisUrl and the largest --chunk the system takes.
 */
export function parseArgs(argv, name, { addr = '', redisUrl = '', maxChunk = Infinity } = {}) {
  const opts = { role: '', addr, redisUrl, queue: 'bench', jobs: 0, chunk: 1000, concurrency: 50, rate: 0 };
  const counts = { '--jobs': 'jobs', '--chunk': 'chunk', '--concurrency': 'concurrency', '--rate': 'rate' };
  const strings = { '--role': 'role', '--addr': 'addr', '--redis-url': 'redisUrl', '--queue': 'queue' };
  for (let i = 2; i < argv.length; i++) {
    const eq = argv[i].indexOf('=');
    const flag = eq >= 0 ? argv[i].slice(0, eq) : argv[i];
    let value = eq >= 0 ? argv[i].slice(eq + 1) : undefined;
    if (!(flag in counts) && !(flag in strings)) fail(name, `unknown flag ${argv[i]}`);
    if (value === undefined) {
      if (i + 1 >= argv.length) fail(name, `${flag} needs a value`);
      value = argv[++i];
    }
    if (flag in strings) {
      opts[strings[flag]] = value;
    } else {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0) fail(name, `${flag} wants a number >= 0, got ${value}`);
      opts[counts[flag]] = n;
    }
  }
  if (opts.role !== 'producer' && opts.role !== 'worker') fail(name, '--role producer|worker is required');
  if (!Number.isInteger(opts.jobs) || opts.jobs < 1) fail(name, '--jobs N (N >= 1) is required');
  if (!Number.isInteger(opts.chunk) || opts.chunk < 1 || opts.chunk > maxChunk) {
    fail(name, `--chunk wants an integer 1..${maxChunk}`);
  }
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
    fail(name, '--concurrency wants an integer >= 1');
  }
  return opts;
}

/** The protocol's payload, {"i":..,"t":..,"p":"xx.."}: exactly 64 bytes of JSON. */
export function payloadText(i, t) {
  const head = `{"i":${i},"t":${t},"p":"`;
  const padLen = 64 - head.length - 2;
  if (padLen < 0) throw new Error(`payload of job ${i} does not fit in 64 bytes`);
  return `${head}${'x'.repeat(padLen)}"}`;
}

/** Resolves with the time "go" arrived on stdin; rejects on anything else. */
export function waitGo() {
  return new Promise((resolve, reject) => {
    let buf = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const at = now();
      process.stdin.pause();
      const line = buf.slice(0, nl).trim();
      if (line === 'go') resolve(at);
      else reject(new Error(`expected "go" on stdin, got ${JSON.stringify(line)}`));
    });
    process.stdin.on('end', () => reject(new Error('stdin closed before "go"')));
  });
}

/** Nearest-rank percentiles of the latencies (ms). */
export function summary(lat) {
  const n = lat.length;
  if (n === 0) return { n: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(lat).sort();
  const pct = (p) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))];
  let sum = 0;
  for (const v of sorted) sum += v;
  return { n, mean: sum / n, p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: sorted[n - 1] };
}

/**
 * Open loop: job i is due at startMs + i * 1000 / rate and `send(i, due)`
 * (a promise) is called then, whether or not earlier sends have answered;
 * each timer tick sends every job already due. Resolves with
 * { enqueued, failed } once every send has answered.
 */
export function offerOpenLoop(jobs, rate, startMs, send) {
  return new Promise((resolve) => {
    const interval = 1000 / rate;
    let next = 0;
    let answered = 0;
    let enqueued = 0;
    let failed = 0;
    const settle = () => { if (++answered === jobs) resolve({ enqueued, failed }); };
    const tick = () => {
      const t = now();
      while (next < jobs && startMs + next * interval <= t) {
        send(next, startMs + next * interval).then(() => { enqueued++; settle(); }, (err) => {
          if (failed++ === 0) process.stderr.write(`enqueue: ${err}\n`);
          settle();
        });
        next++;
      }
      if (next < jobs) setTimeout(tick, Math.max(0, startMs + next * interval - now()));
    };
    tick();
  });
}
