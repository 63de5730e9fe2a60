// The dashboard's command line: --flag=value or --flag value, dashes or
// underscores, each also settable as JOBWIRE_DASHBOARD_<FLAG> in the
// environment (the command line wins), as the broker's flags are.
import * as fs from 'node:fs';
import { MIN_KEY_BYTES } from './sealed_sessions';

export interface Config {
  /** host:port of the broker. */
  broker: string;
  /** host:port this dashboard listens on. */
  listen: string;
  readOnly: boolean;
  requireLogin: boolean;
  /** PEM certificate chain and key of this dashboard's HTTPS listener. */
  tlsCert?: Buffer;
  tlsKey?: Buffer;
  /** PEM CA of the broker's certificate: TLS to the broker. */
  brokerCa?: Buffer;
  /** PEM client certificate chain and key presented to the broker (mutual TLS). */
  brokerCert?: Buffer;
  brokerKey?: Buffer;
  /** Folder with jobwire/v1/*.proto; undefined: the copy in dist/proto. */
  protoDir?: string;
  pollIntervalMs: number;
  /** How often the TLS files are read again (CertReloader); 0: never. */
  reloadIntervalMs: number;
  /** The TLS files given, by flag name (tls_cert, broker_ca, ...), for reloads. */
  files: Record<string, string>;
  /**
   * The origin browsers reach this dashboard at (scheme://host[:port]) when a
   * proxy in front changes the scheme or host (an Ingress ending TLS):
   * POSTs must come from it, and an https origin marks the cookie Secure.
   * Undefined: this listener's own scheme and the request's Host.
   */
  publicOrigin?: string;
  /**
   * The secret of --session_key_file: sessions are sealed into the cookie
   * with it (SealedSessions), so that replicas given the same file share
   * them. Undefined: sessions in this process's memory.
   */
  sessionKey?: Buffer;
}

export const USAGE = `usage: jobwire-dashboard [flags]
  --broker=HOST:PORT       the broker (default 127.0.0.1:50051)
  --listen=HOST:PORT       where the dashboard listens (default 127.0.0.1:8080)
  --read_only              show everything, refuse every action (403)
  --require_login          the broker requires tokens: ask for an admin token
  --tls_cert=FILE          PEM certificate chain: serve HTTPS (with --tls_key)
  --tls_key=FILE           PEM private key of --tls_cert
  --broker_ca=FILE         PEM CA of the broker's certificate: TLS to the broker
  --broker_cert=FILE       PEM client certificate for a broker that requires one
                           (mutual TLS; with --broker_key and --broker_ca)
  --broker_key=FILE        PEM private key of --broker_cert
  --poll_interval_ms=N     how often queue stats are polled (default 2000)
  --reload_interval_ms=N   how often the TLS files are read again, to use rotated
                           ones without a restart (default 10000; 100..86400000,
                           0: never); SIGHUP reloads them at once
  --proto_dir=DIR          folder with jobwire/v1/*.proto (default: the built copy)
  --public_origin=URL      scheme://host[:port] browsers use when a proxy or Ingress
                           in front ends TLS or renames the host (Origin check, Secure cookie)
  --session_key_file=FILE  a secret of at least 32 bytes shared by every replica: sessions
                           are sealed into the cookie with it, so any replica serves any
                           browser (default: sessions in this process's memory, one replica)
Every flag can also be set as JOBWIRE_DASHBOARD_<FLAG> (e.g. JOBWIRE_DASHBOARD_BROKER).`;

const BOOLEAN = new Set(['read_only', 'require_login', 'help']);
const KNOWN = new Set([...BOOLEAN, 'broker', 'listen', 'tls_cert', 'tls_key', 'broker_ca', 'broker_cert', 'broker_key', 'poll_interval_ms', 'reload_interval_ms', 'proto_dir', 'public_origin', 'session_key_file']);

