import { isPermanentError } from '../../errors/permanent-error.js';
import { isTransientError } from '../../errors/transient-error.js';
import type { Classification } from '../types.js';

/**
 * Errors the application marked itself: a {@link TransientError} is retried (carrying its `retryAfterMs`),
 * a {@link PermanentError} never is. These markings outrank every other built-in rule.
 *
 * @example
 * classifyMarked(new PermanentError('no such user')); // { retryable: false, reason: 'permanent-error' }
 */
export function classifyMarked(error: unknown): Classification | undefined {
  if (isPermanentError(error)) return { retryable: false, reason: 'permanent-error' };
  if (isTransientError(error)) {
    const wait = error.retryAfterMs;
    return wait !== undefined && Number.isFinite(wait) && wait >= 0
      ? { retryable: true, reason: 'transient-error', retryAfterMs: wait }
      : { retryable: true, reason: 'transient-error' };
  }
  return undefined;
}
