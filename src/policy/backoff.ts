import type { Backoff } from './types.js';

/**
 * The un-jittered delay before retry `retry` (1, 2, …), in whole milliseconds.
 *
 * - `fixed`: `delayMs` every time, capped by `maxDelayMs` when given.
 * - `exponential`: `baseMs × factor^(retry − 1)`, always capped by `maxDelayMs`.
 *
 * Overflow-safe: a huge `retry` yields the cap, never `Infinity` or `NaN`.
 *
 * @example
 * const b = { type: 'exponential', baseMs: 2_000, factor: 2, maxDelayMs: 600_000 } as const;
 * backoffDelay(b, 1); // 2000
 * backoffDelay(b, 4); // 16000
 * backoffDelay(b, 1_000); // 600000 (the cap)
 */
export function backoffDelay(backoff: Backoff, retry: number): number {
  if (!Number.isInteger(retry) || retry < 1)
    throw new RangeError(`backoffDelay: retry must be an integer >= 1, got ${retry}`);
  if (backoff.type === 'fixed') return Math.round(Math.min(backoff.delayMs, backoffCap(backoff)));
  const { baseMs, factor, maxDelayMs } = backoff;
  if (baseMs === 0) return 0;
  // factor ** n overflows to Infinity for large n; min() then yields the cap, so no special case is needed
  // beyond the zero base above (0 × Infinity is NaN).
  return Math.round(Math.min(maxDelayMs, baseMs * factor ** (retry - 1)));
}

/**
 * The first retry's un-jittered delay: `delayMs` for fixed (capped), `baseMs` for exponential. It is the
 * lower bound of `decorrelated` jitter.
 *
 * @example
 * backoffBase({ type: 'exponential', baseMs: 2_000, factor: 2, maxDelayMs: 600_000 }); // 2000
 */
export function backoffBase(backoff: Backoff): number {
  return backoff.type === 'fixed' ? Math.min(backoff.delayMs, backoffCap(backoff)) : backoff.baseMs;
}

/**
 * The largest delay the backoff can produce: `maxDelayMs`, or `delayMs` for an uncapped fixed backoff.
 *
 * @example
 * backoffCap({ type: 'fixed', delayMs: 10_000 }); // 10000
 */
export function backoffCap(backoff: Backoff): number {
  return backoff.maxDelayMs ?? (backoff.type === 'fixed' ? backoff.delayMs : Number.POSITIVE_INFINITY);
}