/** Parses argv (without node and the script) and env; throws Error with a message for the user. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): Config | 'help' {
  const flags = new Map<string, string>();
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith('JOBWIRE_DASHBOARD_') && v !== undefined) flags.set(k.slice(18).toLowerCase(), v);
  }
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z_-]+)(?:=(.*))?$/s.exec(argv[i]);
    if (!m) throw new Error(`unexpected argument ${argv[i]}\n${USAGE}`);
    const name = m[1].replace(/-/g, '_');
    if (!KNOWN.has(name)) throw new Error(`unknown flag --${m[1]}\n${USAGE}`);
    let value = m[2];
    if (value === undefined) value = BOOLEAN.has(name) ? 'true' : argv[++i];
    if (value === undefined) throw new Error(`--${m[1]} needs a value`);
    flags.set(name, value);
  }
  for (const name of flags.keys()) if (!KNOWN.has(name)) throw new Error(`unknown setting JOBWIRE_DASHBOARD_${name.toUpperCase()}`);
  const bool = (name: string): boolean => {
    const v = flags.get(name) ?? 'false';
    if (v === 'true' || v === '1') return true;
    if (v === 'false' || v === '0') return false;
    throw new Error(`--${name} takes true or false, not ${v}`);
  };
  if (bool('help')) return 'help';
  const file = (name: string): Buffer | undefined => {
    const p = flags.get(name);
    return p ? fs.readFileSync(p) : undefined;
  };
  const cfg: Config = {
    broker: flags.get('broker') || '127.0.0.1:50051',
    listen: flags.get('listen') || '127.0.0.1:8080',
    readOnly: bool('read_only'),
    requireLogin: bool('require_login'),
    tlsCert: file('tls_cert'),
    tlsKey: file('tls_key'),
    brokerCa: file('broker_ca'),
    brokerCert: file('broker_cert'),
    brokerKey: file('broker_key'),
    protoDir: flags.get('proto_dir') || undefined,
    pollIntervalMs: Number(flags.get('poll_interval_ms') ?? 2000),
    reloadIntervalMs: Number(flags.get('reload_interval_ms') ?? 10000),
    files: Object.fromEntries(
      ['tls_cert', 'tls_key', 'broker_ca', 'broker_cert', 'broker_key'].filter((n) => flags.get(n)).map((n) => [n, flags.get(n)!]),
    ),
    publicOrigin: flags.get('public_origin') || undefined,
    sessionKey: file('session_key_file'),
  };
  if (cfg.publicOrigin !== undefined && !/^https?:\/\/[^/\s?#]+$/.test(cfg.publicOrigin)) {
    throw new Error(`--public_origin ${cfg.publicOrigin} is not an origin: scheme://host[:port], no path (e.g. https://jobwire.example.com)`);
  }
  if (cfg.sessionKey !== undefined && cfg.sessionKey.length < MIN_KEY_BYTES) {
    throw new Error(`--session_key_file holds ${cfg.sessionKey.length} bytes: it needs at least ${MIN_KEY_BYTES} random ones (e.g. openssl rand -base64 48)`);
  }
  if (!cfg.tlsCert !== !cfg.tlsKey) throw new Error('--tls_cert and --tls_key go together');
  if (!cfg.brokerCert !== !cfg.brokerKey) throw new Error('--broker_cert and --broker_key go together');
  if (cfg.brokerCert && !cfg.brokerCa) throw new Error('--broker_cert needs --broker_ca (a client certificate is for TLS to the broker)');
  if (!Number.isInteger(cfg.pollIntervalMs) || cfg.pollIntervalMs < 100) throw new Error('--poll_interval_ms must be an integer >= 100');
  const r = cfg.reloadIntervalMs;
  if (!Number.isInteger(r) || (r !== 0 && (r < 100 || r > 86_400_000))) {
    throw new Error('--reload_interval_ms must be 0 (never) or an integer from 100 to 86400000');
  }
  splitHostPort(cfg.listen);
  return cfg;
}

/** "host:port" or "[v6]:port" → parts; throws on anything else. */
export function splitHostPort(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  if (!m) throw new Error(`${addr} is not HOST:PORT`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port: Number(m[3]) };
}
