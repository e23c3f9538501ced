import { describe, expect, it } from 'vitest';
import { isValidationError } from '../errors/validation-error.js';
import { definePolicy, type PolicyInput } from './define-policy.js';

function rejection(input: unknown): string {
  try {
    definePolicy(input as PolicyInput);
  } catch (error) {
    expect(isValidationError(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected definePolicy to reject');
}

describe('definePolicy', () => {
  it('fills the documented defaults', () => {
    expect(definePolicy({ maxAttempts: 5 })).toEqual({
      name: 'policy',
      maxAttempts: 5,
      backoff: { type: 'exponential', baseMs: 2_000, factor: 2, maxDelayMs: 600_000 },
      jitter: 'full',
      retryUnknown: false,
      retryAfter: { maxMs: 900_000, onExceeded: 'dead-letter' },
      idempotency: 'idempotent',
      whenBreakerOpen: 'delay',
    });
  });

  it('reads durations written as strings and returns a frozen policy', () => {
    const p = definePolicy({
      name: 'email',
      maxAttempts: 8,
      maxAgeMs: '24h',
      backoff: { type: 'exponential', baseMs: '5s', maxDelayMs: '15m' },
      retryAfter: { maxMs: '1h', onExceeded: 'wait' },
      idempotencyKeyTtlMs: '2d',
    });
    expect(p.maxAgeMs).toBe(86_400_000);
    expect(p.backoff).toEqual({ type: 'exponential', baseMs: 5_000, factor: 2, maxDelayMs: 900_000 });
    expect(p.retryAfter).toEqual({ maxMs: 3_600_000, onExceeded: 'wait' });
    expect(p.idempotencyKeyTtlMs).toBe(172_800_000);
    expect(Object.isFrozen(p)).toBe(true);
    expect(Object.isFrozen(p.backoff)).toBe(true);
  });

  it('accepts an already built policy unchanged', () => {
    const p = definePolicy({ maxAttempts: 3, maxAgeMs: 60_000, jitter: 'equal' });
    expect(definePolicy(p)).toEqual(p);
  });

  it('allows retries on a key-required policy (decide grants them only to jobs with a key)', () => {
    expect(definePolicy({ maxAttempts: 4, idempotency: 'key-required' }).maxAttempts).toBe(4);
    expect(definePolicy({ maxAttempts: 1, idempotency: 'non-idempotent' }).maxAttempts).toBe(1);
  });

  it.each<[string, unknown, RegExp]>([
    ['missing attempts', {}, /maxAttempts: undefined is invalid: must be a finite integer from 1 to 1000/],
    ['unlimited attempts', { maxAttempts: Number.POSITIVE_INFINITY }, /maxAttempts: Infinity is invalid/],
    ['non-integer attempts', { maxAttempts: 2.5 }, /maxAttempts: 2.5 is invalid: must be an integer/],
    ['zero attempts', { maxAttempts: 0 }, /maxAttempts: 0 is invalid: must be >= 1/],
    ['absurd attempts', { maxAttempts: 5_000 }, /maxAttempts: 5000 is invalid: must be <= 1000/],
    [
      'negative delay',
      { maxAttempts: 2, backoff: { type: 'fixed', delayMs: -5 } },
      /backoff.delayMs: -5 is invalid: must be >= 0/,
    ],
    [
      'a delay no whole number of ms can hold',
      { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 1e300 } },
      /backoff.delayMs: 1e\+300 is invalid: must be at most 365d \(one year\)/,
    ],
    [
      'a max age past a year',
      { maxAttempts: 2, maxAgeMs: '366d' },
      /maxAgeMs: "366d" is invalid: must be at most 365d/,
    ],
    [
      'a cap of a thousand years',
      { maxAttempts: 2, backoff: { type: 'exponential', baseMs: '1s', maxDelayMs: '365000d' } },
      /backoff.maxDelayMs: "365000d" is invalid: must be at most 365d/,
    ],
    [
      'unparseable duration',
      { maxAttempts: 2, backoff: { type: 'fixed', delayMs: '5 sec' } },
      /backoff.delayMs: "5 sec" is invalid: must be a whole number of milliseconds >= 0 or a duration/,
    ],
    [
      'fractional milliseconds',
      { maxAttempts: 2, maxAgeMs: 1.5 },
      /maxAgeMs: 1.5 is invalid: must be a whole number/,
    ],
    [
      'zero base',
      { maxAttempts: 2, backoff: { type: 'exponential', baseMs: 0, maxDelayMs: 10 } },
      /backoff.baseMs: 0 is invalid: must be > 0/,
    ],
    [
      'factor below 1',
      { maxAttempts: 2, backoff: { type: 'exponential', baseMs: 100, factor: 0.5, maxDelayMs: 1_000 } },
      /backoff.factor: 0.5 is invalid: must be >= 1/,
    ],
    [
      'cap below base',
      { maxAttempts: 2, backoff: { type: 'exponential', baseMs: '10s', maxDelayMs: '5s' } },
      /backoff.maxDelayMs: "5s" is invalid: must be >= backoff.baseMs \(10000\)/,
    ],
    [
      'fixed cap below its delay',
      { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 1_000, maxDelayMs: 500 } },
      /backoff.maxDelayMs: 500 is invalid: must be >= backoff.delayMs/,
    ],
    [
      'unknown backoff type',
      { maxAttempts: 2, backoff: { type: 'linear' } },
      /backoff.type: "linear" is invalid: must be { type: 'fixed'/,
    ],
    [
      'unknown jitter',
      { maxAttempts: 2, jitter: 'random' },
      /jitter: "random" is invalid: must be one of none, full, equal, decorrelated/,
    ],
    ['zero max age', { maxAttempts: 2, maxAgeMs: 0 }, /maxAgeMs: 0 is invalid: must be > 0/],
    [
      'Retry-After bound of zero',
      { maxAttempts: 2, retryAfter: { maxMs: 0 } },
      /retryAfter.maxMs: 0 is invalid: must be > 0/,
    ],
    [
      'unknown Retry-After rule',
      { maxAttempts: 2, retryAfter: { onExceeded: 'ignore' } },
      /retryAfter.onExceeded: "ignore" is invalid: must be one of wait, dead-letter/,
    ],
    [
      'non-idempotent with retries',
      { maxAttempts: 3, idempotency: 'non-idempotent' },
      /maxAttempts: 3 is invalid: must be 1 for a non-idempotent job/,
    ],
    [
      'key TTL shorter than max age',
      { maxAttempts: 3, maxAgeMs: '1h', idempotencyKeyTtlMs: '30m' },
      /idempotencyKeyTtlMs: "30m" is invalid: must be >= maxAgeMs \(3600000\)/,
    ],
    ['a typo in a field name', { maxAttempts: 3, maxAge: '1h' }, /Unrecognized key.*maxAge/i],
    [
      'a classifier that is not a function',
      { maxAttempts: 3, classifiers: ['http'] },
      /classifiers.0: "http" is invalid: must be a function/,
    ],
    [
      'an unknown retry family',
      { maxAttempts: 3, retryOn: ['dns'] },
      /retryOn.0: "dns" is invalid: must be one of network/,
    ],
    ['an empty name', { maxAttempts: 3, name: '' }, /name: "" is invalid: must be a non-empty string/],
  ])('rejects %s', (_, input, message) => {
    expect(rejection(input)).toMatch(message);
  });

  it('names the policy and reports every broken rule at once', () => {
    const message = rejection({ name: 'payment', maxAttempts: 0, jitter: 'lots' });
    expect(message).toMatch(/^invalid retry policy "payment": /);
    expect(message).toContain('maxAttempts');
    expect(message).toContain('jitter');
  });
});
