import type { RandomSource } from '../common/random.js';
import { backoffBase, backoffCap, backoffDelay } from './backoff.js';
import { applyJitter, jitterBounds } from './jitter.js';
import type { RetryPolicy } from './types.js';

/** What {@link retryDelay} needs besides the policy and the retry number. */
export interface RetryDelayOptions {
  random: RandomSource;
  /** The previous retry's actual delay, for `decorrelated` jitter. Defaults to the backoff's base. */
  previousDelayMs?: number | undefined;
}

/**
 * The delay before retry `retry` (1, 2, …) under a policy: its backoff, then its jitter, never above the
 * backoff's cap. Whole milliseconds. Pure: the random source is a parameter.
 *
 * @example
 * const policy = definePolicy({ maxAttempts: 5, backoff: { type: 'exponential', baseMs: '2s', maxDelayMs: '10m' } });
 * retryDelay(policy, 3, { random: seededRandom(42) }); // in 0..8000 under the default full jitter
 */
export function retryDelay(
  policy: Pick<RetryPolicy, 'backoff' | 'jitter'>,
  retry: number,
  options: RetryDelayOptions,
): number {
  const delay = backoffDelay(policy.backoff, retry);
  const capMs = backoffCap(policy.backoff);
  const jittered = applyJitter(policy.jitter, delay, {
    random: options.random,
    baseMs: backoffBase(policy.backoff),
    capMs,
    previousDelayMs: options.previousDelayMs,
  });
  return Math.min(jittered, capMs);
}

/**
 * The range `[minMs, maxMs]` {@link retryDelay} can return for retry `retry`.
 *
 * @example
 * retryDelayBounds(policy, 3); // { minMs: 0, maxMs: 8000 } for exponential 2 s with full jitter
 */
export function retryDelayBounds(
  policy: Pick<RetryPolicy, 'backoff' | 'jitter'>,
  retry: number,
  previousDelayMs?: number,
): { minMs: number; maxMs: number } {
  const capMs = backoffCap(policy.backoff);
  const bounds = jitterBounds(policy.jitter, backoffDelay(policy.backoff, retry), {
    baseMs: backoffBase(policy.backoff),
    capMs,
    previousDelayMs,
  });
  return { minMs: Math.min(bounds.minMs, capMs), maxMs: Math.min(bounds.maxMs, capMs) };
}
