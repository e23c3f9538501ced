import { parseScenario } from './load.js';
import type { Scenario, ScenarioInput } from './schema.js';

/**
 * The scenario `stormguard simulate` runs without `--scenario`: the retry storm this project exists to stop.
 * 40 000 search-indexing jobs are queued; each has 5 attempts (4 retries) with exponential backoff and full
 * jitter. Five seconds in, the search cluster goes down for ten minutes (calls time out after a second),
 * then limps for two minutes (30 % errors, slow) before it is healthy again. Sixteen workers of ten slots
 * each work the queue. The budget is the default one: ratio 0.2 over a 60 s window, floor 10.
 *
 * @example
 * const longer = parseScenario({ ...DEFAULT_SCENARIO, name: 'longer-outage', seed: 2 });
 */
export const DEFAULT_SCENARIO: ScenarioInput = {
  name: 'search-cluster-outage',
  description:
    '40 000 queued search-indexing jobs, 5 attempts with exponential backoff and jitter; the search cluster is down for 10 minutes, then degraded for 2.',
  seed: 1,
  workers: { count: 16, concurrency: 10 },
  jobClasses: {
    'index-document': {
      dependency: 'search',
      policy: {
        maxAttempts: 5,
        backoff: { type: 'exponential', baseMs: '2s', factor: 2, maxDelayMs: '5m' },
        jitter: 'full',
        maxAgeMs: '2h',
      },
      permanentErrorRate: 0.0005,
    },
  },
  arrivals: [
    { class: 'index-document', backlog: 40_000 },
    { class: 'index-document', rate: 10, until: '15m' },
  ],
  dependencies: {
    search: {
      latency: '250ms',
      errorRate: 0.001,
      timeline: [
        { from: '5s', until: '10m5s', state: 'down', latency: '100ms' },
        { from: '10m5s', until: '12m5s', state: 'degraded', errorRate: 0.3, latency: '800ms' },
      ],
    },
  },
  budget: { ratio: 0.2, windowMs: '60s', minAllowance: 10 },
  strategies: ['ceiling-only', 'fleet-budget', 'per-worker-budgets', 'flow-control'],
};

/**
 * The default scenario, validated (a fresh object each call).
 *
 * @example
 * const result = await simulate(defaultScenario());
 */
export function defaultScenario(): Scenario {
  return parseScenario(structuredClone(DEFAULT_SCENARIO));
}
