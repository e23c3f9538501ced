import type { RetryPolicy } from './types.js';

/**
 * The policy as `decide` uses it for a dependency with fleet-wide limits: a Retry-After longer than
 * `retryAfter.maxMs` is waited for whatever `onExceeded` says, because the limits hold the whole dependency
 * (up to that cap, then it is marked down) and the job is held with it, never dead-lettered for the
 * answer's length. A policy that already waits is returned as it is.
 *
 * @example
 * const metered = definePolicy({ maxAttempts: 4, retryAfter: { maxMs: '1m', onExceeded: 'dead-letter' } });
 * withRetryAfterWaited(metered).retryAfter; // { maxMs: 60000, onExceeded: 'wait' }
 */
export function withRetryAfterWaited(policy: RetryPolicy): RetryPolicy {
  if (policy.retryAfter.onExceeded === 'wait') return policy;
  return Object.freeze({
    ...policy,
    retryAfter: Object.freeze({ ...policy.retryAfter, onExceeded: 'wait' }),
  });
}
