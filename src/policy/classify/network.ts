import type { Classification } from '../types.js';
import { stringField } from './fields.js';

/**
 * Node system error codes worth another attempt: the connection was refused, reset, timed out or could
 * not be routed, or name resolution failed. `ENOTFOUND` is included on purpose: in service discovery
 * (Kubernetes DNS, Consul) a name briefly vanishes during churn; a genuinely wrong host still stops at
 * `maxAttempts` and lands in the dead-letter queue.
 *
 * @example
 * TRANSIENT_NETWORK_CODES.has('ECONNRESET'); // true
 */
export const TRANSIENT_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
]);

/**
 * undici's (and so Node's `fetch`'s) transport failures that a later attempt can survive: timeouts while
 * connecting or waiting for headers or body, a socket closed under the request, and a response cut short.
 * Every other `UND_ERR_*` code (invalid arguments, aborts, unsupported features, oversized responses) is
 * a programming or configuration error and is not retried.
 *
 * @example
 * TRANSIENT_UNDICI_CODES.has('UND_ERR_SOCKET'); // true
 * TRANSIENT_UNDICI_CODES.has('UND_ERR_INVALID_ARG'); // false: classified UND_ERR_OTHER, not retried
 */
export const TRANSIENT_UNDICI_CODES: ReadonlySet<string> = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
]);

/**
 * Classifies network failures by `error.code` (Node system errors, undici) and by name for the
 * `DOMException`s of `AbortSignal.timeout()` (`TimeoutError`, retryable) and of a caller's abort
 * (`AbortError`, not retryable: someone chose to stop). Reasons are the code itself (a bounded set),
 * `UND_ERR_OTHER` for unlisted undici codes, `timeout` and `aborted`.
 *
 * @example
 * classifyNetwork(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
 * // { retryable: true, reason: 'ECONNRESET', family: 'network' }
 */
export function classifyNetwork(error: unknown): Classification | undefined {
  const code = stringField(error, 'code');
  if (code !== undefined) {
    if (TRANSIENT_NETWORK_CODES.has(code) || TRANSIENT_UNDICI_CODES.has(code))
      return { retryable: true, reason: code, family: 'network' };
    if (code.startsWith('UND_ERR_')) return { retryable: false, reason: 'UND_ERR_OTHER' };
  }
  const name = stringField(error, 'name');
  if (name === 'TimeoutError') return { retryable: true, reason: 'timeout', family: 'network' };
  if (name === 'AbortError') return { retryable: false, reason: 'aborted' };
  return undefined;
}
