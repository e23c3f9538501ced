import type { UnhealthyPeriod } from './engine/dependency-model.js';
import type { DependencySeries, EngineOutput, PendingJobs } from './engine/recorder.js';
import type { BinnedSeries } from './engine/series.js';
import type { StrategyKind } from './scenario/schema.js';

/** Requests one strategy sent to one dependency. */
export interface RequestCounts {
  /** Each job's first attempt. */
  first: number;
  /** Every attempt after a job's first. */
  retries: number;
  /** Retries that reached it while it was down or degraded (counted by the second). */
  retriesWhileDown: number;
  /**
   * The most calls (first attempts and retries) it received in one second during the
   * {@link RECOVERY_WINDOW_MS} after each outage ended (0 if it never had one): the backlog's rush.
   */
  recoveryPeakPerSecond: number;
  /** Calls it answered 429 with Retry-After (above its `rateLimit`); only for a dependency with one. */
  rateLimited?: number;
}

/** How long after a dependency recovers `recoveryPeakPerSecond` looks: two minutes. */
export const RECOVERY_WINDOW_MS = 120_000;

/** One dependency's time series under one strategy, one value per second (index = second of the run). */
export interface DependencyTimeline {
  first: number[];
  retries: number[];
  successes: number[];
  failures: number[];
  /** Retries scheduled that charge an attempt (under a budget: granted by it). */
  granted: number[];
  /** Retries postponed without charging an attempt (budget deferral, open breaker). */
  deferred: number[];
  /** Attempts refused after the job was fetched, before anything was sent (breaker, or budget for a retry without a grant). */
  refused: number[];
  /** Queue operations the strategy caused: job fetches and re-delays. */
  queueOps: number[];
  /** Sum of the strategy's budgets' allowance in their window (per-worker budgets add up); empty without a budget. */
  allowance: number[];
  /** Retries the budgets have granted in their window. */
  spent: number[];
  /** Denials the budgets counted in their window. */
  denied: number[];
  /** Calls it answered 429 (above its `rateLimit`); only for a dependency with one. */
  rateLimited?: number[];
}

/**
 * What one strategy did to the scenario. The first fields are the CLI's `--json` output.
 *
 * @example
 * const fleet = result.strategies.find((s) => s.name === 'fleet-budget');
 * fleet?.requests.search?.retries; // retries the search cluster received
 */
export interface StrategyResult {
  name: string;
  label: string;
  kind: StrategyKind;
  jobs: number;
  completed: number;
  /**
   * Jobs that completed with no one replaying a dead letter. The simulator never replays, so this is
   * `completed`; it is reported so the figure reads the same as a fleet's, where a dead letter only
   * completes when a person (or an automatic replay) sends it back.
   */
  completedWithoutReplay: number;
  /** Dead letters by reason (`max-attempts`, `budget-exhausted`, …), reasons in alphabetical order. */
  deadLettered: Record<string, number>;
  /** Jobs neither finished nor pending at the end: always 0 unless the engine has a bug. */
  lost: number;
  /** Jobs still pending when the run stopped at the horizon (0 when it drained). */
  unfinished: number;
  /** Where those jobs were: waiting for a worker, running, or delayed until a retry. */
  pending: PendingJobs;
  requests: Record<string, RequestCounts>;
  /** Attempts refused after the job was fetched and before anything was sent: by a breaker, or by a budget a retry without a grant asked. */
  refused: number;
  /**
   * Queue operations the strategy caused: every job fetch (a slot taking a job, whatever happens next) and
   * every re-delay (a retry or a deferral moved back to the delayed set). Completions are not counted:
   * every strategy pays one per job.
   */
  queueOps: number;
  /** The most retries any dependency received in one second while it was down or degraded (0 if never). */
  peakRetriesPerSecond: number;
  /** Virtual time from the start until the last job completed or was dead-lettered. */
  drainMs: number;
  timeline: Record<string, DependencyTimeline>;
  /** Dead letters per second, by reason. */
  deadLetterTimeline: Record<string, number[]>;
  /** `completed[n]`: jobs that completed after n attempts; `deadLettered[n]` likewise. */
  attemptsHistogram: { completed: number[]; deadLettered: number[] };
  /** Events the engine processed (for benchmarks). */
  events: number;
  /**
   * Under flow control, per dependency, the virtual times (ms) its breaker closed after being open or its
   * budget stopped denying: each starts a slow-start ramp. Empty for the other strategies.
   */
  slowStartsMs: Record<string, number[]>;
  /**
   * Jobs completed per second, from the start until the last job finished (`completed` / `drainMs`), to 2
   * decimals; only when the scenario has a dependency with a `rateLimit` or `limits`, where it is read
   * against the dependency's rate.
   */
  throughputPerSecond?: number;
}

