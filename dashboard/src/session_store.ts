// Sessions: what the browser's HttpOnly, SameSite=Strict cookie stands for.
// A session holds its CSRF token (per session, compared in constant time)
// and, after a login, the bearer token forwarded to the broker. Two kinds,
// one interface (Sessions):
//
// - SessionStore (the default): in this process's memory, keyed by a random
//   id (32 bytes, base64url) that is the cookie. Sessions end after `idleMs`
//   without a request, at logout, or when the store is full (the least
//   recently used session without a login goes first, then the least
//   recently used). One dashboard replica only: another would not know them.
// - SealedSessions (--session_key_file; sealed_sessions.ts): the session is
//   the cookie, encrypted and authenticated with a key every replica shares,
//   so any replica serves any browser and none keeps state.
//
// Either way the token never appears in a page, a log or a URL.
// Thread safety: single-threaded (Node's event loop).
import * as crypto from 'node:crypto';

export interface Session {
  id: string;
  csrf: string;
  /** The admin token after a successful login; undefined before. */
  token?: string;
  lastSeenAt: number;
}

export interface Sessions {
  /** The live session the cookie stands for, or undefined (none, expired, forged). */
  get(cookie: string | undefined): Session | undefined;
  /** A new session with a fresh id and CSRF token. */
  create(token?: string): Session;
  /** Ends the session (its cookie no longer gets it). */
  delete(s: Session): void;
  /** The cookie value for the session as it is now (after a change of its token, say). */
  cookie(s: Session): string;
  /** The answer to this request must carry the session's cookie again (a sealed session refreshed). */
  needsCookie(s: Session): boolean;
}

/** True when `given` is the session's CSRF token (constant time). */
export function csrfMatches(s: Session, given: string | undefined): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(s.csrf);
  const b = Buffer.from(given);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

export function randomId(): string {
  return crypto.randomBytes(32).toString('base64url');
}

export class SessionStore implements Sessions {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly idleMs = 8 * 3600_000, private readonly maxSessions = 10_000) {}

  get(id: string | undefined): Session | undefined {
    if (!id) return undefined;
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (Date.now() - s.lastSeenAt > this.idleMs) {
      this.sessions.delete(id);
      return undefined;
    }
    s.lastSeenAt = Date.now();
    this.sessions.delete(id); // re-insert: Map order is the LRU order
    this.sessions.set(id, s);
    return s;
  }

  create(token?: string): Session {
    if (this.sessions.size >= this.maxSessions) this.evictOne();
    const s: Session = { id: randomId(), csrf: randomId(), token, lastSeenAt: Date.now() };
    this.sessions.set(s.id, s);
    return s;
  }

  /**
   * Drops the least recently used session without a login, else the least
   * recently used one: requests without a cookie (each makes a session)
   * cannot push out the sessions of operators who logged in.
   */
  private evictOne(): void {
    for (const [id, s] of this.sessions) {
      if (!s.token) {
        this.sessions.delete(id);
        return;
      }
    }
    this.sessions.delete(this.sessions.keys().next().value as string);
  }

  delete(s: Session): void {
    this.sessions.delete(s.id);
  }

  cookie(s: Session): string {
    return s.id;
  }

  needsCookie(): boolean {
    return false;
  }
}
