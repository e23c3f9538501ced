import { field, numberField } from './fields.js';

const SECONDS = /^\d+(?:\.\d+)?$/;

/**
 * Parses a `Retry-After` value into milliseconds from `nowMs`: delta-seconds (`"120"`, or a number of
 * seconds) or an HTTP-date (`"Wed, 21 Oct 2026 07:28:00 GMT"`; a date in the past means 0). Returns
 * undefined for anything else, so a malformed header is ignored rather than trusted.
 *
 * @example
 * parseRetryAfter('120', 0); // 120000
 * parseRetryAfter('Thu, 01 Jan 1970 00:01:00 GMT', 0); // 60000
 */
export function parseRetryAfter(value: unknown, nowMs: number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? toMs(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (SECONDS.test(text)) return toMs(Number(text));
  // An HTTP-date always names a day or month; requiring a letter keeps Date.parse from reading bare numbers.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * The wait a server asked for, read from the error: a `retry-after-ms` or `retry-after` header on
 * `error.headers` or `error.response.headers` (a plain object with any header case, or a `Headers`-like
 * object with `get()`), else the error's own `retryAfterMs` (milliseconds) or `retryAfter` (a header
 * value: seconds or an HTTP-date) field.
 *
 * @example
 * readRetryAfter({ status: 429, headers: { 'Retry-After': '3' } }, Date.now()); // 3000
 */
export function readRetryAfter(error: unknown, nowMs: number): number | undefined {
  for (const headers of [field(error, 'headers'), field(field(error, 'response'), 'headers')]) {
    const ms = parseMsHeader(header(headers, 'retry-after-ms'));
    if (ms !== undefined) return ms;
    const wait = parseRetryAfter(header(headers, 'retry-after'), nowMs);
    if (wait !== undefined) return wait;
  }
  const ms = numberField(error, 'retryAfterMs');
  if (ms !== undefined && ms >= 0) return Math.round(ms);
  return parseRetryAfter(field(error, 'retryAfter'), nowMs);
}

function header(headers: unknown, name: string): unknown {
  if (headers === null || typeof headers !== 'object') return undefined;
  const get = field(headers, 'get');
  if (typeof get === 'function') {
    try {
      return (get as (n: string) => unknown).call(headers, name) ?? undefined;
    } catch {
      return undefined;
    }
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function parseMsHeader(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
  if (typeof value === 'string' && SECONDS.test(value.trim())) return Math.round(Number(value.trim()));
  return undefined;
}

function toMs(seconds: number): number {
  return Math.min(Number.MAX_SAFE_INTEGER, Math.round(seconds * 1_000));
}
