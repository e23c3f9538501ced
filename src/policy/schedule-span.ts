import { retryDelayBounds } from './retry-delay.js';
import type { RetryPolicy } from './types.js';

/**
 * The longest the retries of one job can take under its backoff and jitter, ignoring `maxAgeMs`,
 * `Retry-After` and breaker waits: the sum of every retry's largest possible delay (for `decorrelated`,
 * each grown from the previous largest).
 *
 * @example
 * worstCaseSpanMs(presets.email); // 635000: 5 s + 10 s + … + 320 s
 */
export function worstCaseSpanMs(policy: Pick<RetryPolicy, 'backoff' | 'jitter' | 'maxAttempts'>): number {
  let span = 0;
  let previous: number | undefined;
  for (let n = 1; n < policy.maxAttempts; n++) {
    previous = retryDelayBounds(policy, n, previous).maxMs;
    span += previous;
  }
  return span;
}
