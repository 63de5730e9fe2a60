// SealedSessions: sessions kept in the cookie itself, sealed with AES-256-GCM
// under a key derived (SHA-256) from the --session_key_file that every
// dashboard replica is given, so that any replica serves any browser and
// none keeps session state. The cookie is "s1." + base64url(12-byte IV,
// ciphertext, 16-byte tag) of the session's JSON; a cookie sealed with
// another key, altered or cut is no session.
//
// Expiry, checked on every request: `idleMs` after the session was last
// refreshed (the cookie is sealed again, with the time, on an answer at most
// once per `refreshMs`), and `maxAgeMs` after its creation, whatever its
// use. What a stateless session cannot do: a logout replaces the browser's
// cookie, but a copy of the old one taken before stays valid until one of
// those limits (docs/dashboard.md says so).
// Thread safety: single-threaded (Node's event loop).
import * as crypto from 'node:crypto';
import { randomId, Session, Sessions } from './session_store';

const PREFIX = 's1.';
const AAD = Buffer.from('jobwire-dashboard session v1');

/** The sealed JSON: id, csrf, token, created, last refreshed. */
interface Sealed {
  d: string;
  c: string;
  t?: string;
  i: number;
  s: number;
}

/** A session that also knows when it was created and whether its cookie must be sent again. */
interface SealedSession extends Session {
  createdAt: number;
  refresh: boolean;
}

export const MIN_KEY_BYTES = 32;

export class SealedSessions implements Sessions {
  private readonly key: Buffer;

  /** `secret`: the key file's bytes, at least MIN_KEY_BYTES of them (checked by parseConfig). */
  constructor(
    secret: Buffer,
    private readonly idleMs = 8 * 3600_000,
    private readonly maxAgeMs = 24 * 3600_000,
    private readonly refreshMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {
    this.key = crypto.createHash('sha256').update(secret).digest();
  }

  get(cookie: string | undefined): Session | undefined {
    if (!cookie || !cookie.startsWith(PREFIX)) return undefined;
    const raw = Buffer.from(cookie.slice(PREFIX.length), 'base64url');
    if (raw.length < 12 + 16 + 2) return undefined;
    let sealed: Sealed;
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
      decipher.setAAD(AAD);
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      const plain = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
      sealed = JSON.parse(plain.toString('utf8')) as Sealed;
    } catch {
      return undefined;
    }
    const now = this.now();
    if (typeof sealed.i !== 'number' || typeof sealed.s !== 'number' || typeof sealed.c !== 'string') return undefined;
    if (now - sealed.s > this.idleMs || now - sealed.i > this.maxAgeMs) return undefined;
    const s: SealedSession = { id: sealed.d, csrf: sealed.c, token: sealed.t, createdAt: sealed.i, lastSeenAt: sealed.s, refresh: false };
    if (now - sealed.s >= this.refreshMs) {
      s.lastSeenAt = now;
      s.refresh = true;
    }
    return s;
  }

  create(token?: string): Session {
    const now = this.now();
    const s: SealedSession = { id: randomId(), csrf: randomId(), token, createdAt: now, lastSeenAt: now, refresh: false };
    return s;
  }

  /** Nothing to forget: the server replaces the browser's cookie (the class comment says what that leaves). */
  delete(): void {}

  cookie(session: Session): string {
    const s = session as SealedSession;
    const sealed: Sealed = { d: s.id, c: s.csrf, i: s.createdAt, s: s.lastSeenAt };
    if (s.token !== undefined) sealed.t = s.token;
    const iv = crypto.randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(AAD);
    const body = Buffer.concat([cipher.update(JSON.stringify(sealed), 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  needsCookie(session: Session): boolean {
    return (session as SealedSession).refresh;
  }
}
