import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { cookieOf } from './security.js';

/** The session cookie's name. */
export const SESSION_COOKIE = 'stormguard_session';
/** How long a session lasts from signing in. */
export const SESSION_MS = 12 * 60 * 60_000;

/**
 * Who may read the console. Without a token, anyone the Host check lets through (a read-only console).
 * With one, a request needs a session: the token is given once (the sign-in page posts it) and exchanged
 * for an HttpOnly, SameSite=Strict cookie holding an expiry and a nonce signed with a key derived from the
 * token, never the token itself. Scripts may send `Authorization: Bearer <token>` instead. A session is
 * good on every console that has the same token (several behind one name, or one restarted), and changing
 * the token ends every session.
 */
export class ConsoleAccess {
  readonly #token: Buffer | undefined;
  readonly #key: Buffer | undefined;
  readonly #now: () => number;

  constructor(token: string | undefined, now: () => number) {
    this.#token = token === undefined ? undefined : digest(token);
    this.#key =
      token === undefined
        ? undefined
        : createHmac('sha256', token).update('stormguard console session v1').digest();
    this.#now = now;
  }

  /** Whether reads need a session (a token is configured). */
  get required(): boolean {
    return this.#token !== undefined;
  }

  /** Whether `given` is the console's token (compared in constant time). */
  tokenMatches(given: string): boolean {
    return this.#token !== undefined && timingSafeEqual(digest(given), this.#token);
  }

  /** A new session's cookie value. */
  issue(): string {
    const expires = (this.#now() + SESSION_MS).toString(36);
    const nonce = randomBytes(18).toString('base64url');
    return `${expires}.${nonce}.${this.#sign(`${expires}.${nonce}`)}`;
  }

  /** Whether the request may read: no token configured, a valid session cookie, or the bearer token. */
  allows(req: IncomingMessage): boolean {
    if (!this.required) return true;
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (bearer !== undefined) return this.tokenMatches(bearer);
    return this.#validSession(cookieOf(req, SESSION_COOKIE));
  }

  #validSession(value: string | undefined): boolean {
    const [expires, nonce, signature, extra] = (value ?? '').split('.');
    if (!expires || !nonce || !signature || extra !== undefined) return false;
    const expected = Buffer.from(this.#sign(`${expires}.${nonce}`));
    const got = Buffer.from(signature);
    if (expected.length !== got.length || !timingSafeEqual(expected, got)) return false;
    const expiresAt = Number.parseInt(expires, 36);
    const now = this.#now();
    return Number.isFinite(expiresAt) && expiresAt > now && expiresAt <= now + SESSION_MS;
  }

  #sign(text: string): string {
    if (!this.#key) throw new Error('no token: the console has no sessions');
    return createHmac('sha256', this.#key).update(text).digest('base64url');
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
