import { TransientError } from './transient-error.js';

const brand = Symbol.for('stormguard.BrokenCircuitError');

/**
 * Thrown instead of calling a dependency whose circuit breaker refuses calls: it is open, or half-open
 * with every probe slot taken. Nothing was sent downstream, so the attempt says nothing new about the
 * dependency and must not be recorded as one of its failures. A job that meets it is delayed until
 * `halfOpenAtMs` (waiting `halfOpenInMs`, measured on the breaker's clock) or dead-lettered with reason
 * `breaker-open`, as its policy's `whenBreakerOpen` says.
 *
 * It is a {@link TransientError} (a refusal is worth trying again later), so every classifier treats it as
 * retryable and `decide` reaches its breaker step, which delays the job to the half-open time without
 * charging an attempt. It carries no `retryAfterMs`: a long cool-down must not trip a policy's
 * Retry-After bound.
 *
 * @example
 * try {
 *   await ctx.call('search', () => search.index(doc));
 * } catch (e) {
 *   if (isBrokenCircuitError(e)) console.log(`${e.dependency} is down until ${e.halfOpenAtMs}`);
 * }
 */
export class BrokenCircuitError extends TransientError {
  readonly [brand] = true;
  override name = 'BrokenCircuitError';

  constructor(
    /** The dependency whose breaker refused the call. */
    readonly dependency: string,
    /** When the breaker admits probes again (epoch ms); undefined when half-open and all probe slots are taken. */
    readonly halfOpenAtMs?: number,
    /** The breaker's state when it refused: `open`, or `half-open` with no free probe slot. */
    readonly state: 'open' | 'half-open' = 'open',
    /**
     * How long after the refusal the breaker half-opens, on the breaker's own clock (`halfOpenAtMs` is on
     * that clock too, which may differ from the worker's). `decide` waits this long. Undefined when unknown.
     */
    readonly halfOpenInMs?: number,
  ) {
    super(
      state === 'open'
        ? `circuit for "${dependency}" is open${halfOpenAtMs === undefined ? '' : `; it half-opens at ${new Date(halfOpenAtMs).toISOString()}`}`
        : `circuit for "${dependency}" is half-open and all its probe slots are taken`,
    );
  }
}

/**
 * True for a {@link BrokenCircuitError}, across package copies.
 *
 * @example
 * if (isBrokenCircuitError(error)) log.info(`${error.dependency} refused the call; nothing was sent`);
 */
export function isBrokenCircuitError(error: unknown): error is BrokenCircuitError {
  return typeof error === 'object' && error !== null && brand in error;
}
