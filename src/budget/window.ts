/**
 * The retry budget's semantics, shared by every budget store. `MemoryBudgetStore` implements them in
 * TypeScript, the Redis scripts in src/redis/lua (includes/budget-window.lua, line for line), and every
 * other store must too: the conformance suite in store.case.ts proves that they agree.
 *
 * ## Settings and what is stored
 *
 * A dependency's state holds, beside its counts, the settings that govern it: `bucketMs`, `buckets`
 * (`windowMs = bucketMs × buckets`), `ratioPpm`, `minAllowance` and `version`. Every decision for the
 * dependency, whoever asks, is computed with the stored (governing) settings, not the caller's:
 * - no state yet (or state that cannot be read): the caller's settings are stored and govern;
 * - the caller's settings equal the governing ones: nothing changes;
 * - the caller's `version` is higher than the governing one (and than a pending one's): the caller's
 *   settings become *pending* (a change in progress; a pending change of the same version is kept: the
 *   first writer of a version wins);
 * - otherwise (same or lower version, other settings): the caller is overruled; the reply carries the
 *   governing settings, so the caller can say so.
 *
 * While a change is pending, both configurations keep their own ring of counts (every success, grant and
 * denial is recorded in both), and a retry is granted only if both have room (the most conservative
 * wins). The pending settings take over once their ring holds a whole window of its own: when its
 * current bucket index is at least `buckets + 1` past the bucket it started in, so the oldest bucket it
 * counts began after it started recording. The old ring is then dropped.
 *
 * ## The window
 *
 * Time is the store's (the Redis server's `TIME`; the memory store's clock), in whole milliseconds.
 * `bucket(t) = floor(t / bucketMs)`. A ring keeps buckets `c − buckets … c`, `c` the newest written
 * (time never goes backwards for a ring: an earlier `now` counts as the start of bucket `c`). At `now`,
 * with `overlap = bucketMs − now mod bucketMs` (or `bucketMs` when `now` is earlier than bucket `c`):
 * - `successes = Σ successes of buckets c−buckets+1 … c + floor(successes(c−buckets) × overlap / bucketMs)`
 * - `denied` likewise, weighted the same way (a report only),
 * - `spent = Σ grants of buckets c−buckets … c`, the oldest bucket counted WHOLE,
 * - `allowance = max(minAllowance, floor(successes × ratioPpm / 1 000 000))`.
 *
 * `count` retries asked for at once are decided one after another: each is granted iff `spent <
 * allowance` (in every ring, while a change is pending), then counted in the current bucket as spent, or
 * else as denied (never as spent).
 *
 * ## The bound
 *
 * Counting the oldest bucket's grants whole means that when a retry is granted at time `t`, every grant
 * in `(t − windowMs, t)` was counted. Hence, in EVERY true window `(a, a + windowMs]`, the retries granted
 * number at most the allowance at the last of them, where that allowance counts the successes of
 * `(t − windowMs − bucketMs, t]` at most (the oldest bucket weighted by its overlap, never more than
 * whole). With no successes: at most `minAllowance` grants in any `windowMs`, exactly, at any sub-bucket
 * edge. The price: under steady retries a grant is remembered for up to `windowMs + bucketMs`, so a
 * steady retry rate may reach `allowance × windowMs / (windowMs + bucketMs)` per window (≥ 90 % of the
 * allowance with 10 buckets). Successes stay weighted, so the allowance itself stays level across bucket
 * edges under steady traffic.
 *
 * ## Successes and their age
 *
 * A batch of successes carries, for each group, `ageMs`: how long before the call they happened (measured
 * by the worker as a duration; never a worker's timestamp). The store stamps them `now − ageMs` with its
 * own clock and adds them to that bucket, or drops them when that bucket is older than the oldest the
 * ring keeps (`c − buckets`). Ages are whole milliseconds ≥ 0.
 *
 * ## Integers
 *
 * Ratios are whole parts per million (a ratio that is not is refused when the budget is built), every
 * product is computed exactly with {@link mulDiv}, and every count saturates at `MAX_COUNT` (2^53 − 1):
 * no count is ever negative, wrapped or rounded.
 *
 * @example
 * const window = budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 });
 * allowanceFor(1_000, window.ratioPpm, window.minAllowance); // 200
 */

/**
 * Ratios are held as integer parts per million: `0.2` is `200_000`.
 *
 * @example
 * Math.round(0.2 * PPM); // 200000
 */
export const PPM = 1_000_000;

/**
 * The largest count a store keeps: counters saturate here (2^53 − 1, the largest exact integer).
 *
 * @example
 * addCount(MAX_COUNT, 5); // MAX_COUNT
 */
