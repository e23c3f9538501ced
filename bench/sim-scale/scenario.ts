import type { ScenarioInput } from '../../src/sim/scenario/schema.js';

/** Dependencies of the internet-scale scenario. */
export const SCALE_DEPENDENCIES = 50;
const HOUR = 3_600_000;

/**
 * The internet-scale scenario: `jobs` jobs (10 000 000 by default in the bench) arriving over one virtual
 * day to 10 000 workers, spread over 50 dependencies (each its own job class, some busier than others), and
 * three outages that overlap in time on different dependencies: a payments-like group down for an hour, a
 * search-like group degraded for an hour and a half from the middle of it, and one dependency down for 20
 * minutes while both are still on. The policy is the default scenario's (5 attempts, exponential backoff
 * with full jitter) with a one-hour max age; the horizon leaves an hour to drain.
 */
export function scaleScenario(jobs: number): ScenarioInput {
  const names = Array.from({ length: SCALE_DEPENDENCIES }, (_, i) => `dep-${String(i).padStart(2, '0')}`);
  // Weights 1..5 cycling, so a few dependencies carry several times the traffic of others.
  const weights = names.map((_, i) => 1 + (i % 5));
  const total = weights.reduce((a, b) => a + b, 0);
  const outage = (i: number) => {
    if (i < 5) return [{ from: 9 * HOUR, until: 10 * HOUR, state: 'down' as const, latency: 1_000 }];
    if (i < 15)
      return [
        { from: 9.5 * HOUR, until: 11 * HOUR, state: 'degraded' as const, errorRate: 0.4, latency: 800 },
      ];
    if (i === 15) return [{ from: 9.75 * HOUR, until: 10.1 * HOUR, state: 'down' as const, latency: 100 }];
    return [];
  };
  return {
    name: `internet-scale-${jobs}`,
    description: `${jobs} jobs over a virtual day, 10 000 workers, 50 dependencies, three overlapping outages`,
    seed: 1,
    horizon: 25 * HOUR,
    workers: { count: 10_000, concurrency: 1 },
    jobClasses: Object.fromEntries(
      names.map((name) => [
        name,
        {
          dependency: name,
          policy: {
            maxAttempts: 5,
            maxAgeMs: HOUR,
            backoff: { type: 'exponential', baseMs: 2_000, factor: 2, maxDelayMs: 300_000 },
            jitter: 'full',
          },
          permanentErrorRate: 0.0005,
        },
      ]),
    ),
    arrivals: names.map((name, i) => ({
      class: name,
      rate: ((jobs / 86_400) * (weights[i] as number)) / total,
      until: 24 * HOUR,
    })),
    dependencies: Object.fromEntries(
      names.map((name, i) => [name, { latency: 50 + (i % 7) * 40, errorRate: 0.001, timeline: outage(i) }]),
    ),
  };
}
