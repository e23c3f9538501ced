import type { RandomSource } from '../common/random.js';

/** How a delay is spread: `decorrelated` is AWS's `min(cap, uniform(base, prev × 3))`. */
export type JitterKind = 'none' | 'full' | 'equal' | 'decorrelated';

/** The un-jittered delay curve. Every delay is capped by `maxDelayMs`. */
export type Backoff =
  | { type: 'fixed'; delayMs: number; maxDelayMs?: number }
  | { type: 'exponential'; baseMs: number; factor: number; maxDelayMs: number };

/** What to do when a server's `Retry-After` asks for more than `maxMs`: wait that long anyway, or dead-letter. */
export interface RetryAfterRule {
  maxMs: number;
  onExceeded: 'wait' | 'dead-letter';
}

/**
 * `idempotent`: safe to run twice. `key-required`: a side effect that may only be retried behind an
 * idempotency key (without one it gets exactly one attempt). `non-idempotent`: a side effect with no
 * guard at all; validation allows it only with `maxAttempts: 1`.
 */
export type Idempotency = 'idempotent' | 'key-required' | 'non-idempotent';

/**
 * Families of failures the built-in classifiers recognise as transient. A policy's `retryOn` lists the ones
 * it retries; a recognised failure outside the list is not retried. `TransientError` is always retried
 * (it is an explicit marking) and `PermanentError` never is.
 */
export type RetryFamily = 'network' | 'http-5xx' | 'http-throttle' | 'database';

/** Where a failure came from and whether it is worth another attempt. */
export interface Classification {
  retryable: boolean;
  /** Short, bounded label: `http-503`, `ECONNRESET`, `pg-40001`, `permanent-error`, `unknown`. */
  reason: string;
  /** A server's minimum wait (from `Retry-After` or a TransientError). */
  retryAfterMs?: number;
  /** The built-in family that recognised the error, when one did (policies filter on it with `retryOn`). */
  family?: RetryFamily;
}

/** What a classifier may need besides the error: the time, for `Retry-After` given as an HTTP-date. */
export interface ClassifyContext {
  nowMs: number;
}

/** Returns a classification, or `undefined` when it has no opinion (the next classifier is asked). */
export type Classifier = (error: unknown, context?: ClassifyContext) => Classification | undefined;

/** A complete, validated retry policy. Build one with `definePolicy` (which validates) or take a preset. */
export interface RetryPolicy {
  /** A short name shown in CLI output and metrics. */
  name: string;
  /** At most this many executions (BullMQ's meaning): `maxAttempts: 5` is at most 4 retries. */
  maxAttempts: number;
  /** No retry starts later than this long after the job was created. */
  maxAgeMs?: number;
  backoff: Backoff;
  jitter: JitterKind;
  /** What an error no classifier recognises does. */
  retryUnknown: boolean;
  retryAfter: RetryAfterRule;
  idempotency: Idempotency;
  /** How long an idempotency key is kept; at least `maxAgeMs` (a key that expires first makes a late retry unsafe). */
  idempotencyKeyTtlMs?: number;
  /** When the dependency's breaker is open: delay the job to the half-open time, or dead-letter it. */
  whenBreakerOpen: 'delay' | 'dead-letter';
  /** Extra classifiers asked before the built-in ones. */
  classifiers?: readonly Classifier[];
  /** Which built-in transient families are retried; undefined means all of them. */
  retryOn?: readonly RetryFamily[];
}

/**
 * Every reason a job leaves the retry path for, written once: records, filters, metrics, the CLI and the
 * console all check against this list. Stable strings: they appear in dead-letter records, metrics and the CLI.
 *
 * @example
 * DEAD_LETTER_REASONS.includes('budget-exhausted'); // true
 */
export const DEAD_LETTER_REASONS = [
  'permanent',
  'max-attempts',
  'max-age',
  'budget-exhausted',
  'breaker-open',
  'retry-after-too-long',
  'no-idempotency-key',
  // Dead-lettered by the broker itself (RabbitMQ: rejected, expired, over a length or delivery limit) and
  // imported from its dead-letter queue: the record's detail says which.
  'broker-dead-lettered',
] as const;

/** Why a job left the retry path: one of `DEAD_LETTER_REASONS`. */
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/** What happens after a failed attempt. */
export type Decision =
  | {
      action: 'retry';
      /** Wait this long before the next attempt. */
      delayMs: number;
      /** n of "retry n" when the attempt is charged; the retry that is about to be scheduled. */
      retry: number;
      /** False when the wait does not use up an attempt (breaker open, budget deferral). */
      chargesAttempt: boolean;
      /** Why this delay: the backoff, a server's Retry-After, an open breaker, or a budget deferral. */
      cause: 'backoff' | 'retry-after' | 'breaker-open' | 'budget-deferred';
      classification: Classification;
    }
  | { action: 'dead-letter'; reason: DeadLetterReason; detail: string; classification: Classification }
  | { action: 'fail'; reason: DeadLetterReason; detail: string; classification: Classification };

/** The breaker as `decide` sees it (implemented by the breaker module; optional). */
export interface BreakerGate {
  check(dependency: string): BreakerVerdict | Promise<BreakerVerdict>;
}

export interface BreakerVerdict {
  state: 'closed' | 'open' | 'half-open';
  /** When an open breaker admits probes again (epoch ms, on the breaker's clock: Redis TIME for Redis). */
  halfOpenAtMs?: number;
  /**
   * How long until then, measured on the breaker's own clock when it answered (`halfOpenAtMs` minus the
   * store's now), so a worker whose clock is off still waits the right time. `decide` uses it; only a gate
   * that gives no `halfOpenInMs` has its `halfOpenAtMs` compared with `ctx.nowMs` (which then must be on
   * the same clock, as in the simulator).
   */
  halfOpenInMs?: number;
}

/** The retry budget as `decide` sees it (implemented by `RetryBudget`; optional). */
export interface BudgetGate {
  /** What a denial does: dead-letter now (default) or defer past the window without spending an attempt. */
  readonly onExhausted?: 'dead-letter' | 'defer';
  trySpend(dependency: string): Promise<BudgetVerdict> | BudgetVerdict;
}

export interface BudgetVerdict {
  granted: boolean;
  /** The budget's window; a deferral waits at least this long. */
  windowMs: number;
}

/** Everything `decide` needs; no I/O happens except through the optional gates. */
export interface DecideContext {
  policy: RetryPolicy;
  error: unknown;
  /** Attempts run so far, including the one that just failed (>= 1). */
  attemptsMade: number;
  /** When the job was created (epoch ms), for `maxAgeMs`. */
  createdAtMs: number;
  /** The current time (epoch ms), from an injected clock. */
  nowMs: number;
  random: RandomSource;
  /** The dependency the failure is charged to (budget and breaker key). */
  dependency: string;
  /** The previous retry's delay, for decorrelated jitter. */
  previousDelayMs?: number;
  /** True when the job carries an idempotency key. */
  hasIdempotencyKey?: boolean;
  /** False where nothing can hold dead letters (in-process `retry()`): terminal decisions become `fail`. Default true. */
  hasDeadLetterTarget?: boolean;
  breaker?: BreakerGate;
  budget?: BudgetGate;
}
