import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/common/clock.js';
import { isValidationError } from '../../src/errors/validation-error.js';
import { runEngine } from '../../src/sim/engine/engine.js';
import { deriveSeeds } from '../../src/sim/engine/seeds.js';
import { compileJobClasses, dependencyNames, parseScenario } from '../../src/sim/scenario/load.js';
import type { Scenario } from '../../src/sim/scenario/schema.js';
import { simulate } from '../../src/sim/simulate.js';
import { createRuntime, resolveStrategies } from '../../src/sim/strategies.js';

const DAY = 86_400_000;

function errorOf(input: unknown): Error {
  try {
    parseScenario(input);
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the scenario to be refused');
}

/** A dependency that is down for `days`, and jobs that retry every 8 hours (no jitter) while it is. */
function slowRetries(days: number, attempts: number, strategies: string[]): Record<string, unknown> {
  return {
    name: 'slow-retries',
    horizon: days * DAY,
    workers: { count: 1 },
    jobClasses: {
      ping: {
        policy: {
          maxAttempts: attempts,
          maxAgeMs: days * DAY,
          jitter: 'none',
          backoff: { type: 'fixed', delayMs: '8h' },
        },
      },
    },
    arrivals: [{ class: 'ping', backlog: 3 }],
    dependencies: { ping: { latency: '10ms', timeline: [{ from: 0, until: days * DAY, state: 'down' }] } },
    strategies,
  };
}

/**
 * Runs the scenario, aborting it once the engine has processed more than `maxEvents` events (counted by its
 * progress reports, one per 32 768 events), so a run that steps through idle time fails instead of hanging.
 */
async function runAtMost(scenario: Scenario, maxEvents: number) {
  const controller = new AbortController();
  let reports = 0;
  return simulate(scenario, {
    signal: controller.signal,
    onProgress: () => {
      if (++reports * 32_768 > maxEvents) controller.abort();
    },
  });
}

describe('bounded simulator input', () => {
  it('refuses a horizon of 1e300 ms, naming the field and its limit', () => {
    const error = errorOf({ ...slowRetries(1, 3, ['ceiling-only']), horizon: 1e300 });
    expect(isValidationError(error)).toBe(true);
    expect(error.message).toContain('horizon: ');
    expect(error.message).toContain('at most');
  });

  it('refuses three jobs retrying over a virtual year: the timelines would hold a year of seconds', () => {
    const error = errorOf(slowRetries(365, 1_000, ['ceiling-only']));
    expect(isValidationError(error)).toBe(true);
    expect(error.message).toContain('horizon: ');
    // The limit and how to stay inside it are named.
    expect(error.message).toContain('more than the 5,000,000 a run may hold');
    expect(error.message).toMatch(/set horizon to at most \d+h/);
  });

  it('counts timeline seconds per dependency: many dependencies need a shorter horizon', () => {
    const dependencies = Object.fromEntries(
      Array.from({ length: 60 }, (_, i) => [i === 0 ? 'ping' : `d${i}`, { latency: '10ms' }]),
    );
    const error = errorOf({ ...slowRetries(1, 3, ['ceiling-only']), dependencies });
    expect(error.message).toContain('horizon: ');
    expect(error.message).toContain('1d for 60 dependencies');
    expect(error.message).toContain('set horizon to at most 23h');
  });

  it('jumps over idle virtual time: retries 8 hours apart cost events per attempt, not per tick', async () => {
    // 3 jobs × 9 attempts over three days. Stepping every 250 ms would be over a million events.
    const ceiling = await runAtMost(parseScenario(slowRetries(3, 9, ['ceiling-only'])), 10_000);
    const [only] = ceiling.strategies;
    expect(only?.deadLettered).toEqual({ 'max-attempts': 3 });
    expect(only?.requests.ping?.retries).toBe(3 * 8);
    // An arrival, then per attempt its end and (but the last) its retry coming due: no ticks without a budget.
    expect(only?.events).toBeLessThanOrEqual(1 + 3 * 9 * 2);

    // A budget is flushed and sampled while its window can still change (two windows after the last
    // activity), then the clock jumps to the next event.
    const budget = await runAtMost(parseScenario(slowRetries(3, 9, ['fleet-budget'])), 100_000);
    const fleet = budget.strategies[0];
    expect(fleet?.requests.ping?.retries).toBe(3 * 8);
    const ticksPerActivity = (2 * 60_000 + 3_000) / 250;
    expect(fleet?.events).toBeLessThanOrEqual(1 + 3 * 9 * 2 + 9 * ticksPerActivity);
    // The allowance is still sampled every second of the run: the floor, since nothing ever succeeds.
    const allowance = fleet?.timeline.ping?.allowance ?? [];
    expect(allowance.length).toBe(budget.seconds);
    expect(new Set(allowance)).toEqual(new Set([10]));
  });

  it('a million workers for ten jobs create what ten jobs use, not a budget per idle worker', async () => {
    const scenario = parseScenario({
      name: 'million-workers',
      workers: { count: 1_000_000 },
      jobClasses: { ping: { policy: { maxAttempts: 3 } } },
      arrivals: [{ class: 'ping', backlog: 10 }],
      dependencies: { ping: { latency: '10ms', errorRate: 0.5 } },
      strategies: ['per-worker-budgets'],
    });
    const [strategy] = resolveStrategies(scenario);
    const clock = new FakeClock(0);
    const runtime = createRuntime(strategy!, scenario.workers.count, clock, scenario);
    // Nothing is built before a worker needs it.
    expect(runtime.budgets.length).toBe(0);
    const output = await runEngine(
      scenario,
      compileJobClasses(scenario),
      dependencyNames(scenario),
      runtime,
      clock,
      deriveSeeds(scenario.seed, scenario.arrivals.length),
    );
    expect(output.jobs).toBe(10);
    expect(output.unfinished).toBe(0);
    // Ten jobs reach at most ten workers (a retry may land on another worker: at most 3 attempts each).
    expect(runtime.budgets.length).toBeLessThanOrEqual(30);
    // The workers that never ran a job still count in the fleet's summed allowance: each holds the floor.
    const allowance = output.dependencies[0]?.allowance.at(0);
    expect(allowance).toBe(1_000_000 * scenario.budget.minAllowance);
  });
});
