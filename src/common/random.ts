/**
 * A source of uniform random numbers in [0, 1). Jitter and the simulator take one as a parameter, so a
 * seeded source gives exact, repeatable sequences in tests.
 *
 * @example
 * const random: RandomSource = seededRandom(42);
 * random(); // always the same first value for seed 42
 */
export type RandomSource = () => number;

/**
 * `Math.random`, for production use.
 *
 * @example
 * retryDelay(presets.email, 1, { random: systemRandom }); // 0..5000, different on every call
 */
export const systemRandom: RandomSource = () => Math.random();

/**
 * A small, fast, seeded generator (mulberry32): 32 bits of state, good enough for jitter and simulation,
 * not for cryptography. The same seed always yields the same sequence, on every platform.
 *
 * @example
 * const a = seededRandom(7), b = seededRandom(7);
 * a() === b(); // true
 */
export function seededRandom(seed: number): RandomSource {
  if (!Number.isInteger(seed)) throw new RangeError(`seededRandom: seed must be an integer, got ${seed}`);
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A uniform number in [min, max) drawn from `random`. */
export function uniform(random: RandomSource, min: number, max: number): number {
  return min + (max - min) * random();
}
