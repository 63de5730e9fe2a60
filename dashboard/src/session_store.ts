// SessionStore: in-memory sessions keyed by a random id (32 bytes, base64url)
// that the browser holds in an HttpOnly, SameSite=Strict cookie. A session
// holds its CSRF token (per session, compared in constant time) and, after a
// login, the bearer token forwarded to the broker; the token never leaves
// the process. Sessions end after `idleMs` without a request, at logout, or
// when the store is full (the least recently used session without a login
// goes first, then the least recently used).
// Thread safety: single-threaded (Node's event loop).
import * as crypto from 'node:crypto';

export interface Session {
  id: string;
  csrf: string;
  /** The admin token after a successful login; undefined before. */
  token?: string;
  lastSeenAt: number;
}

export class SessionStore {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly idleMs = 8 * 3600_000, private readonly maxSessions = 10_000) {}

  /** The live session with this id (refreshed), or undefined. */
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

  /** A new session with fresh random id and CSRF token. */
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

  delete(id: string): void {
    this.sessions.delete(id);
  }

  /** True when `given` is the session's CSRF token (constant time). */
  static csrfMatches(s: Session, given: string | undefined): boolean {
    if (typeof given !== 'string') return false;
    const a = Buffer.from(s.csrf);
    const b = Buffer.from(given);
    return a.length === b.length && crypto.timingSafeEqual(a, b);
  }
}

function randomId(): string {
  return crypto.randomBytes(32).toString('base64url');
}
