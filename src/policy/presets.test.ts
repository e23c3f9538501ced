import { describe, expect, it } from 'vitest';
import { TransientError } from '../errors/transient-error.js';
import { classify } from './classify/classify.js';
import { definePolicy } from './define-policy.js';
import { getPreset, presets } from './presets.js';

const S = 1_000;
const M = 60 * S;
const H = 60 * M;
const defaults = {
  retryUnknown: false,
  retryAfter: { maxMs: 15 * M, onExceeded: 'dead-letter' },
  idempotency: 'idempotent',
  whenBreakerOpen: 'delay',
} as const;

/** Every preset, written out in full by hand from its documentation: what `presets` must hold. */
const expected: Record<string, unknown> = {
  idempotentInternal: {
    ...defaults,
    name: 'idempotentInternal',
    maxAttempts: 9,
    maxAgeMs: 15 * M,
    backoff: { type: 'exponential', baseMs: 2 * S, factor: 2, maxDelayMs: 5 * M },
    jitter: 'equal',
    retryUnknown: true,
  },
  meteredApi: {
    ...defaults,
    name: 'meteredApi',
    maxAttempts: 4,
    maxAgeMs: 30 * M,
    backoff: { type: 'exponential', baseMs: 5 * S, factor: 3, maxDelayMs: 2 * M },
    jitter: 'full',
    retryAfter: { maxMs: 10 * M, onExceeded: 'wait' },
  },
  paidInference: {
    ...defaults,
    name: 'paidInference',
    maxAttempts: 2,
    maxAgeMs: 10 * M,
    backoff: { type: 'exponential', baseMs: 3 * S, factor: 2, maxDelayMs: 30 * S },
    jitter: 'full',
    retryOn: ['network', 'http-throttle'],
    retryAfter: { maxMs: 2 * M, onExceeded: 'dead-letter' },
  },
  nonIdempotent: {
    ...defaults,
    name: 'nonIdempotent',
    maxAttempts: 3,
    maxAgeMs: H,
    backoff: { type: 'exponential', baseMs: 5 * S, factor: 2, maxDelayMs: M },
    jitter: 'full',
    idempotency: 'key-required',
    idempotencyKeyTtlMs: 24 * H,
  },
  batchReconciliation: {
    ...defaults,
    name: 'batchReconciliation',
    maxAttempts: 2,
    maxAgeMs: H,
    backoff: { type: 'fixed', delayMs: 5 * M },
    jitter: 'equal',
  },
  email: {
    ...defaults,
    name: 'email',
    maxAttempts: 8,
    maxAgeMs: 24 * H,
    backoff: { type: 'exponential', baseMs: 5 * S, factor: 2, maxDelayMs: 15 * M },
    jitter: 'full',
    retryOn: ['network', 'http-5xx'],
  },
  payment: {
    ...defaults,
    name: 'payment',
    maxAttempts: 4,
    maxAgeMs: H,
    backoff: { type: 'exponential', baseMs: 10 * S, factor: 2, maxDelayMs: 5 * M },
    jitter: 'full',
    idempotency: 'key-required',
    idempotencyKeyTtlMs: 7 * 24 * H,
    retryOn: [],
  },
};

describe('presets', () => {
  it('are exactly the documented job classes and seed settings', () => {
    expect(Object.keys(presets)).toEqual(Object.keys(expected));
  });

  it.each(Object.keys(expected))('%s holds every setting, as documented', (name) => {
    expect(presets[name as keyof typeof presets]).toStrictEqual(expected[name]);
  });

  it.each(Object.keys(expected))('%s passes validation again unchanged', (name) => {
    const preset = presets[name as keyof typeof presets];
    expect(definePolicy({ ...preset, name: `copy of ${name}` })).toStrictEqual({
      ...(expected[name] as object),
      name: `copy of ${name}`,
    });
  });

  it('carry the seed settings for email and payment', () => {
    expect(presets.email).toMatchObject({
      maxAttempts: 8,
      maxAgeMs: 86_400_000,
      backoff: { type: 'exponential', baseMs: 5_000, maxDelayMs: 900_000 },
      retryUnknown: false,
    });
    expect(presets.payment).toMatchObject({
      maxAttempts: 4,
      maxAgeMs: 3_600_000,
      backoff: { type: 'exponential', baseMs: 10_000, maxDelayMs: 300_000 },
      idempotency: 'key-required',
    });
  });

  it('email retries network errors and 5xx only; payment only explicitly marked errors', () => {
    const reset = Object.assign(new Error('x'), { code: 'ECONNRESET' });
    expect(classify({ status: 503 }, presets.email, 0).retryable).toBe(true);
    expect(classify(reset, presets.email, 0).retryable).toBe(true);
    expect(classify({ status: 429 }, presets.email, 0).retryable).toBe(false);
    expect(classify(new Error('?'), presets.email, 0).retryable).toBe(false);
    expect(classify({ status: 503 }, presets.payment, 0).retryable).toBe(false);
    expect(classify(reset, presets.payment, 0).retryable).toBe(false);
    expect(classify(new TransientError('gateway: retry'), presets.payment, 0).retryable).toBe(true);
  });

  it('the job classes keep their attempt ranges', () => {
    expect(presets.idempotentInternal.maxAttempts).toBeGreaterThanOrEqual(6);
    expect(presets.idempotentInternal.maxAttempts).toBeLessThanOrEqual(9);
    expect(presets.meteredApi.maxAttempts).toBeLessThanOrEqual(4);
    expect(presets.paidInference.maxAttempts).toBeLessThanOrEqual(2);
    expect(presets.nonIdempotent.idempotency).toBe('key-required');
    expect(presets.batchReconciliation.maxAttempts).toBe(2);
  });

  it('getPreset accepts camelCase and kebab-case and lists valid names otherwise', () => {
    expect(getPreset('email')).toBe(presets.email);
    expect(getPreset('paid-inference')).toBe(presets.paidInference);
    expect(() => getPreset('sms')).toThrow(
      'unknown preset "sms"; use one of idempotentInternal, meteredApi, paidInference, nonIdempotent, batchReconciliation, email, payment',
    );
    expect(() => getPreset('toString')).toThrow(/unknown preset/);
  });
});
