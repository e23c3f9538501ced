import type { RandomSource } from '../common/random.js';
import type { BreakerGate, BudgetGate, DecideContext, RetryPolicy } from '../policy/types.js';

/**
 * What a queue adapter or the simulator knows about a job when it asks the policy: the job's attempt
 * state before the attempt in question, its facts, the time, and the gates. {@link decideContext} turns it
 * into the policy's `DecideContext`.
 *
 * @example
 * const facts: DecideFacts = { policy, error, attemptsBefore: 1, previousDelayMs: 400, createdAtMs: 0,
 *   nowMs: 5_000, random: Math.random, dependency: 'search', hasDeadLetterTarget: true };
 */
export interface DecideFacts {
  policy: RetryPolicy;
  /** The error the attempt failed with; `undefined` for an admission, asked before anything ran. */
  error: unknown;
  /** Attempts charged before the attempt in question (`AttemptState.attempts`). */
  attemptsBefore: number;
  /** The last retry's delay (`AttemptState.previousDelayMs`), for decorrelated jitter. */
  previousDelayMs: number | undefined;
  /** When the job was created (epoch ms), for `maxAgeMs`. */
  createdAtMs: number;
  nowMs: number;
  random: RandomSource;
  /** The dependency the attempt is charged to. */
  dependency: string;
  /** Whether the job carries an idempotency key; left out, the policy's default applies. */
  hasIdempotencyKey?: boolean | undefined;
  /** Whether anything can hold the job's dead letter. */
  hasDeadLetterTarget: boolean;
  budget?: BudgetGate | undefined;
  breaker?: BreakerGate | undefined;
}

/**
 * The context `decide` (and admission, which is `decide` before the run) reads, built the one way every
 * worker and the simulator build it: the attempt in question is the one after those already charged.
 * Every field is always present (absent ones `undefined`), so each context has the same shape and the
 * policy's reads of it stay monomorphic on the simulator's hot path. Pure: it reads only its argument.
 *
 * @example
 * const decision = await decide(decideContext({ policy, error, attemptsBefore: state.attempts,
 *   previousDelayMs: state.previousDelayMs, createdAtMs: job.ref.createdAt, nowMs: clock.now(), random,
 *   dependency: 'search', hasDeadLetterTarget: true, budget }));
 */
export function decideContext(facts: DecideFacts): DecideContext {
  return {
    policy: facts.policy,
    error: facts.error,
    attemptsMade: facts.attemptsBefore + 1,
    createdAtMs: facts.createdAtMs,
    nowMs: facts.nowMs,
    random: facts.random,
    dependency: facts.dependency,
    previousDelayMs: facts.previousDelayMs,
    hasIdempotencyKey: facts.hasIdempotencyKey,
    hasDeadLetterTarget: facts.hasDeadLetterTarget,
    budget: facts.budget,
    breaker: facts.breaker,
  };
}
