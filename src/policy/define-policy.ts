import { parseWith } from '../common/validation.js';
import { policySchema } from './schema.js';
import type { Classifier, JitterKind, RetryFamily, RetryPolicy } from './types.js';

/** A duration: whole milliseconds, or a string like `'500ms'`, `'90s'`, `'15m'`, `'4h'`, `'1h30m'`. */
export type DurationInput = number | string;

/** A backoff as `definePolicy` accepts it: durations may be strings. */
export type BackoffInput =
  | { type: 'fixed'; delayMs: DurationInput; maxDelayMs?: DurationInput }
  | { type: 'exponential'; baseMs: DurationInput; factor?: number; maxDelayMs: DurationInput };

/** What `definePolicy` accepts: a {@link RetryPolicy} with defaults left out and durations as strings. */
export interface PolicyInput {
  /** Default `'policy'`. */
  name?: string;
  /** Required: an integer from 1 to 1000. */
  maxAttempts: number;
  /** Default: none (only `maxAttempts` limits the retries). */
  maxAgeMs?: DurationInput;
  /** Default `{ type: 'exponential', baseMs: 2000, factor: 2, maxDelayMs: 600000 }`. */
  backoff?: BackoffInput;
  /** Default `'full'`. */
  jitter?: JitterKind;
  /** Default `false`: an error no rule recognises is dead-lettered, where someone will look at it. */
  retryUnknown?: boolean;
  /** Default `{ maxMs: '15m', onExceeded: 'dead-letter' }`. */
  retryAfter?: { maxMs?: DurationInput; onExceeded?: 'wait' | 'dead-letter' };
  /** Default `'idempotent'`. */
  idempotency?: 'idempotent' | 'key-required' | 'non-idempotent';
  /** Default: none. When given with `maxAgeMs`, it must be at least `maxAgeMs`. */
  idempotencyKeyTtlMs?: DurationInput;
  /** Default `'delay'`. */
  whenBreakerOpen?: 'delay' | 'dead-letter';
  /** Default: none. */
  classifiers?: readonly Classifier[];
  /** Default: every family. */
  retryOn?: readonly RetryFamily[];
}

/**
 * Builds a validated, frozen {@link RetryPolicy}, filling the defaults listed on {@link PolicyInput}.
 * Throws a `ValidationError` naming each broken field, its value and the rule, for example
 * `invalid retry policy "email": maxAttempts: Infinity is invalid: must be a finite integer from 1 to 1000`.
 *
 * Rules: `maxAttempts` a finite integer 1..1000; delays whole milliseconds >= 0; an exponential base > 0,
 * factor 1..100, cap >= base; a fixed cap >= its delay; `maxAgeMs`, `retryAfter.maxMs` and
 * `idempotencyKeyTtlMs` > 0; `idempotencyKeyTtlMs >= maxAgeMs`; `idempotency: 'non-idempotent'` only with
 * `maxAttempts: 1` (a `'key-required'` policy may declare more: `decide` grants them only to jobs that
 * carry an idempotency key); unknown fields are rejected (a typo must not silently fall back to a default).
 *
 * @example
 * const email = definePolicy({
 *   name: 'email',
 *   maxAttempts: 8,
 *   maxAgeMs: '24h',
 *   backoff: { type: 'exponential', baseMs: '5s', maxDelayMs: '15m' },
 *   jitter: 'full',
 * });
 */
export function definePolicy(input: PolicyInput): RetryPolicy {
  const subject = `retry policy${typeof input?.name === 'string' ? ` "${input.name}"` : ''}`;
  const p = parseWith(policySchema, input, subject);
  const policy: RetryPolicy = {
    name: p.name,
    maxAttempts: p.maxAttempts,
    backoff: Object.freeze(p.backoff),
    jitter: p.jitter,
    retryUnknown: p.retryUnknown,
    retryAfter: Object.freeze(p.retryAfter),
    idempotency: p.idempotency,
    whenBreakerOpen: p.whenBreakerOpen,
  };
  if (p.maxAgeMs !== undefined) policy.maxAgeMs = p.maxAgeMs;
  if (p.idempotencyKeyTtlMs !== undefined) policy.idempotencyKeyTtlMs = p.idempotencyKeyTtlMs;
  if (p.classifiers !== undefined) policy.classifiers = Object.freeze([...p.classifiers]);
  if (p.retryOn !== undefined) policy.retryOn = Object.freeze([...p.retryOn]);
  return Object.freeze(policy);
}