/**
 * The outcome of a simulation: every strategy on the same arrivals and the same outage.
 *
 * @example
 * const result = await simulate(defaultScenario());
 * result.strategies.map((s) => [s.label, s.peakRetriesPerSecond]);
 */
export interface SimulationResult {
  scenario: string;
  description?: string;
  seed: number;
  /** Seconds covered by every timeline (the longest strategy's drain, rounded up). */
  seconds: number;
  workers: { count: number; concurrency: number };
  /**
   * Each dependency's down and degraded periods, and, for one that has them, its `rateLimit` (it answers 429
   * above `perSecond`) and the fleet's `limits` on it.
   */
  dependencies: {
    name: string;
    unhealthy: UnhealthyPeriod[];
    rateLimit?: { perSecond: number; retryAfterSeconds: number };
    limits?: { maxInFlight?: number; maxRatePerSecond?: number };
  }[];
  strategies: StrategyResult[];
}

/** The CLI's `--json` document: exactly these fields. */
export interface SimulationSummary {
  scenario: string;
  seed: number;
  strategies: {
    name: string;
    jobs: number;
    completed: number;
    completedWithoutReplay: number;
    deadLettered: Record<string, number>;
    lost: number;
    /** Jobs still pending at the horizon: 0 when the run drained. */
    unfinished: number;
    requests: Record<string, RequestCounts>;
    refused: number;
    queueOps: number;
    peakRetriesPerSecond: number;
    /** When the last job finished; with `unfinished` > 0 the run never drained and this is no drain time. */
    drainMs: number;
    /** Jobs completed per second until the drain: only in a scenario with a `rateLimit` or `limits`. */
    throughputPerSecond?: number;
  }[];
}

/**
 * The `--json` view of a result: scenario, seed and per strategy the counts, without time series.
 *
 * @example
 * process.stdout.write(JSON.stringify(summarize(await simulate(scenario)), null, 2));
 */
export function summarize(result: SimulationResult): SimulationSummary {
  return {
    scenario: result.scenario,
    seed: result.seed,
    strategies: result.strategies.map((s) => ({
      name: s.name,
      jobs: s.jobs,
      completed: s.completed,
      completedWithoutReplay: s.completedWithoutReplay,
      deadLettered: s.deadLettered,
      lost: s.lost,
      unfinished: s.unfinished,
      requests: s.requests,
      refused: s.refused,
      queueOps: s.queueOps,
      peakRetriesPerSecond: s.peakRetriesPerSecond,
      drainMs: s.drainMs,
      ...(s.throughputPerSecond === undefined ? {} : { throughputPerSecond: s.throughputPerSecond }),
    })),
  };
}

/**
 * Turns one engine run into a {@link StrategyResult}; `seconds` is the length of its timelines. `limited`
 * (per dependency, by index: it has a `rateLimit`) adds its 429s to its requests and timeline; `throughput`
 * adds `throughputPerSecond`. Without them the result has exactly the fields it had before limits.
 */
export function strategyResult(
  strategy: { name: string; label: string; kind: StrategyKind },
  output: EngineOutput,
  unhealthy: readonly (readonly UnhealthyPeriod[])[],
  seconds: number,
  limited: readonly boolean[] = [],
  throughput = false,
): StrategyResult {
  const deadLettered: Record<string, number> = {};
  const deadLetterTimeline: Record<string, number[]> = {};
  for (const reason of [...output.deadLettered.keys()].sort()) {
    const series = output.deadLettered.get(reason)!;
    deadLettered[reason] = series.total();
    deadLetterTimeline[reason] = series.toArray(seconds);
  }
  const requests: Record<string, RequestCounts> = {};
  const timeline: Record<string, DependencyTimeline> = {};
  let peak = 0;
  let refused = 0;
  let queueOps = 0;
  const slowStartsMs: Record<string, number[]> = {};
  output.dependencies.forEach((d, i) => {
    slowStartsMs[d.name] = [...(output.rampStarts[i] ?? [])];
    const periods = unhealthy[i] ?? [];
    timeline[d.name] = toTimeline(d, seconds, limited[i] === true);
    requests[d.name] = {
      first: d.first.total(),
      retries: d.retries.total(),
      retriesWhileDown: sumWhileUnhealthy(d.retries, seconds, periods),
      recoveryPeakPerSecond: recoveryPeak(d, seconds, periods),
    };
    if (limited[i] === true) (requests[d.name] as RequestCounts).rateLimited = d.rateLimited.total();
    peak = Math.max(peak, peakWhileUnhealthy(d.retries, seconds, periods));
    refused += d.refused.total();
    queueOps += d.queueOps.total();
  });
  const result: StrategyResult = {
    name: strategy.name,
    label: strategy.label,
    kind: strategy.kind,
    jobs: output.jobs,
    completed: output.completed,
    completedWithoutReplay: output.completed,
    deadLettered,
    lost: output.lost,
    unfinished: output.unfinished,
    pending: output.pending,
    requests,
    refused,
    queueOps,
    peakRetriesPerSecond: peak,
    drainMs: Math.round(output.drainMs),
    timeline,
    deadLetterTimeline,
    attemptsHistogram: {
      completed: Array.from(output.attemptsHistogram.completed, (n) => n ?? 0),
      deadLettered: Array.from(output.attemptsHistogram.deadLettered, (n) => n ?? 0),
    },
    events: output.events,
    slowStartsMs,
  };
  if (throughput)
    result.throughputPerSecond =
      output.drainMs > 0 ? Math.round((output.completed / output.drainMs) * 100_000) / 100 : 0;
  return result;
}

