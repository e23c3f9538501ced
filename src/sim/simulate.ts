import { FakeClock } from '../common/clock.js';
import { DependencyModel } from './engine/dependency-model.js';
import { runEngine } from './engine/engine.js';
import type { EngineOutput } from './engine/recorder.js';
import { deriveSeeds } from './engine/seeds.js';
import { type SimulationResult, strategyResult } from './results.js';
import { compileJobClasses, dependencyNames } from './scenario/load.js';
import type { DependencySpec, Scenario } from './scenario/schema.js';
import { createRuntime, type ResolvedStrategy, resolveStrategies } from './strategies.js';

/** Where a simulation is: which strategy is running and how many of its jobs have finished. */
export interface SimulationProgress {
  strategy: string;
  /** 0-based position of the strategy among those run. */
  index: number;
  count: number;
  finished: number;
  /** Jobs the scenario is expected to create (exact for backlogs, the mean for rates). */
  expected: number;
}

/** Options of {@link simulate}. Defaults: the scenario's seed and strategies, no progress reports, no signal. */
export interface SimulateOptions {
  /** Overrides the scenario's seed. */
  seed?: number;
  /** Runs only these strategies, in this order (names from the scenario, or the built-in kinds). */
  strategies?: readonly string[];
  onProgress?: (progress: SimulationProgress) => void;
  /** Aborting it stops the simulation, which then rejects ("simulation interrupted"). */
  signal?: AbortSignal;
}

/**
 * Runs each of the scenario's strategies on the same arrivals and the same dependency timeline, on a virtual
 * clock, and returns what each did: requests per dependency (first attempts and retries), peak retries per
 * second while a dependency was down, completions, dead letters by reason, drain time, and per-second
 * timelines. Failures go through stormguard's own `decide`, and budgets are stormguard's own `RetryBudget`
 * over a `MemoryBudgetStore` on the virtual clock. The same scenario and seed give the same result, byte for
 * byte.
 *
 * @example
 * import { defaultScenario, simulate, summarize } from 'stormguard/sim';
 * const result = await simulate(defaultScenario(), { strategies: ['ceiling-only', 'fleet-budget'] });
 * console.log(summarize(result).strategies.map((s) => [s.name, s.requests.search?.retries]));
 */
export async function simulate(scenario: Scenario, options: SimulateOptions = {}): Promise<SimulationResult> {
  const seed = options.seed ?? scenario.seed;
  const strategies = resolveStrategies(scenario, options.strategies);
  const classes = compileJobClasses(scenario);
  const names = dependencyNames(scenario);
  const unhealthy = names.map(
    (n) => new DependencyModel(n, scenario.dependencies[n] as DependencySpec).unhealthy,
  );
  const seeds = deriveSeeds(seed, scenario.arrivals.length);
  const specs = names.map((n) => scenario.dependencies[n] as DependencySpec);
  const rateLimited = specs.map((spec) => spec.rateLimit !== undefined);
  const throughput = specs.some((spec) => spec.rateLimit !== undefined || spec.limits !== undefined);

  const outputs: [ResolvedStrategy, EngineOutput][] = [];
  for (const [index, strategy] of strategies.entries()) {
    const clock = new FakeClock(0);
    const runtime = createRuntime(strategy, scenario.workers.count, clock, scenario);
    const output = await runEngine(scenario, classes, names, runtime, clock, seeds, {
      ...(options.signal ? { signal: options.signal } : {}),
      onProgress: (finished, expected) =>
        options.onProgress?.({
          strategy: strategy.name,
          index,
          count: strategies.length,
          finished,
          expected,
        }),
    });
    outputs.push([strategy, output]);
  }
  // Every timeline covers the same seconds, so strategies line up in charts.
  const seconds = Math.max(
    1,
    ...outputs.flatMap(([, o]) =>
      o.dependencies.map((d) =>
        Math.max(d.first.length, d.retries.length, d.successes.length, d.failures.length),
      ),
    ),
  );
  const result: SimulationResult = {
    scenario: scenario.name,
    seed,
    seconds,
    workers: { count: scenario.workers.count, concurrency: scenario.workers.concurrency },
    dependencies: names.map((name, i) => {
      const { rateLimit, limits } = specs[i] as DependencySpec;
      return {
        name,
        unhealthy: [...(unhealthy[i] ?? [])],
        ...(rateLimit === undefined ? {} : { rateLimit: { ...rateLimit } }),
        ...(limits === undefined ? {} : { limits: { ...limits } }),
      };
    }),
    strategies: outputs.map(([strategy, output]) =>
      strategyResult(strategy, output, unhealthy, seconds, rateLimited, throughput),
    ),
  };
  if (scenario.description !== undefined) result.description = scenario.description;
  return result;
}
