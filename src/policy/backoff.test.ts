import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelay } from './backoff.js';
import type { Backoff } from './types.js';

describe('backoffDelay', () => {
  const exp: Backoff = { type: 'exponential', baseMs: 2_000, factor: 2, maxDelayMs: 600_000 };

  it('grows by the factor from the base and stops at the cap', () => {
    const delays = Array.from({ length: 11 }, (_, i) => backoffDelay(exp, i + 1));
    expect(delays).toEqual([
      2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 600_000, 600_000,
    ]);
  });

  it('is overflow-safe for huge retry numbers', () => {
    expect(backoffDelay(exp, 5_000)).toBe(600_000);
    expect(backoffDelay({ ...exp, factor: 100 }, 1_000_000)).toBe(600_000);
    expect(backoffDelay({ ...exp, baseMs: 0 }, 2_000)).toBe(0);
  });

  it('rounds fractional factors to whole milliseconds', () => {
    const b: Backoff = { type: 'exponential', baseMs: 1_000, factor: 1.5, maxDelayMs: 10_000 };
    expect([1, 2, 3, 4].map((n) => backoffDelay(b, n))).toEqual([1_000, 1_500, 2_250, 3_375]);
  });

  it('fixed returns the delay, capped when a cap is given', () => {
    expect(backoffDelay({ type: 'fixed', delayMs: 10_000 }, 7)).toBe(10_000);
    expect(backoffDelay({ type: 'fixed', delayMs: 10_000, maxDelayMs: 20_000 }, 1)).toBe(10_000);
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects retry %s', (n) => {
    expect(() => backoffDelay(exp, n)).toThrow(/integer >= 1/);
  });

  it('never exceeds the cap and never decreases (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60_000 }),
        fc.double({ min: 1, max: 100, noNaN: true }),
        fc.integer({ min: 0, max: 3_600_000 }),
        fc.integer({ min: 1, max: 10_000 }),
        (baseMs, factor, extra, n) => {
          const b: Backoff = { type: 'exponential', baseMs, factor, maxDelayMs: baseMs + extra };
          const d = backoffDelay(b, n);
          expect(d).toBeLessThanOrEqual(baseMs + extra);
          expect(d).toBeGreaterThanOrEqual(baseMs);
          expect(backoffDelay(b, n + 1)).toBeGreaterThanOrEqual(d);
        },
      ),
    );
  });
});
