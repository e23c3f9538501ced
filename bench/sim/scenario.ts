import { DEFAULT_SCENARIO } from '../../src/sim/scenario/default.js';
import type { ScenarioInput } from '../../src/sim/scenario/schema.js';

/**
 * The benchmark's scenario: the default scenario's job class, search latency and budget, with `jobs` jobs
 * arriving steadily over one virtual hour to 32 workers of 10 slots, and the search cluster down for 10
 * minutes from minute 20 (fast 503s), then degraded for 5 more.
 */
export function benchScenario(jobs: number): ScenarioInput {
  const search = DEFAULT_SCENARIO.dependencies.search;
  return {
    ...structuredClone(DEFAULT_SCENARIO),
    name: `bench-${jobs}`,
    description: `${jobs} jobs over one virtual hour`,
    workers: { count: 32, concurrency: 10 },
    arrivals: [{ class: 'index-document', rate: jobs / 3_600, until: '1h' }],
    dependencies: {
      search: {
        ...search,
        timeline: [
          { from: '20m', until: '30m', state: 'down', latency: '100ms' },
          { from: '30m', until: '35m', state: 'degraded', errorRate: 0.3, latency: '800ms' },
        ],
      },
    },
  };
}
