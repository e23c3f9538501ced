import { describe, expect, it } from 'vitest';
import { TransientError } from '../errors/transient-error.js';
import { classify } from './classify/classify.js';
import { definePolicy } from './define-policy.js';
import { getPreset, presets } from './presets.js';

describe('presets', () => {
  it.each(Object.entries(presets))('%s is a complete, valid policy', (name, preset) => {
    expect(definePolicy(preset)).toEqual(preset);
    expect(preset.name).toBe(name);
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
