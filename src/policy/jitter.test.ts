import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../common/random.js';
import { definePolicy } from './define-policy.js';
import { applyJitter } from './jitter.js';
import { retryDelay, retryDelayBounds } from './retry-delay.js';
import type { JitterKind } from './types.js';

function sequence(jitter: JitterKind, seed = 42): number[] {
  const policy = definePolicy({
    maxAttempts: 9,
    jitter,
    backoff: { type: 'exponential', baseMs: 1_000, maxDelayMs: 30_000 },
  });
  const random = seededRandom(seed);
  const out: number[] = [];
  let previousDelayMs: number | undefined;
  for (let n = 1; n <= 8; n++) {
    previousDelayMs = retryDelay(policy, n, { random, previousDelayMs });
    out.push(previousDelayMs);
  }
  return out;
}

describe('retryDelay with a seeded source (exact vectors)', () => {
  // seededRandom(42) starts 0.6011, 0.4483, 0.8525, 0.6697, …; the first values are checked by hand below.
  it('none is the bare curve', () => {
    expect(sequence('none')).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('full: uniform 0..d', () => {
    // 0.6011 × 1000 = 601, 0.4483 × 2000 = 897, 0.8525 × 4000 = 3410
    expect(sequence('full')).toEqual([601, 897, 3_410, 5_358, 2_797, 15_798, 8_197, 18_742]);
  });

  it('equal: d/2 + uniform 0..d/2', () => {
    // 500 + 0.6011 × 500 = 801, 1000 + 0.4483 × 1000 = 1448
    expect(sequence('equal')).toEqual([801, 1_448, 3_705, 6_679, 9_399, 22_899, 19_098, 24_371]);
  });

  it('decorrelated: min(cap, uniform(base, previous × 3))', () => {
    // 1000 + 0.6011 × (3000 − 1000) = 2202; 1000 + 0.4483 × (6606 − 1000) = 3513
    expect(sequence('decorrelated')).toEqual([2_202, 3_513, 9_132, 18_678, 10_621, 17_252, 14_868, 28_241]);
  });

  it('a different seed gives a different sequence', () => {
    expect(sequence('full', 7)).not.toEqual(sequence('full', 42));
  });

  it('none draws nothing from the random source', () => {
    let draws = 0;
    applyJitter('none', 500, {
      random: () => {
        draws++;
        return 0.5;
      },
      baseMs: 1,
      capMs: 1_000,
    });
    expect(draws).toBe(0);
  });
});

describe('every delay within its jitter bounds and the cap (property)', () => {
  const kinds: JitterKind[] = ['none', 'full', 'equal', 'decorrelated'];

  it('holds for any backoff, retry, previous delay and random draw', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...kinds),
        fc.integer({ min: 1, max: 60_000 }),
        fc.double({ min: 1, max: 10, noNaN: true }),
        fc.integer({ min: 0, max: 3_600_000 }),
        fc.integer({ min: 1, max: 200 }),
        fc.option(fc.integer({ min: 0, max: 4_000_000 }), { nil: undefined }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (jitter, baseMs, factor, extra, retry, previousDelayMs, draw) => {
          const maxDelayMs = baseMs + extra;
          const policy = definePolicy({
            maxAttempts: 2,
            jitter,
            backoff: { type: 'exponential', baseMs, factor, maxDelayMs },
          });
          const d = retryDelay(policy, retry, { random: () => draw, previousDelayMs });
          const { minMs, maxMs } = retryDelayBounds(policy, retry, previousDelayMs);
          expect(Number.isInteger(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(minMs);
          expect(d).toBeLessThanOrEqual(maxMs);
          expect(d).toBeLessThanOrEqual(maxDelayMs);
          if (jitter === 'decorrelated') expect(d).toBeGreaterThanOrEqual(baseMs);
        },
      ),
    );
  });
});
