import { formatDuration } from '../common/duration.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { compileJobClasses } from '../sim/scenario/load.js';
import type { Scenario, StrategyKind } from '../sim/scenario/schema.js';
import { expectedJobs } from '../sim/scenario/schema.js';

/**
 * CPU time by strategy kind, in ns: per second of one dependency's timeline (the virtual seconds up to
 * the horizon, for every dependency: budgets are sampled and series kept per second, whatever the jobs),
 * and per attempt the scenario allows (each job × its class's maxAttempts; most jobs use fewer). Fitted to
 * bench/sim-scale (10 000 workers, 50 dependencies, a virtual day, 4 500 000 timeline seconds) on a
 * 2-core machine at 1 000 000 and 10 000 000 jobs, then raised by about a quarter so the estimate errs
 * high, as a refusal should, and holds on a loaded machine (a load average of 10 adds up to a fifth): at
 * 10 000 000 jobs ceiling-only took 6.0 s of CPU, fleet-budget 10.0 s, per-worker-budgets 43.7 s,
 * budget-and-breaker 41.8 to 50.7 s, flow-control 49.2 s, budget-and-limits 10.3 s; at 1 000 000 jobs
 * 0.9 s, 2.5 s, 4.4 s, 6.7 s, 6.5 s and 2.5 s.
 */
const NS_PER_TIMELINE_SECOND: Readonly<Record<StrategyKind, number>> = {
  'ceiling-only': 60,
  'fleet-budget': 400,
  'per-worker-budgets': 400,
  'budget-and-breaker': 800,
  'flow-control': 700,
  'budget-and-limits': 400,
};
const NS_PER_ATTEMPT: Readonly<Record<StrategyKind, number>> = {
  'ceiling-only': 170,
  'fleet-budget': 260,
  'per-worker-budgets': 1_200,
  'budget-and-breaker': 950,
  'flow-control': 1_000,
  'budget-and-limits': 500,
};
/**
 * Per-worker budgets build a budget per worker on its first call (about 25 µs each) and keep a log and a
 * sampled use per worker and dependency it writes for (about 2 µs to start each): at most one per job.
 */
const NS_PER_WORKER_BUDGET = 30_000;
const NS_PER_BUDGET_PAIR = 2_500;
/** Memory of per-worker budgets: a budget per worker, and a log and a use per worker and dependency written. */
const BYTES_PER_WORKER_BUDGET = 2_048;
const BYTES_PER_BUDGET_PAIR = 800;
/**
 * The sampler's table of uses, one entry per worker and dependency, filled up front (8 bytes an entry) up
 * to 2^24 entries (see `budget-sampler.ts`); a larger one starts empty and is counted by the pairs above.
 */
const BYTES_PER_USE_ENTRY = 8;
const USES_PREFILLED = 2 ** 24;
/** Memory: a job's row, and one second of one dependency's per-second series (11 of them, kept per strategy). */
const BYTES_PER_JOB = 25;
const BYTES_PER_TIMELINE_SECOND = 11 * 8;
const BASE_MB = 100;
/** How long a run is expected to go on after its last arrival, at least. */
const DRAIN_MS = 3_600_000;

/** Beyond these, `stormguard simulate` asks for `--allow-large`. */
export const SIMULATION_LIMITS = { seconds: 300, memoryMb: 2_048 } as const;

/**
 * What a simulation is expected to cost before it runs.
 *
 * @example
 * const cost: SimulationCost = { jobs: 40_000, attempts: 200_000, strategies: 6, seconds: 1, memoryMb: 103 };
 */
export interface SimulationCost {
  /** Jobs the arrivals create (the mean for rates). */
  jobs: number;
  /** The most attempts they may make: each job × its class's maxAttempts. */
  attempts: number;
  strategies: number;
  /** Estimated CPU seconds for every strategy, one after another. */
  seconds: number;
  /** Estimated peak memory, in MB: the job rows, every strategy's per-second series, per-worker budgets. */
  memoryMb: number;
}

/**
 * The cost of running `strategies` (their kinds) over `scenario`: its timeline seconds (horizon ×
 * dependencies) and jobs × attempts at each strategy's calibrated cost (per-worker budgets also per
 * worker and per worker-dependency pair written), and memory for the job rows plus each strategy's
 * per-second series over the horizon and the dependencies (and per-worker budgets' own).
 *
 * @example
 * estimateSimulationCost(defaultScenario(), ['ceiling-only', 'fleet-budget']).seconds; // well under 1
 */
