import type { ScenarioInput } from '../../src/sim/scenario/schema.js';

/**
 * The benchmark's scenario: `jobs` search-indexing jobs arriving steadily over one virtual hour to 32
 * workers of 10 slots, with the search cluster down for 10 minutes from minute 20 (fast 503s) and degraded
 * for 5 more. Everything else as the default scenario.
 */
export function benchScenario(jobs: number): ScenarioInput {
  return {
    name: `bench-${jobs}`,
    seed: 1,
    workers: { count: 32, concurrency: 10 },
    jobClasses: {
      'index-document': {
        dependency: 'search',
        policy: {
          maxAttempts: 5,
          backoff: { type: 'exponential', baseMs: '2s', factor: 2, maxDelayMs: '5m' },
          jitter: 'full',
        },
        permanentErrorRate: 0.0005,
      },
    },
    arrivals: [{ class: 'index-document', rate: jobs / 3_600, until: '1h' }],
    dependencies: {
      search: {
        latency: '250ms',
        errorRate: 0.001,
        timeline: [
          { from: '20m', until: '30m', state: 'down', latency: '100ms' },
          { from: '30m', until: '35m', state: 'degraded', errorRate: 0.3, latency: '800ms' },
        ],
      },
    },
    budget: { ratio: 0.2, windowMs: '60s', minAllowance: 10 },
    strategies: ['ceiling-only', 'fleet-budget', 'per-worker-budgets'],
  };
}
