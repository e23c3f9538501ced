import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUCKET_COUNT, bucketTtlMs, DELAY_UNIT_MS, delayHops, nextBucket } from './delay-buckets.js';

/** The largest bucket's wait: 64 ms × 2^26, about 49.7 days. */
const LARGEST_MS = DELAY_UNIT_MS * 2 ** (BUCKET_COUNT - 1);

/** Delays from 1 ms to past twice the largest bucket, as whole ms and as fractions of a ms. */
const delays = fc.oneof(
  fc.integer({ min: 1, max: 3 * LARGEST_MS }),
  fc.integer({ min: 1, max: 10_000 }),
  fc.double({ min: 0.001, max: 3 * LARGEST_MS, noNaN: true, noDefaultInfinity: true }),
);

/** The waits of a plan, summed by hand: 64 ms × 2^index for each hop. */
function planned(hops: number[]): number {
  let total = 0;
  for (const hop of hops) total += 64 * 2 ** hop;
  return total;
}

describe('the delay plan (binary hops through the buckets)', () => {
  it('waits at least the delay and less than one unit more', () => {
    fc.assert(
      fc.property(delays, (delay) => {
        const total = planned(delayHops(delay));
        expect(total).toBeGreaterThanOrEqual(delay);
        expect(total).toBeLessThan(delay + 64);
      }),
      { numRuns: 5_000 },
    );
  });

  it('never waits in a bucket longer than what is left, but for the last hop under one unit', () => {
    fc.assert(
      fc.property(delays, (delay) => {
        const hops = delayHops(delay);
        let left = delay;
        hops.forEach((hop, i) => {
          const wait = 64 * 2 ** hop;
          if (left >= 64) expect(wait).toBeLessThanOrEqual(left);
          else {
            // Less than a unit left: the smallest bucket, and it is the last hop.
            expect(hop).toBe(0);
            expect(i).toBe(hops.length - 1);
          }
          left -= wait;
        });
        expect(left).toBeLessThanOrEqual(0);
      }),
      { numRuns: 5_000 },
    );
  });

  it('takes the largest bucket that fits at each hop (a plan of few hops), the largest one again past it', () => {
    fc.assert(
      fc.property(fc.double({ min: 64, max: 3 * LARGEST_MS, noNaN: true }), (left) => {
        const index = nextBucket(left);
        expect(64 * 2 ** index).toBeLessThanOrEqual(left);
        if (index < BUCKET_COUNT - 1) expect(64 * 2 ** (index + 1)).toBeGreaterThan(left);
      }),
      { numRuns: 5_000 },
    );
    // Exact powers of two land in their own bucket (the float guard does not push them one down).
    for (let index = 0; index < BUCKET_COUNT; index++) expect(nextBucket(64 * 2 ** index)).toBe(index);
    expect(bucketTtlMs(BUCKET_COUNT - 1)).toBe(LARGEST_MS);
  });

  it('keeps two delays a unit or more apart in the same order: jitter survives the buckets', () => {
    fc.assert(
      fc.property(delays, fc.double({ min: 64, max: 100_000, noNaN: true }), (first, gap) => {
        const second = first + gap;
        expect(planned(delayHops(first))).toBeLessThan(planned(delayHops(second)));
      }),
      { numRuns: 5_000 },
    );
  });

  it('plans nothing for a delay of zero or less', () => {
    for (const delay of [0, -1, -1_000]) expect(delayHops(delay)).toEqual([]);
    expect(nextBucket(0)).toBe(0);
    expect(nextBucket(Number.NaN)).toBe(0);
  });
});
