/**
 * The sliding window's arithmetic, shared by every budget store (the Lua scripts in src/redis/lua mirror it
 * line for line; the conformance suite proves they agree). Integers only: a ratio is held in parts per
 * million and every division is an exact integer division, so nothing drifts however long a store runs.
 */

/**
 * Ratios are held as integer parts per million: `0.2` is `200_000`.
 *
 * @example
 * Math.round(0.2 * PPM); // 200000
 */
export const PPM = 1_000_000;

/**
 * A dependency's budget settings in the integer form stores work with.
 *
 * @example
 * const window: BudgetWindow = budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 });
 */
export interface BudgetWindow {
  /** The ratio in parts per million (0.2 → 200 000). 0 means "the floor only" (the degraded fallback). */
  ratioPpm: number;
  windowMs: number;
  /** Sub-buckets per window; `windowMs` is a whole multiple of it. */
  buckets: number;
  /** `windowMs / buckets`. */
  bucketMs: number;
  minAllowance: number;
}

/**
 * Counts of one dependency's window, as a store reports them.
 *
 * @example
 * const { allowance, spent } = (await store.read('search', window)) ?? { allowance: 10, spent: 0 };
 */
export interface WindowCounts {
  allowance: number;
  spent: number;
  denied: number;
  successes: number;
}

/**
 * Converts a ratio in (0, 1] to parts per million, rounding to the nearest part (exact for ratios with up
 * to six decimals; 1/3 becomes 333 333).
 *
 * @example
 * ratioToPpm(0.2); // 200000
 */
export function ratioToPpm(ratio: number): number {
  return Math.round(ratio * PPM);
}

/**
 * Builds the integer window from user-facing settings (already validated).
 *
 * @example
 * budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 }).bucketMs; // 6000
 */
export function budgetWindow(settings: {
  ratio: number;
  windowMs: number;
  buckets: number;
  minAllowance: number;
}): BudgetWindow {
  return {
    ratioPpm: ratioToPpm(settings.ratio),
    windowMs: settings.windowMs,
    buckets: settings.buckets,
    bucketMs: settings.windowMs / settings.buckets,
    minAllowance: settings.minAllowance,
  };
}

/** `floor(a / b)` for non-negative integers, exact (no float division rounding up near an integer). */
export function intDiv(a: number, b: number): number {
  return (a - (a % b)) / b;
}

/**
 * `max(minAllowance, floor(ratio × successes))` with the ratio in parts per million.
 *
 * @example
 * allowanceFor(1_000, 200_000, 10); // 200
 * allowanceFor(0, 200_000, 10); // 10
 */
export function allowanceFor(successes: number, ratioPpm: number, minAllowance: number): number {
  const earned = intDiv(successes * ratioPpm, PPM);
  return Math.max(earned, minAllowance);
}

/**
 * The part of the oldest sub-bucket still inside the window, in milliseconds of `bucketMs`. The window is
 * `(now − windowMs, now]`; it covers the current bucket up to `now`, the `buckets − 1` before it whole, and
 * the tail of the bucket before those. Weighting that bucket by its overlap is what keeps the allowance
 * level across bucket edges (steady traffic sums to exactly one window's worth).
 */
export function oldestOverlapMs(nowMs: number, bucketMs: number): number {
  return bucketMs - (nowMs % bucketMs);
}

/** `count × overlap / bucketMs`, rounded down (successes, denials) or up (spend: the cautious side). */
export function weighted(count: number, overlapMs: number, bucketMs: number, roundUp: boolean): number {
  const scaled = count * overlapMs;
  return roundUp ? intDiv(scaled + bucketMs - 1, bucketMs) : intDiv(scaled, bucketMs);
}
