import { describe, expect, it } from 'vitest';
import { definePolicy } from './define-policy.js';
import { presets } from './presets.js';
import { sampleSchedule } from './sample-schedule.js';

describe('sampleSchedule', () => {
  it('without jitter every sample is the bare curve', () => {
    const policy = definePolicy({
      maxAttempts: 4,
      jitter: 'none',
      backoff: { type: 'exponential', baseMs: '1s', maxDelayMs: '1m' },
    });
    const s = sampleSchedule(policy, { samples: 10 });
    expect(s.retries.map((r) => [r.retry, r.attempt, r.runs, r.delay.medianMs, r.startsAfter.maxMs])).toEqual(
      [
        [1, 2, 10, 1_000, 1_000],
        [2, 3, 10, 2_000, 3_000],
        [3, 4, 10, 4_000, 7_000],
      ],
    );
  });

  it('keeps every delay within the full-jitter bounds and is reproducible per seed', () => {
    const a = sampleSchedule(presets.email, { samples: 400, seed: 5 });
    expect(sampleSchedule(presets.email, { samples: 400, seed: 5 })).toEqual(a);
    a.retries.forEach((r, i) => {
      expect(r.delay.minMs).toBeGreaterThanOrEqual(0);
      expect(r.delay.maxMs).toBeLessThanOrEqual(5_000 * 2 ** i);
      expect(r.delay.medianMs).toBeGreaterThan(5_000 * 2 ** i * 0.35);
      expect(r.delay.medianMs).toBeLessThan(5_000 * 2 ** i * 0.65);
    });
  });

  it('counts the jobs the max age stops', () => {
    const policy = definePolicy({
      maxAttempts: 5,
      maxAgeMs: '10s',
      jitter: 'none',
      backoff: { type: 'fixed', delayMs: '4s' },
    });
    const s = sampleSchedule(policy, { samples: 3 });
    expect(s.retries.map((r) => [r.runs, r.refusedByMaxAge])).toEqual([
      [3, 0], // starts at 4 s
      [3, 0], // starts at 8 s
      [0, 3], // would start at 12 s, past the 10 s max age
      [0, 0],
    ]);
  });
});
