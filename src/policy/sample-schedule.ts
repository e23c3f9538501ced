import { seededRandom } from '../common/random.js';
import { TransientError } from '../errors/transient-error.js';
import { decideSync } from './decide.js';
import type { RetryPolicy } from './types.js';

/** Smallest, median and largest of a sample, in milliseconds. */
export interface Spread {
  minMs: number;
  medianMs: number;
  maxMs: number;
}

/** One retry's row of a {@link SampledSchedule}. */
export interface SampledRetry {
  /** n of "retry n". */
  retry: number;
  /** The attempt this retry runs (`retry + 1`). */
  attempt: number;
  /** How many sampled jobs got this retry (the others were stopped by `maxAgeMs` earlier or here). */
  runs: number;
  /** How many sampled jobs `maxAgeMs` stopped at this retry. */
  refusedByMaxAge: number;
  /** The wait before this retry. */
  delay: Spread;
  /** When this retry starts, from the first failure (attempts themselves taken as instantaneous). */
  startsAfter: Spread;
}

/** What {@link sampleSchedule} returns. */
export interface SampledSchedule {
  policy: string;
  samples: number;
  seed: number;
  maxAttempts: number;
  maxAgeMs: number | null;
  retries: SampledRetry[];
}

/**
 * Runs `samples` jobs that fail every attempt through the real `decide` (with a seeded random source, so
 * the output is reproducible) and summarises each retry's delay and start time. Jobs of a `key-required`
 * policy are assumed to carry their key. Attempts are taken as instantaneous.
 *
 * @example
 * const s = sampleSchedule(presets.email, { samples: 1000 });
 * s.retries[0].delay; // { minMs: ~0, medianMs: ~2500, maxMs: ~5000 } under full jitter
 */
export function sampleSchedule(
  policy: RetryPolicy,
  options: { samples?: number; seed?: number } = {},
): SampledSchedule {
  const samples = options.samples ?? 1_000;
  const seed = options.seed ?? 1;
  if (!Number.isInteger(samples) || samples < 1 || samples > 1_000_000)
    throw new RangeError(`sampleSchedule: samples must be an integer from 1 to 1000000, got ${samples}`);
  const random = seededRandom(seed);
  const error = new TransientError('sampled failure');
  const retries = policy.maxAttempts - 1;
  const delays: number[][] = Array.from({ length: retries }, () => []);
  const starts: number[][] = Array.from({ length: retries }, () => []);
  const refused = new Array<number>(retries).fill(0);
  for (let s = 0; s < samples; s++) {
    let nowMs = 0;
    let previousDelayMs: number | undefined;
    for (let attemptsMade = 1; attemptsMade <= retries; attemptsMade++) {
      const d = decideSync({
        policy,
        error,
        attemptsMade,
        createdAtMs: 0,
        nowMs,
        random,
        dependency: policy.name,
        previousDelayMs,
        hasIdempotencyKey: true,
      });
      if (d.action !== 'retry') {
        if (d.reason === 'max-age') refused[attemptsMade - 1]!++;
        break;
      }
      nowMs += d.delayMs;
      previousDelayMs = d.delayMs;
      delays[attemptsMade - 1]!.push(d.delayMs);
      starts[attemptsMade - 1]!.push(nowMs);
    }
  }
  return {
    policy: policy.name,
    samples,
    seed,
    maxAttempts: policy.maxAttempts,
    maxAgeMs: policy.maxAgeMs ?? null,
    retries: delays.map((row, i) => ({
      retry: i + 1,
      attempt: i + 2,
      runs: row.length,
      refusedByMaxAge: refused[i] ?? 0,
      delay: spread(row),
      startsAfter: spread(starts[i] ?? []),
    })),
  };
}

function spread(values: number[]): Spread {
  if (values.length === 0) return { minMs: 0, medianMs: 0, maxMs: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
  return { minMs: sorted[0]!, medianMs: median, maxMs: sorted[sorted.length - 1]! };
}
