import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import type { ValidationError } from '../errors/validation-error.js';
import { planForWindow } from './plan-window.js';

describe('planForWindow', () => {
  // base 2 s, factor 2, cap 600 s: the classic doubling algorithm, computed (charts often quoted get 5 m, 1 h and 4 h wrong)
  it.each([
    [60_000, 5, 62_000],
    [300_000, 8, 510_000],
    [900_000, 9, 1_022_000],
    [3_600_000, 14, 4_022_000],
    [14_400_000, 32, 14_822_000],
  ])('a %i ms window needs %i retries', (windowMs, retries, spanMs) => {
    const plan = planForWindow(windowMs);
    expect(plan.retries).toBe(retries);
    expect(plan.maxAttempts).toBe(retries + 1);
    expect(plan.spanMs).toBe(spanMs);
    expect(plan.delaysMs).toHaveLength(retries);
  });

  it('lists the delays and accepts durations as strings', () => {
    expect(planForWindow('60s').delaysMs).toEqual([2_000, 4_000, 8_000, 16_000, 32_000]);
    expect(planForWindow('15m', { type: 'fixed', delayMs: '1m' }).retries).toBe(15);
  });

  it('warns past 15 minutes, recommending a dead-letter queue and replay', () => {
    expect(planForWindow('15m').warnings).toEqual([]);
    expect(planForWindow('16m').warnings.join()).toMatch(/dead-letter queue and replay/);
  });

  it('fits the base so the span lands within 1 % of the window', () => {
    const plan = planForWindow('15m', undefined, { fit: true });
    expect(plan.retries).toBe(9);
    expect(plan.backoff).toMatchObject({ type: 'exponential', baseMs: 1_761 });
    expect(Math.abs(plan.spanMs - 900_000)).toBeLessThanOrEqual(9_000);
  });

  it('fitted spans are within 1 % for any window and backoff (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10_000, max: 8 * 3_600_000 }),
        fc.integer({ min: 100, max: 30_000 }),
        fc.constantFrom(1.5, 2, 3),
        fc.integer({ min: 0, max: 1_800_000 }),
        (windowMs, baseMs, factor, extra) => {
          // a cap large enough that the window needs at most a few hundred retries
          const maxDelayMs = Math.max(baseMs, Math.ceil(windowMs / 200)) + extra;
          const plan = planForWindow(
            windowMs,
            { type: 'exponential', baseMs, factor, maxDelayMs },
            { fit: true },
          );
          expect(Math.abs(plan.spanMs - windowMs)).toBeLessThanOrEqual(windowMs * 0.01);
          expect(plan.spanMs).toBe(plan.delaysMs.reduce((a, b) => a + b, 0));
        },
      ),
      { numRuns: 200 },
    );
  });

  it.each<[string, unknown, unknown, RegExp]>([
    ['a zero window', 0, undefined, /recovery window.*must be > 0/],
    ['a negative window', -5, undefined, /must be >= 0/],
    ['an unparseable window', '15 minutes', undefined, /duration like/],
    [
      'a factor below 1',
      '15m',
      { type: 'exponential', baseMs: 1_000, factor: 0.5, maxDelayMs: 10_000 },
      /factor/,
    ],
    [
      'a backoff that cannot cover it',
      '4h',
      { type: 'fixed', delayMs: 1 },
      /do not cover 4h within 1000 attempts/,
    ],
  ])('rejects %s', (_, window, backoff, message) => {
    let error: unknown;
    try {
      planForWindow(window as string, backoff as never);
    } catch (e) {
      error = e;
    }
    expect(isInvalidInputError(error)).toBe(true);
    expect((error as Error).message).toMatch(message);
  });

  it.each<[string, unknown]>([
    ['a zero window', 0],
    ['a negative window', -5],
    ['an unparseable window', '15 minutes'],
  ])('names the window field when it rejects %s', (_, window) => {
    let error: unknown;
    try {
      planForWindow(window as string);
    } catch (e) {
      error = e;
    }
    expect((error as ValidationError).issues.map((i) => i.path)).toEqual(['window']);
    expect((error as Error).message).toMatch(/^invalid recovery window: window: /);
    expect((error as Error).message).not.toContain('(root)');
  });
});
