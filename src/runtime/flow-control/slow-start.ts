/**
 * Slow start: after a dependency recovers, the rate of attempts admitted to it fleet-wide starts at a floor
 * and doubles at even steps, {@link SLOW_START_DOUBLINGS} times over `slowStartMs` (TCP's slow start,
 * on a clock instead of round trips); from then on it is unlimited, or `maxRatePerSecond` when one is set.
 * Pure: the simulator and every store compute the same ramp.
 */

import type { BudgetSnapshot } from '../../budget/types.js';

/**
 * How many times the admitted rate doubles over `slowStartMs`: 10 doublings take a floor of 1 per second
 * to 1 024 per second, past which a backlog no longer waits on the ramp.
 *
 * @example
 * SLOW_START_DOUBLINGS; // 10
 */
export const SLOW_START_DOUBLINGS = 10;

/**
 * The ramp of one dependency.
 *
 * @example
 * const ramp: SlowStartRamp = { slowStartMs: 30_000, floorPerSecond: 1, maxRatePerSecond: 200 };
 */
export interface SlowStartRamp {
  /** How long the ramp lasts, in ms (0: no ramp, unlimited at once). */
  slowStartMs: number;
  /** Attempts per second admitted fleet-wide right after recovery (> 0). */
  floorPerSecond: number;
  /** A ceiling that holds at all times, ramp or not (first attempts too). Unset: none. */
  maxRatePerSecond?: number | undefined;
}

/**
 * Attempts per second admitted `elapsedMs` after recovery: `floor × 2^(10 × elapsed / slowStartMs)`
 * during the ramp, `Infinity` after it, never above `maxRatePerSecond`. `elapsedMs` undefined means "not
 * recovering" (only the ceiling applies).
 *
 * @example
 * const ramp = { slowStartMs: 10_000, floorPerSecond: 2 };
 * slowStartRate(0, ramp); // 2
 * slowStartRate(1_000, ramp); // 4
 * slowStartRate(10_000, ramp); // Infinity
 * slowStartRate(undefined, { ...ramp, maxRatePerSecond: 50 }); // 50
 */
export function slowStartRate(elapsedMs: number | undefined, ramp: SlowStartRamp): number {
  const ceiling = ramp.maxRatePerSecond ?? Number.POSITIVE_INFINITY;
  if (elapsedMs === undefined || elapsedMs >= ramp.slowStartMs) return ceiling;
  const step = (SLOW_START_DOUBLINGS * Math.max(0, elapsedMs)) / ramp.slowStartMs;
  return Math.min(ceiling, ramp.floorPerSecond * 2 ** step);
}

/**
 * How many attempts the ramp admits between `fromMs` and `toMs` after recovery (the integral of
 * {@link slowStartRate}, plus the one a pacer may admit at the very start): an upper bound for the calls a
 * recovering dependency receives in that interval. Infinity once the interval reaches past the ramp with
 * no ceiling.
 *
 * @example
 * slowStartAllowance(0, 1_000, { slowStartMs: 10_000, floorPerSecond: 2 }); // ≈ 3.89 (2.89 + 1)
 */
export function slowStartAllowance(fromMs: number, toMs: number, ramp: SlowStartRamp): number {
  const from = Math.max(0, fromMs);
  const to = Math.max(from, toMs);
  const ceiling = ramp.maxRatePerSecond ?? Number.POSITIVE_INFINITY;
  const rampEnd = Math.min(to, ramp.slowStartMs);
  let total = 1;
  if (from < rampEnd) {
    // ∫ floor·2^(k t / S) dt over seconds, capped by the ceiling where the ramp passes it.
    const k = SLOW_START_DOUBLINGS / ramp.slowStartMs;
    const capAt = Number.isFinite(ceiling)
      ? Math.max(from, Math.min(rampEnd, Math.log2(ceiling / ramp.floorPerSecond) / k))
      : rampEnd;
    const grow = (t: number) => (ramp.floorPerSecond * 2 ** (k * t)) / (k * Math.LN2 * 1_000);
    total += grow(capAt) - grow(from);
    if (capAt < rampEnd) total += (ceiling * (rampEnd - capAt)) / 1_000;
  }
  if (to > Math.max(from, ramp.slowStartMs))
    total += (ceiling * (to - Math.max(from, ramp.slowStartMs))) / 1_000;
  return total;
}

/**
 * Whether a dependency's budget has stopped denying, as slow start reads it: no denial left in its window.
 * A ramp starts then, as after a breaker recovery. Stricter than "the allowance has room again" (replay's
 * `isBudgetDenying`): a budget that keeps denying now and then, with gaps, starts one ramp once it is
 * quiet, not one at every gap.
 *
 * @example
 * budgetStoppedDenying({ denied: 0 }); // true
 * budgetStoppedDenying({ denied: 3 }); // false: denials in the window
 */
export function budgetStoppedDenying(snapshot: Pick<BudgetSnapshot, 'denied'>): boolean {
  return snapshot.denied === 0;
}