/**
 * One dependency's timeline, each series turned into an array when it is first read (then kept): a day of
 * 50 dependencies is 50 million numbers, which a caller that reads the counts alone (`--json`, a
 * benchmark) never pays for, in time or memory. JSON, spreads and comparisons read them as plain arrays.
 */
function toTimeline(d: DependencySeries, seconds: number, rateLimited: boolean): DependencyTimeline {
  const timeline = {} as DependencyTimeline;
  const counters = [
    'first',
    'retries',
    'successes',
    'failures',
    'granted',
    'deferred',
    'refused',
    'queueOps',
  ] as const;
  for (const key of counters) lazy(timeline, key, () => d[key].toArray(seconds));
  if (rateLimited) lazy(timeline, 'rateLimited', () => d.rateLimited.toArray(seconds));
  // The budget's gauges are empty without a budget.
  for (const key of ['allowance', 'spent', 'denied'] as const)
    lazy(timeline, key, () => (d[key].length > 0 ? d[key].toArray(seconds) : []));
  return timeline;
}

/** Defines `key` on `target` as `build()`'s value, computed on the first read and then stored as data. */
function lazy(target: object, key: string, build: () => unknown): void {
  const store = (value: unknown) =>
    Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true });
  Object.defineProperty(target, key, {
    enumerable: true,
    configurable: true,
    get() {
      const value = build();
      store(value);
      return value;
    },
    set: store,
  });
}

/** The seconds before `length` that overlap a down or degraded period, each once (adjacent periods share no second twice). */
function unhealthySeconds(length: number, unhealthy: readonly UnhealthyPeriod[]): Set<number> {
  const seconds = new Set<number>();
  for (const period of unhealthy) {
    const last = Math.min(length - 1, Math.ceil(period.untilMs / 1_000) - 1);
    for (let s = Math.floor(period.fromMs / 1_000); s <= last; s++) seconds.add(s);
  }
  return seconds;
}

/** The busiest second of retries (over the first `length`) that overlaps a down or degraded period. */
function peakWhileUnhealthy(
  retries: BinnedSeries,
  length: number,
  unhealthy: readonly UnhealthyPeriod[],
): number {
  let peak = 0;
  for (const s of unhealthySeconds(length, unhealthy)) peak = Math.max(peak, retries.at(s));
  return peak;
}

/** Retries in the seconds (of the first `length`) that overlap a down or degraded period. */
function sumWhileUnhealthy(
  retries: BinnedSeries,
  length: number,
  unhealthy: readonly UnhealthyPeriod[],
): number {
  let sum = 0;
  for (const s of unhealthySeconds(length, unhealthy)) sum += retries.at(s);
  return sum;
}

/**
 * The busiest second of calls in the {@link RECOVERY_WINDOW_MS} after each outage ends (within the first
 * `length` seconds): an outage is a run of unhealthy periods with no healthy time between them (down, then
 * degraded, recovers once).
 */
function recoveryPeak(d: DependencySeries, length: number, unhealthy: readonly UnhealthyPeriod[]): number {
  const sorted = [...unhealthy].sort((a, b) => a.fromMs - b.fromMs);
  let peak = 0;
  sorted.forEach((period, i) => {
    const next = sorted[i + 1];
    if (next !== undefined && next.fromMs <= period.untilMs) return;
    const from = Math.ceil(period.untilMs / 1_000);
    const until = Math.min(length, from + RECOVERY_WINDOW_MS / 1_000);
    for (let s = from; s < until; s++) peak = Math.max(peak, d.first.at(s) + d.retries.at(s));
  });
  return peak;
}
