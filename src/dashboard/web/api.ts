/**
 * Talking to the console's server: its base path, the CSRF token, JSON in and out. The session is an
 * HttpOnly cookie the browser sends by itself: this code never sees the token.
 */

const body = document.body;
/** The path the console is mounted under (the server writes it into the page). */
export const BASE = body.dataset.base ?? '';
/**
 * Whether the server was started with a token (else every action is refused, so none is offered). With
 * one, this page was only served to a signed-in browser.
 */
export const WRITABLE = body.dataset.writable === 'true';

/**
 * An old address that carried the token (`#token=…`) is cleaned: the console never takes the token from
 * an address (signing in exchanges it for a session cookie), and it should not stay in the history.
 */
export function dropTokenFromAddress(): void {
  if (/^#token=/.test(location.hash)) history.replaceState(null, '', `${location.pathname}#/`);
}

let csrf: Promise<string> | undefined;

/** The CSRF token (and its cookie), fetched once per page. */
function csrfToken(): Promise<string> {
  csrf ??= fetch(`${BASE}/api/session`, { credentials: 'same-origin' })
    .then((r) => r.json() as Promise<{ csrf: string }>)
    .then((s) => s.csrf);
  return csrf;
}

/** An error the server answered with. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function answer<T>(response: Response): Promise<T> {
  const data = (await response.json().catch(() => ({}))) as { error?: string };
  if (response.status === 401)
    throw new ApiError(401, 'Your session has ended: reload the page to sign in again.');
  if (!response.ok) throw new ApiError(response.status, data.error ?? `HTTP ${response.status}`);
  return data as T;
}

/** GET `path` (under `/api`) with a query. */
export async function get<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, v);
  const qs = params.toString();
  return answer<T>(await fetch(`${BASE}/api${path}${qs ? `?${qs}` : ''}`, { credentials: 'same-origin' }));
}

/** POST an action: with the session cookie and the CSRF token. */
export async function act<T>(path: string, payload: unknown = {}): Promise<T> {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'X-Stormguard-CSRF': await csrfToken(),
  };
  return answer<T>(
    await fetch(`${BASE}/api${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(payload),
      credentials: 'same-origin',
    }),
  );
}

/** The URL of the live stream. */
export const EVENTS_URL = `${BASE}/api/events`;

/** Where signing out posts (a form: the session cookie is HttpOnly, so the server clears it). */
export const LOGOUT_URL = `${BASE}/logout`;
