import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * The console's Content-Security-Policy: its own scripts and styles only (no inline code, no CDN), no
 * frames, no plugins, requests to its own origin only.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Headers on every response: the policy, no sniffing, no framing, no referrer leaks to other origins.
 * `same-origin` rather than `no-referrer`: under `no-referrer` a browser sends `Origin: null` on the
 * console's own form posts (sign in, sign out), which the console refuses as any opaque origin.
 */
export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** The CSRF cookie's name. */
export const CSRF_COOKIE = 'stormguard_csrf';
/** The header an action carries the CSRF token in (a cross-site form cannot set a header). */
export const CSRF_HEADER = 'x-stormguard-csrf';

/** Why a request is refused, or undefined when it may go on. */
export type Refusal = { status: 400 | 401 | 403; message: string } | undefined;

/**
 * Refuses a request a page on another site made: an `Origin` that is `null` (a sandboxed frame, a
 * `data:` page), not a URL, or not the host the request was sent to. A browser sends `Origin` on every
 * cross-origin request and every POST, so the console's own page always passes.
 */
export function originRefusal(req: IncomingMessage, host: string | undefined): Refusal {
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  if (origin === 'null')
    return {
      status: 403,
      message: 'request from an opaque origin refused (Origin: null): open the console itself',
    };
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return {
      status: 400,
      message: `the Origin header is not an origin (${JSON.stringify(origin.slice(0, 100))})`,
    };
  }
  if (host === undefined || originHost !== host.toLowerCase())
    return {
      status: 403,
      message: `cross-origin request refused (Origin: ${origin.slice(0, 100)}, Host: ${String(host).slice(0, 100)}): behind a proxy, pass the name the browser opened on (X-Forwarded-Host, or the Host itself)`,
    };
  return undefined;
}

/** Refuses an API call a page of another origin made (`Sec-Fetch-Site` other than same-origin). */
export function fetchSiteRefusal(req: IncomingMessage): Refusal {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none')
    return { status: 403, message: `cross-site request refused (Sec-Fetch-Site: ${String(site)})` };
  return undefined;
}

/**
 * Checks the CSRF token of actions. Without a configured token every action is refused: the console is
 * read-only. Who may act at all is the session's business (`ConsoleAccess`), checked before this. The
 * CSRF token is a random nonce signed with a per-process secret, handed out by `GET api/session` and in a
 * SameSite=Strict cookie; an action must send it back in a header that matches the cookie (a page on
 * another site can neither read it nor set the header).
 */
export class ActionGuard {
  readonly #secret = randomBytes(32);
  readonly #writable: boolean;

  constructor(writable: boolean) {
    this.#writable = writable;
  }

  get writable(): boolean {
    return this.#writable;
  }

  /** A fresh CSRF token. */
  issueCsrf(): string {
    const nonce = randomBytes(16).toString('base64url');
    return `${nonce}.${this.#sign(nonce)}`;
  }

  check(req: IncomingMessage): Refusal {
    if (!this.#writable)
      return {
        status: 403,
        message:
          'this console is read-only: start it with a token (STORMGUARD_DASHBOARD_TOKEN or --token-file) to act',
      };
    const refusal = fetchSiteRefusal(req);
    if (refusal) return refusal;
    const header = req.headers[CSRF_HEADER];
    const cookie = cookieOf(req, CSRF_COOKIE);
    if (typeof header !== 'string' || !cookie || header !== cookie || !this.#valid(header))
      return { status: 403, message: 'CSRF check failed: reload the console and try again' };
    return undefined;
  }

  #valid(csrf: string): boolean {
    const [nonce, signature] = csrf.split('.');
    if (!nonce || !signature) return false;
    const expected = Buffer.from(this.#sign(nonce));
    const got = Buffer.from(signature);
    return expected.length === got.length && timingSafeEqual(expected, got);
  }

  #sign(nonce: string): string {
    return createHmac('sha256', this.#secret).update(nonce).digest('base64url');
  }
}

/** One cookie's value from the request, or undefined. */
export function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      const value = part.slice(at + 1).trim();
      try {
        return decodeURIComponent(value);
      } catch {
        return value; // malformed percent-encoding: compared as it is, so it matches nothing
      }
    }
  }
  return undefined;
}
