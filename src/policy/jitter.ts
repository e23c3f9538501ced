import { type RandomSource, uniform } from '../common/random.js';
import type { JitterKind } from './types.js';

/** What jitter needs besides the un-jittered delay. */
export interface JitterInput {
  random: RandomSource;
  /** The backoff's first delay; the lower bound of `decorrelated`. */
  baseMs: number;
  /** The backoff's cap; the upper bound of `decorrelated`. */
  capMs: number;
  /** The previous retry's actual delay; `decorrelated` grows from it. Defaults to `baseMs`. */
  previousDelayMs?: number | undefined;
}

/**
 * Spreads an un-jittered delay `delayMs` so a fleet does not retry in lockstep. Returns whole milliseconds.
 *
 * - `none`: `delayMs`.
 * - `full`: uniform in `[0, delayMs]`.
 * - `equal`: `delayMs / 2` plus uniform in `[0, delayMs / 2]`.
 * - `decorrelated`: AWS's "decorrelated jitter", `min(cap, uniform(base, previous × 3))`, where `previous`
 *   is the previous retry's actual delay (the base for the first retry). It ignores the exponential curve
 *   except for its base and cap: each delay grows from the last one actually taken.
 *
 * `none` draws nothing from `random`; the other kinds draw exactly one number.
 *
 * @example
 * const random = seededRandom(1);
 * applyJitter('full', 8_000, { random, baseMs: 2_000, capMs: 600_000 }); // somewhere in 0..8000
 */
export function applyJitter(kind: JitterKind, delayMs: number, input: JitterInput): number {
  switch (kind) {
    case 'none':
      return delayMs;
    case 'full':
      return Math.round(uniform(input.random, 0, delayMs));
    case 'equal':
      return Math.round(delayMs / 2 + uniform(input.random, 0, delayMs / 2));
    case 'decorrelated': {
      const previous = input.previousDelayMs ?? input.baseMs;
      const upper = Math.max(input.baseMs, previous * 3);
      return Math.round(Math.min(input.capMs, uniform(input.random, input.baseMs, upper)));
    }
  }
}

/**
 * The closed range `[min, max]` that {@link applyJitter} can return for these inputs, in whole milliseconds.
 * `decide` uses the lower bound to know the earliest a retry could start.
 *
 * @example
 * jitterBounds('equal', 8_000, { baseMs: 2_000, capMs: 600_000 }); // { minMs: 4000, maxMs: 8000 }
 */
export function jitterBounds(
  kind: JitterKind,
  delayMs: number,
  input: Omit<JitterInput, 'random'>,
): { minMs: number; maxMs: number } {
  switch (kind) {
    case 'none':
      return { minMs: delayMs, maxMs: delayMs };
    case 'full':
      return { minMs: 0, maxMs: delayMs };
    case 'equal':
      return { minMs: Math.floor(delayMs / 2), maxMs: delayMs };
    case 'decorrelated': {
      const previous = input.previousDelayMs ?? input.baseMs;
      const upper = Math.max(input.baseMs, previous * 3);
      return { minMs: Math.min(input.capMs, input.baseMs), maxMs: Math.round(Math.min(input.capMs, upper)) };
    }
  }
}
