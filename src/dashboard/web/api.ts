/** Talking to the console's server: its base path, the token, the CSRF token, JSON in and out. */

const body = document.body;
/** The path the console is mounted under (the server writes it into the page). */
export const BASE = body.dataset.base ?? '';
/** Whether the server was started with a token (else every action is refused, so none is offered). */
export const WRITABLE = body.dataset.writable === 'true';

const TOKEN_KEY = 'stormguard-console-token';

/** A token handed over in the address (`#token=…`, as the CLI prints it) is kept for this tab only. */
export function takeTokenFromAddress(): void {
  const match = /^#token=([^&]+)/.exec(location.hash);
  if (!match?.[1]) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
  history.replaceState(null, '', `${location.pathname}#/`);
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
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

/** POST an action: with the token and the CSRF token. */
export async function act<T>(path: string, payload: unknown = {}): Promise<T> {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'X-Stormguard-CSRF': await csrfToken(),
  };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
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
