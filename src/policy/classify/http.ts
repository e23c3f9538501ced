import type { Classification } from '../types.js';
import { field, numberField } from './fields.js';
import { readRetryAfter } from './retry-after.js';

/**
 * The HTTP status an error carries, from the shapes common clients use: `status` (fetch wrappers, ky,
 * Octokit), `statusCode` (got, undici), `response.status` (axios) or `response.statusCode`. Only integers
 * in 100..599 count, so an unrelated `status: 'failed'` field is ignored.
 *
 * @example
 * httpStatusOf({ response: { status: 503 } }); // 503
 */
export function httpStatusOf(error: unknown): number | undefined {
  const response = field(error, 'response');
  const status = numberField(error, 'status', 'statusCode') ?? numberField(response, 'status', 'statusCode');
  return status !== undefined && Number.isInteger(status) && status >= 100 && status <= 599
    ? status
    : undefined;
}

/**
 * Classifies by HTTP status: 408 and 429 are throttling (`http-throttle`), 5xx (and 599) are server
 * failures (`http-5xx`), both retryable; 2xx, 3xx and every other 4xx are not. Reasons are `http-<status>`.
 * A retryable status carries the server's `Retry-After` (seconds or HTTP-date, read against `nowMs`).
 *
 * @example
 * classifyHttp({ status: 429, headers: { 'retry-after': '30' } }, 0);
 * // { retryable: true, reason: 'http-429', family: 'http-throttle', retryAfterMs: 30000 }
 */
export function classifyHttp(error: unknown, nowMs: number): Classification | undefined {
  const status = httpStatusOf(error);
  if (status === undefined) return undefined;
  const reason = `http-${status}`;
  const family = status === 408 || status === 429 ? 'http-throttle' : status >= 500 ? 'http-5xx' : undefined;
  if (family === undefined) return { retryable: false, reason };
  const retryAfterMs = readRetryAfter(error, nowMs);
  return retryAfterMs === undefined
    ? { retryable: true, reason, family }
    : { retryable: true, reason, family, retryAfterMs };
}
