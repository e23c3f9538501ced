import { z } from 'zod';
import { parseWith } from '../common/validation.js';
import { ValidationError } from '../errors/validation-error.js';

/**
 * How a dependency's circuit breaker trips and recovers. Every field is optional when you build a breaker;
 * the defaults are {@link DEFAULT_BREAKER_OPTIONS}.
 *
 * @example
 * const options: BreakerOptions = {
 *   failureRateThreshold: 0.5, // open when half the calls in the window fail…
 *   windowMs: 60_000,
 *   minimumVolume: 20, // …and the window holds at least 20 calls
 *   consecutiveFailures: 10, // or after 10 failures in a row
 *   coolDownMs: 30_000, // then wait 30 s before probing
 *   halfOpenProbes: 3, // at most 3 probes in flight, fleet-wide
 *   successesToClose: 3, // 3 probe successes close it again
 * };
 */
export interface BreakerOptions {
  /** Failure share of the window's calls at or above which the breaker opens, in (0, 1]. Default 0.5. */
  failureRateThreshold: number;
  /** Length of the sliding window the failure rate is measured over, in ms (100 to 86 400 000). Default 60 000. */
  windowMs: number;
  /** Calls the window must hold before the failure rate can open the breaker (>= 1). Default 20. */
  minimumVolume: number;
  /** Failures in a row that open the breaker whatever the volume (>= 1). Default 10. */
  consecutiveFailures: number;
  /** How long an open breaker refuses every call before it half-opens, in ms (1 to 86 400 000). Default 30 000. */
  coolDownMs: number;
  /** Probes a half-open breaker lets through at once, across the whole fleet (>= 1). Default 1. */
  halfOpenProbes: number;
  /** Probe successes that close a half-open breaker (>= 1). Default 3. */
  successesToClose: number;
}

/**
 * The defaults every breaker starts from: open at a 50 % failure rate over 60 s once 20 calls were seen,
 * or after 10 failures in a row; probe again after 30 s, one probe at a time; close after 3 successes.
 *
 * @example
 * const options = { ...DEFAULT_BREAKER_OPTIONS, coolDownMs: 10_000 };
 */
export const DEFAULT_BREAKER_OPTIONS: Readonly<BreakerOptions> = Object.freeze({
  failureRateThreshold: 0.5,
  windowMs: 60_000,
  minimumVolume: 20,
  consecutiveFailures: 10,
  coolDownMs: 30_000,
  halfOpenProbes: 1,
  successesToClose: 3,
});

/**
 * The sliding window is kept as this many sub-buckets, so it forgets old calls a tenth of a window at a time.
 *
 * @example
 * resolveBreakerOptions({ windowMs: 60_000 }).bucketMs; // 6000 = 60000 / BREAKER_WINDOW_BUCKETS
 */
export const BREAKER_WINDOW_BUCKETS = 10;

/** Largest count and longest duration a breaker option may hold: past them a value is a typo, and the
 * stores' arithmetic (a deadline of now + coolDownMs, a key's time to live) would leave safe integers. */
const MAX_COUNT = 1_000_000_000;
const MAX_BREAKER_MS = 86_400_000;

const count = (min: number, max = MAX_COUNT, unit = '') =>
  z
    .number({ error: 'must be a number' })
    .int(`must be a whole number >= ${min}`)
    .min(min, `must be a whole number >= ${min}`)
    .max(max, `must be at most ${max}${unit}`);
const ms = (min: number) => count(min, MAX_BREAKER_MS, ' (one day)');

const BreakerOptionsSchema = z.object({
  failureRateThreshold: z
    .number({ error: 'must be a number' })
    .gt(0, 'must be in (0, 1]: a share of calls, e.g. 0.5')
    .max(1, 'must be in (0, 1]: a share of calls, e.g. 0.5'),
  windowMs: ms(100),
  minimumVolume: count(1),
  consecutiveFailures: count(1),
  coolDownMs: ms(1),
  halfOpenProbes: count(1),
  successesToClose: count(1),
});

/**
 * Breaker options merged with the defaults and validated, plus what the state machine derives from them.
 * Plain JSON.
 *
 * @example
 * const options: ResolvedBreakerOptions = resolveBreakerOptions({ failureRateThreshold: 0.25 });
 * options.failureRatePpm; // 250000
 */
export interface ResolvedBreakerOptions extends BreakerOptions {
  /** Width of one sub-bucket of the sliding window: `ceil(windowMs / 10)`. */
  bucketMs: number;
  /** `failureRateThreshold` in parts per million, so the trip test is integer arithmetic (no float drift). */
  failureRatePpm: number;
}

/**
 * Merges `input` over {@link DEFAULT_BREAKER_OPTIONS} and validates it. Throws a ValidationError naming
 * every bad field, its value and the rule (`coolDownMs: -5 is invalid: must be a whole number >= 1`).
 *
 * @example
 * const options = resolveBreakerOptions({ consecutiveFailures: 5 });
 * options.coolDownMs; // 30000 (the default)
 */
export function resolveBreakerOptions(
  input: Partial<BreakerOptions> = {},
  subject = 'circuit breaker options',
): ResolvedBreakerOptions {
  // A typo ("coolDown") must not silently fall back to a default.
  const unknown = Object.keys(input).filter((key) => !(key in DEFAULT_BREAKER_OPTIONS));
  if (unknown.length > 0)
    throw new ValidationError(
      subject,
      unknown.map((key) => ({
        path: key,
        value: (input as Record<string, unknown>)[key],
        rule: `not a breaker option; the options are ${Object.keys(DEFAULT_BREAKER_OPTIONS).join(', ')}`,
      })),
    );
  const defined = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
  const options = parseWith(BreakerOptionsSchema, { ...DEFAULT_BREAKER_OPTIONS, ...defined }, subject);
  return {
    ...options,
    bucketMs: Math.ceil(options.windowMs / BREAKER_WINDOW_BUCKETS),
    failureRatePpm: Math.round(options.failureRateThreshold * 1_000_000),
  };
}
