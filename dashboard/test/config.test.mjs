// The dashboard's flags (src/config.ts, built into dist/): --reload_interval_ms
// and the TLS file paths kept for reloads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../dist/config.js';

test('--reload_interval_ms: 10000 by default, 0 for never, 100..86400000; anything else refused', () => {
  assert.equal(parseConfig([], {}).reloadIntervalMs, 10000);
  assert.equal(parseConfig(['--reload_interval_ms=0'], {}).reloadIntervalMs, 0);
  assert.equal(parseConfig(['--reload-interval-ms', '250'], {}).reloadIntervalMs, 250);
  assert.equal(parseConfig([], { JOBWIRE_DASHBOARD_RELOAD_INTERVAL_MS: '86400000' }).reloadIntervalMs, 86_400_000);
  for (const bad of ['99', '86400001', '-1', '1.5', 'soon']) {
    assert.throws(() => parseConfig([`--reload_interval_ms=${bad}`], {}), /--reload_interval_ms must be 0 \(never\) or an integer from 100 to 86400000/, bad);
  }
});

test('the TLS files given are kept by flag name for reloads; none given, none kept', () => {
  assert.deepEqual(parseConfig([], {}).files, {});
  const cfg = parseConfig(['--broker_ca=/dev/null'], {});
  assert.deepEqual(cfg.files, { broker_ca: '/dev/null' });
});

test('--session_key_file: the file\'s bytes, at least 32 of them; none given, sessions in memory', async () => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jw-dash-key-'));
  try {
    const good = path.join(dir, 'good');
    fs.writeFileSync(good, 'x'.repeat(32));
    assert.equal(parseConfig([`--session_key_file=${good}`], {}).sessionKey.length, 32);
    assert.equal(parseConfig([], { JOBWIRE_DASHBOARD_SESSION_KEY_FILE: good }).sessionKey.length, 32);
    assert.equal(parseConfig([], {}).sessionKey, undefined);
    const short = path.join(dir, 'short');
    fs.writeFileSync(short, 'x'.repeat(31));
    assert.throws(() => parseConfig([`--session_key_file=${short}`], {}), /--session_key_file holds 31 bytes: it needs at least 32/);
    assert.throws(() => parseConfig([`--session_key_file=${path.join(dir, 'missing')}`], {}), /ENOENT/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