export function estimateSimulationCost(
  scenario: Scenario,
  strategies: readonly StrategyKind[],
): SimulationCost {
  // Each class's policy as built (a preset fills in what the scenario leaves out).
  const classes = compileJobClasses(scenario);
  const maxAttempts = new Map(
    Object.keys(scenario.jobClasses).map((name, i) => [name, classes[i]?.policy.maxAttempts ?? 1]),
  );
  let attempts = 0;
  for (const arrival of scenario.arrivals)
    attempts += expectedJobs([arrival]) * (maxAttempts.get(arrival.class) ?? 1);
  const workers = scenario.workers.count;
  // Series run from the first arrival to the last second the run reaches: the last arrival and its drain
  // (an hour, or the longest maxAgeMs), never past the horizon.
  let lastArrivalMs = 0;
  for (const arrival of scenario.arrivals)
    lastArrivalMs = Math.max(lastArrivalMs, arrival.until ?? arrival.at ?? arrival.from ?? 0);
  const drainMs = Math.max(DRAIN_MS, ...classes.map((c) => c.policy.maxAgeMs ?? 0));
  const seconds = Math.ceil(Math.min(scenario.horizon, lastArrivalMs + drainMs) / 1_000);
  const dependencies = Object.keys(scenario.dependencies).length;
  const timelineSeconds = seconds * dependencies;
  const jobs = expectedJobs(scenario.arrivals);
  // Per-worker budgets: the worker-dependency pairs written, at most one per job.
  const pairs = Math.min(workers * dependencies, jobs);
  let ns = 0;
  let bytes = jobs * BYTES_PER_JOB;
  for (const kind of strategies) {
    ns += timelineSeconds * NS_PER_TIMELINE_SECOND[kind] + attempts * NS_PER_ATTEMPT[kind];
    bytes += timelineSeconds * BYTES_PER_TIMELINE_SECOND;
    if (kind === 'per-worker-budgets') {
      ns += workers * NS_PER_WORKER_BUDGET + pairs * NS_PER_BUDGET_PAIR;
      bytes += workers * BYTES_PER_WORKER_BUDGET + pairs * BYTES_PER_BUDGET_PAIR;
      const uses = workers * dependencies;
      if (uses <= USES_PREFILLED) bytes += uses * BYTES_PER_USE_ENTRY;
    }
  }
  return {
    jobs,
    attempts,
    strategies: strategies.length,
    seconds: ns / 1e9,
    memoryMb: BASE_MB + bytes / 2 ** 20,
  };
}

/**
 * Throws bad input (exit 2) when `cost` is past {@link SIMULATION_LIMITS}: what the scenario adds up to,
 * the estimate against the limit, and how to run less or override.
 *
 * @example
 * refuseLargeSimulation(estimateSimulationCost(scenario, kinds)); // throws for a 50 000 000-job scenario
 */
export function refuseLargeSimulation(cost: SimulationCost): void {
  const slow = cost.seconds > SIMULATION_LIMITS.seconds;
  const big = cost.memoryMb > SIMULATION_LIMITS.memoryMb;
  if (!slow && !big) return;
  const count = (n: number) => Math.round(n).toLocaleString('en-US');
  const over = [
    ...(slow
      ? [
          `about ${formatDuration(Math.ceil(cost.seconds) * 1_000)} of CPU (limit ${formatDuration(SIMULATION_LIMITS.seconds * 1_000)})`,
        ]
      : []),
    ...(big
      ? [`about ${count(cost.memoryMb)} MB of memory (limit ${count(SIMULATION_LIMITS.memoryMb)} MB)`]
      : []),
  ];
  throw new InvalidInputError(
    `--scenario: ${count(cost.jobs)} jobs of up to ${count(cost.attempts)} attempts in all, over ${cost.strategies} ${
      cost.strategies === 1 ? 'strategy' : 'strategies'
    }, would take ${over.join(' and ')}; run fewer jobs, a shorter horizon or fewer strategies (--strategies ceiling-only,fleet-budget), or pass --allow-large to run it anyway (progress is shown as it goes)`,
  );
}