export const MAX_COUNT = Number.MAX_SAFE_INTEGER;

/**
 * A dependency's budget settings in the integer form stores work with (and store with the state).
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
  /** The settings' version: a higher one takes over a dependency from a lower one (see above). */
  version: number;
}

/**
 * Counts of one dependency's window, as a store reports them.
 *
 * @example
 * const { allowance, spent } = (await store.read('search')) ?? { allowance: 10, spent: 0 };
 */
export interface WindowCounts {
  allowance: number;
  spent: number;
  denied: number;
  successes: number;
}

/**
 * `count` successes that happened `ageMs` before the store call carrying them.
 *
 * @example
 * const batch: AgedSuccesses[] = [{ ageMs: 180, count: 40 }, { ageMs: 20, count: 3 }];
 */
export interface AgedSuccesses {
  ageMs: number;
  count: number;
}

/**
 * The ratio in whole parts per million, or `undefined` when it is not a whole number of millionths
 * (0.0000015, 1/3): such a ratio cannot be applied exactly and is refused.
 *
 * @example
 * ratioToPpm(0.2); // 200000
 * ratioToPpm(0.0000015); // undefined
 */
export function ratioToPpm(ratio: number): number | undefined {
  const ppm = Math.round(ratio * PPM);
  return ppm / PPM === ratio ? ppm : undefined;
}

/**
 * Builds the integer window from user-facing settings (already validated: the ratio is a whole number
 * of millionths, `windowMs` a whole multiple of `buckets`).
 *
 * @example
 * budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 }).bucketMs; // 6000
 */
export function budgetWindow(settings: {
  ratio: number;
  windowMs: number;
  buckets: number;
  minAllowance: number;
  version?: number;
}): BudgetWindow {
  const ratioPpm = ratioToPpm(settings.ratio);
  if (ratioPpm === undefined)
    throw new RangeError(`ratio ${settings.ratio} is not a whole number of millionths`);
  return {
    ratioPpm,
    windowMs: settings.windowMs,
    buckets: settings.buckets,
    bucketMs: settings.windowMs / settings.buckets,
    minAllowance: settings.minAllowance,
    version: settings.version ?? 0,
  };
}

/**
 * True when two settings are the same configuration (every stored field equal).
 *
 * @example
 * sameSettings(a, { ...a }); // true
 */
export function sameSettings(a: BudgetWindow, b: BudgetWindow): boolean {
  return (
    a.bucketMs === b.bucketMs &&
    a.buckets === b.buckets &&
    a.ratioPpm === b.ratioPpm &&
    a.minAllowance === b.minAllowance &&
    a.version === b.version
  );
}

/**
 * `floor(a / b)` for non-negative integers, exact (no float division rounding up near an integer).
 *
 * @example
 * intDiv(7, 2); // 3
 */
export function intDiv(a: number, b: number): number {
  return (a - (a % b)) / b;
}

/**
 * `floor(a × b / d)`, exact for integers `0 ≤ a ≤ 2^53 − 1`, `0 ≤ b ≤ d`, `d ≤ 9·10^7` (every product it
 * forms stays below 2^53): `a = q·d + r`, so the result is `q·b + floor(r·b / d)`.
 *
 * @example
 * mulDiv(10_000_000, 15, 1_000_000); // 150
 */
export function mulDiv(a: number, b: number, d: number): number {
  const r = a % d;
  return ((a - r) / d) * b + intDiv(r * b, d);
}

/**
 * `a + b`, saturating at {@link MAX_COUNT}.
 *
 * @example
 * addCount(2, 3); // 5
 */
export function addCount(a: number, b: number): number {
  return Math.min(a + b, MAX_COUNT);
}

/**
 * `max(minAllowance, floor(ratio × successes))` with the ratio in parts per million, exactly.
 *
 * @example
 * allowanceFor(1_000, 200_000, 10); // 200
 * allowanceFor(0, 200_000, 10); // 10
 */
export function allowanceFor(successes: number, ratioPpm: number, minAllowance: number): number {
  return Math.max(mulDiv(successes, ratioPpm, PPM), minAllowance);
}

/**
 * The part of the oldest sub-bucket still inside the window, in milliseconds of `bucketMs`. The window is
 * `(now − windowMs, now]`; it covers the current bucket up to `now`, the `buckets − 1` before it whole, and
 * the tail of the bucket before those.
 *
 * @example
 * oldestOverlapMs(6_500, 1_000); // 500
 */
export function oldestOverlapMs(nowMs: number, bucketMs: number): number {
  return bucketMs - (nowMs % bucketMs);
}
