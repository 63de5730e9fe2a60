// CertReloader: reads a set of PEM files again while the dashboard runs, so
// that a rotated certificate (a Kubernetes Secret's new version) is used
// without a restart, as the broker reloads its own (docs/security.md,
// "Rotating certificates and tokens without a restart").
//
// Every intervalMs (0: never) the files are read; when any content differs
// from what is in use they are read again until two reads agree (a rotation
// caught half-written is not loaded), then handed to `apply`, which checks
// them and puts them to use or throws to refuse them. reload(true) (SIGHUP)
// applies them at once, changed or not. A refused or unreadable set keeps
// what is in use, with one warning per distinct failure; never a key's bytes
// in the log.
// Thread safety: single-threaded (Node's event loop).
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';

/** Logs one JSON line (dashboard_server.ts's Logger). */
type Logger = (fields: Record<string, unknown>) => void;

/** What the files hold, by the name they were given (a flag's name). */
export type PemSet = Record<string, Buffer>;

export class CertReloader {
  private timer: NodeJS.Timeout | undefined;
  private lastFailure = '';

  /**
   * `paths`: name → file; `inUse`: their contents as loaded at startup.
   * `apply` throws an Error whose message says why a set is refused.
   */
  constructor(
    private readonly what: string,
    private readonly paths: Record<string, string>,
    private inUse: PemSet,
    private readonly apply: (pems: PemSet) => void,
    private readonly log: Logger,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.intervalMs <= 0 || Object.keys(this.paths).length === 0) return;
    this.timer = setInterval(() => this.reload(false), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads the files; applies them when they changed, or always when `force`. Answers whether it applied them. */
  reload(force: boolean): boolean {
    let pems: PemSet;
    try {
      pems = this.readSettled();
    } catch (err) {
      this.fail((err as Error).message);
      return false;
    }
    if (!force && Object.keys(pems).every((k) => this.inUse[k]?.equals(pems[k]))) return false;
    try {
      this.apply(pems);
    } catch (err) {
      this.fail((err as Error).message);
      return false;
    }
    this.inUse = pems;
    this.lastFailure = '';
    this.log({ msg: `${this.what} reloaded`, ...describe(pems) });
    return true;
  }

  /** The files, read until two reads in a row agree (at most 5 reads). */
  private readSettled(): PemSet {
    let previous = this.readAll();
    for (let i = 0; i < 4; i++) {
      const next = this.readAll();
      if (Object.keys(next).every((k) => next[k].equals(previous[k]))) return next;
      previous = next;
    }
    throw new Error('the files kept changing while they were read');
  }

  private readAll(): PemSet {
    const out: PemSet = {};
    for (const [name, p] of Object.entries(this.paths)) {
      try {
        out[name] = fs.readFileSync(p);
      } catch (err) {
        throw new Error(`cannot read --${name} ${p}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      }
    }
    return out;
  }

  private fail(reason: string): void {
    if (reason === this.lastFailure) return;
    this.lastFailure = reason;
    this.log({ msg: `${this.what} reload failed, keeping the one in use`, level: 'warning', reason });
  }
}

/** The subject and expiry of the first certificate in the set, for the log. */
function describe(pems: PemSet): Record<string, string> {
  for (const [name, pem] of Object.entries(pems)) {
    if (name.endsWith('_key')) continue;
    try {
      const c = new crypto.X509Certificate(pem);
      return { subject: c.subject.replace(/\n/g, ', '), not_after: c.validTo };
    } catch {
      // not a certificate: none described
    }
  }
  return {};
}

/**
 * Checks a PEM certificate chain and its private key: both parse and the key
 * is the certificate's. Throws an Error naming what is wrong.
 */
export function checkCertAndKey(certName: string, cert: Buffer, keyName: string, key: Buffer): void {
  let x509: crypto.X509Certificate;
  try {
    x509 = new crypto.X509Certificate(cert);
  } catch {
    throw new Error(`--${certName} holds no PEM certificate`);
  }
  let k: crypto.KeyObject;
  try {
    k = crypto.createPrivateKey(key);
  } catch {
    throw new Error(`--${keyName} holds no unencrypted PEM private key`);
  }
  if (!x509.checkPrivateKey(k)) throw new Error(`--${keyName} is not the key of --${certName}`);
}

/** Checks that a file holds a PEM certificate (a CA). */
export function checkCa(name: string, ca: Buffer): void {
  try {
    new crypto.X509Certificate(ca);
  } catch {
    throw new Error(`--${name} holds no PEM certificate`);
  }
}
