import { z } from 'zod';
import { formatDuration } from '../common/duration.js';
import { parseWith } from '../common/validation.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { backoffDelay } from './backoff.js';
import type { BackoffInput } from './define-policy.js';
import { backoffSchema, durationSchema, MAX_ATTEMPTS_LIMIT } from './schema.js';
import type { Backoff } from './types.js';

/** Past this window, holding attempts open is the wrong tool: a dead-letter queue and replay serve better. */
export const LONG_WINDOW_MS = 15 * 60_000;

/**
 * More retries than this for a window of at most {@link LONG_WINDOW_MS} draw a warning: a backoff that
 * needs them (factor 1, a tiny base) keeps hitting a dependency that is down. The default backoff covers
 * 15 minutes in 9.
 *
 * @example
 * planForWindow('15m', { type: 'exponential', baseMs: '2s', factor: 1, maxDelayMs: '10m' }).warnings.length; // 1
 */
export const MANY_RETRIES = 20;

/** The backoff `planForWindow` and `stormguard plan` use when none is given: base 2 s, factor 2, cap 10 m. */
export const DEFAULT_PLAN_BACKOFF: Backoff = Object.freeze({
  type: 'exponential',
  baseMs: 2_000,
  factor: 2,
  maxDelayMs: 600_000,
});

/** Options of {@link planForWindow}. */
export interface PlanOptions {
  /** Scale the base (or fixed delay) so the span lands on the window within 1 %. Default `false`. */
  fit?: boolean;
}

/** A retry schedule that covers a recovery window. */
export interface WindowPlan {
  /** The fewest retries whose un-jittered delays add up to at least the window. */
  retries: number;
  /** `retries + 1`: the value for `maxAttempts` (BullMQ's meaning, executions). */
  maxAttempts: number;
  /** Each retry's un-jittered delay, retry 1 first. */
  delaysMs: number[];
  /** The sum of `delaysMs`: when the last retry starts, measured from the first failure. */
  spanMs: number;
  /** Advice in words: long windows, a first delay that alone covers the window. */
  warnings: string[];
  /** The window asked for. */
  windowMs: number;
  /** The backoff the plan uses: the one given, or with its base scaled when `fit` is set. */
  backoff: Backoff;
}

/**
 * Solves for the attempt ceiling that covers a recovery window instead of guessing it: the smallest retry
 * count whose cumulative un-jittered delays reach `windowMs`. With the default backoff (base 2 s, factor 2,
 * cap 600 s) a 60 s window needs 5 retries, 15 minutes 9, four hours 32.
 *
 * With `fit: true` the retry count stays the same and the base (the delay, for a fixed backoff) is scaled
 * down to the largest whole-millisecond value whose span still covers the window, or the one below it when
 * that lands closer, so the last retry starts within 1 % of the window and a job dead-letters at the window.
 *
 * Windows past 15 minutes carry a warning: quarantine to a dead-letter queue and replay after the incident
 * instead. Throws `InvalidInputError` for a window that is not > 0 or a backoff that cannot cover it within
 * 1000 attempts.
 *
 * @example
 * planForWindow(900_000).retries; // 9
 * planForWindow('4h', { type: 'exponential', baseMs: '2s', maxDelayMs: '10m' }).maxAttempts; // 33
 * planForWindow('15m', undefined, { fit: true }).spanMs; // within 1 % of 900000
 */
export function planForWindow(
  window: number | string,
  backoffInput: Backoff | BackoffInput = DEFAULT_PLAN_BACKOFF,
  options: PlanOptions = {},
): WindowPlan {
  // Parsed as a field so an error names it (`window: 0 is invalid: …`), as every other option's does.
  const { window: windowMs } = parseWith(
    z.object({
      window: durationSchema().refine((ms) => ms > 0, 'must be > 0 (the recovery window to cover)'),
    }),
    { window },
    'recovery window',
  );
  const given = parseWith(backoffSchema, backoffInput, 'backoff') as Backoff;
  const retries = retriesToCover(windowMs, given);
  const backoff = options.fit ? fitBase(windowMs, given, retries) : given;
  const delaysMs = delays(backoff, retries);
  const spanMs = sum(delaysMs);
  const warnings: string[] = [];
  if (windowMs > LONG_WINDOW_MS)
    warnings.push(
      `a ${formatDuration(windowMs)} window holds each job open for ${retries} retries; past 15m a dead-letter queue and replay after the incident serve better than retrying`,
    );
  if (windowMs <= LONG_WINDOW_MS && retries > MANY_RETRIES)
    warnings.push(
      backoff.type === 'exponential' && backoff.factor === 1
        ? `factor 1 keeps every delay at ${formatDuration(backoff.baseMs)}: ${retries} retries, one every ${formatDuration(backoff.baseMs)}, are a steady load on a dependency that is down; use a factor of 2 or more`
        : `${retries} retries (maxAttempts ${retries + 1}) to cover ${formatDuration(windowMs)}: the delays grow too slowly to spare a dependency that is down; raise the factor or the base`,
    );
  if (!options.fit && retries === 1 && (delaysMs[0] ?? 0) > windowMs * 1.1)
    warnings.push(
      `the first delay (${formatDuration(delaysMs[0] ?? 0)}) alone overshoots the ${formatDuration(windowMs)} window; use --fit or a smaller base`,
    );
  return { retries, maxAttempts: retries + 1, delaysMs, spanMs, warnings, windowMs, backoff };
}

function retriesToCover(windowMs: number, backoff: Backoff): number {
  let span = 0;
  for (let retries = 1; retries < MAX_ATTEMPTS_LIMIT; retries++) {
    span += backoffDelay(backoff, retries);
    if (span >= windowMs) return retries;
  }
  throw new InvalidInputError(
    `backoff: delays of this backoff do not cover ${formatDuration(windowMs)} within ${MAX_ATTEMPTS_LIMIT} attempts; raise the base, the delay or the cap`,
  );
}

function fitBase(windowMs: number, backoff: Backoff, retries: number): Backoff {
  const original = backoff.type === 'fixed' ? backoff.delayMs : backoff.baseMs;
  const withBase = (base: number): Backoff =>
    backoff.type === 'fixed' ? { ...backoff, delayMs: base } : { ...backoff, baseMs: base };
  const span = (base: number) => sum(delays(withBase(base), retries));
  // span() grows with the base; find the smallest base whose span still covers the window.
  let low = 1;
  let high = original;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (span(mid) >= windowMs) high = mid;
    else low = mid + 1;
  }
  const below = Math.max(1, low - 1);
  const best = Math.abs(span(below) - windowMs) < Math.abs(span(low) - windowMs) ? below : low;
  return withBase(best);
}

function delays(backoff: Backoff, retries: number): number[] {
  return Array.from({ length: retries }, (_, i) => backoffDelay(backoff, i + 1));
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
