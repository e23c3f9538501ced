import { type Clock, systemClock } from '../common/clock.js';
import { type RandomSource, systemRandom } from '../common/random.js';
import { decide } from './decide.js';
import type { BreakerGate, BudgetGate, Decision, RetryPolicy } from './types.js';

/** What the function passed to {@link retry} receives on each attempt. */
export interface AttemptContext {
  /** 1 for the first execution, 2 for retry 1, … */
  readonly attempt: number;
  /** The caller's signal (never aborted when none was given), to pass on to `fetch` and friends. */
  readonly signal: AbortSignal;
}

/** What `onRetry` is told before each wait. */
export interface RetryEvent {
  readonly error: unknown;
  /** The attempt that just failed (1-based). */
  readonly attempt: number;
  readonly decision: Extract<Decision, { action: 'retry' }>;
}

/** Options of {@link retry}; every one is optional. */
export interface RetryOptions {
  /** Aborting rejects at once with the signal's reason, during an attempt or mid-wait. Default: none. */
  signal?: AbortSignal;
  /** Called before each wait; a throwing hook stops the retries and rejects with its error. */
  onRetry?: (event: RetryEvent) => void | Promise<void>;
  /** Default `systemClock`. Measures `maxAgeMs` from the first attempt and reads `Retry-After` dates. */
  clock?: Clock;
  /** Default `systemRandom`. */
  random?: RandomSource;
  /** Default: a `setTimeout` wait. Tests inject one that advances a `FakeClock`. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** A retry budget asked before each charged retry (see `decide`). Default: none. */
  budget?: BudgetGate;
  /** A breaker consulted before each retry (see `decide`). Default: none. */
  breaker?: BreakerGate;
  /** The dependency budget and breaker are keyed by. Default: the policy's name. */
  dependency?: string;
  /** Set when the call carries an idempotency key (a `key-required` policy retries only then). Default false. */
  hasIdempotencyKey?: boolean;
}

/**
 * Runs `fn` in-process until it succeeds or `decide` gives up, then rethrows the last error. It honours
 * the policy's classification, `maxAttempts`, `maxAgeMs` (measured from the call), the server's
 * `Retry-After`, the optional budget and breaker, and `signal`. Nothing here can hold a dead letter, so
 * giving up means rejecting with the error that ended it (`decide` runs with `hasDeadLetterTarget: false`).
 * A wait that does not charge an attempt (breaker open, budget deferral) does not count towards
 * `maxAttempts`; bound such waits with `maxAgeMs` or a signal. An abort rejects at once with the signal's
 * reason, even while an attempt that ignores the signal is still running.
 *
 * @example
 * const user = await retry(({ signal }) => fetchJson(`/users/${id}`, { signal }), presets.idempotentInternal, {
 *   signal: AbortSignal.timeout(30_000),
 *   onRetry: ({ attempt, decision }) => log.warn({ attempt, delayMs: decision.delayMs }),
 * });
 */
export async function retry<T>(
  fn: (context: AttemptContext) => T | Promise<T>,
  policy: RetryPolicy,
  options: RetryOptions = {},
): Promise<T> {
  const clock = options.clock ?? systemClock;
  const signal = options.signal ?? new AbortController().signal;
  const sleep = options.sleep ?? sleepFor;
  const createdAtMs = clock.now();
  let charged = 0;
  let previousDelayMs: number | undefined;
  for (let attempt = 1; ; attempt++) {
    signal.throwIfAborted();
    try {
      return await untilAborted(
        Promise.resolve().then(() => fn({ attempt, signal })),
        signal,
      );
    } catch (error) {
      signal.throwIfAborted();
      charged++;
      const decision = await decide({
        policy,
        error,
        attemptsMade: charged,
        createdAtMs,
        nowMs: clock.now(),
        random: options.random ?? systemRandom,
        dependency: options.dependency ?? policy.name,
        previousDelayMs,
        hasIdempotencyKey: options.hasIdempotencyKey ?? false,
        hasDeadLetterTarget: false,
        breaker: options.breaker,
        budget: options.budget,
      });
      if (decision.action !== 'retry') throw error;
      if (decision.chargesAttempt) previousDelayMs = decision.delayMs;
      else charged--; // the next execution is free: it only waits out the breaker or the budget
      await options.onRetry?.({ error, attempt, decision });
      await untilAborted(sleep(decision.delayMs, signal), signal);
    }
  }
}

function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const onAbort = () => clearTimeout(timer);
    // A caller's signal often outlives many calls (a shutdown signal): leave no listener behind on it.
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts, whichever comes first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
