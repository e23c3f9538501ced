import type { LimitRefusal } from './events.js';

const brand = Symbol.for('stormguard.LimitHeldError');

/**
 * Thrown by `ctx.call` when a dependency's limit kept the call waiting longer than `maxPaceWaitMs`: the
 * call did not start. The worker recognises it (also as the `cause` of an error that wraps it) and holds
 * the job without using an attempt, never dead-letters it: the queue is paused (a single-dependency queue)
 * or the job delayed by `retryInMs`. Calls the job made before ran: guard them with the idempotency guard's
 * `once` (or make them idempotent), since the job runs again from the start. Let it propagate: a processor
 * that swallows it carries on without the call.
 *
 * @example
 * try { await ctx.call('openai', () => complete(prompt)) } catch (e) { if (isLimitHeldError(e)) throw e }
 */
export class LimitHeldError extends Error {
  readonly [brand] = true;
  override name = 'LimitHeldError';

  constructor(
    /** The dependency whose limit held the call. */
    readonly dependency: string,
    /** What refused the slot first. */
    readonly by: LimitRefusal,
    /** The store's hint of when asking again may succeed, in ms (0: unknown). */
    readonly retryInMs: number,
  ) {
    super(
      `the ${dependency} limit held the call (${by}): the job is held without using an attempt and runs again later`,
    );
  }
}

/**
 * True for a {@link LimitHeldError}, from any copy of stormguard.
 *
 * @example
 * if (isLimitHeldError(error)) throw error; // let the worker hold the job
 */
export function isLimitHeldError(error: unknown): error is LimitHeldError {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[brand] === true;
}

/**
 * The {@link LimitHeldError} behind `error`: itself, or the `cause` of an error that wraps it (a few levels).
 *
 * @example
 * limitHeldOf(new Error('step failed', { cause: held })); // held
 */
export function limitHeldOf(error: unknown): LimitHeldError | undefined {
  let current = error;
  for (let depth = 0; depth < 8; depth++) {
    if (isLimitHeldError(current)) return current;
    if (typeof current !== 'object' || current === null || !('cause' in current)) return undefined;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
