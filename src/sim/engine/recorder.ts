import { BinnedSeries } from './series.js';

/** Width of a time-series bin: one second, so a bin's count is a rate per second. */
export const BIN_MS = 1_000;

/** Per-dependency time series of one run, in {@link BIN_MS} bins. */
export interface DependencySeries {
  name: string;
  /** First attempts sent to the dependency. */
  first: BinnedSeries;
  /** Retries sent to the dependency (attempts after the first). */
  retries: BinnedSeries;
  successes: BinnedSeries;
  failures: BinnedSeries;
  /** Retries scheduled that charge an attempt (for a budget strategy: retries the budget granted). */
  granted: BinnedSeries;
  /** Retries postponed without charging an attempt (budget deferral, open breaker). */
  deferred: BinnedSeries;
  /**
   * Attempts refused after the job was fetched, before anything was sent: by the breaker, or by the budget
   * when a retry that holds no grant asks for one.
   */
  refused: BinnedSeries;
  /** Queue operations the strategy caused: job fetches and re-delays (a retry or a deferral moved back). */
  queueOps: BinnedSeries;
  /** Sum of the strategy's budgets' allowance and spend for the dependency, sampled once per bin. */
  allowance: BinnedSeries;
  spent: BinnedSeries;
  /** Denials the budgets counted in their window (in shadow mode: denials they would have made). */
  denied: BinnedSeries;
  /** Calls the dependency answered 429 (above its `rateLimit`). */
  rateLimited: BinnedSeries;
}

/**
 * Where the jobs still pending at the horizon were: waiting for a free worker slot (the fleet lacked
 * capacity), running, or delayed until their next attempt (retries held open).
 */
export interface PendingJobs {
  waiting: number;
  running: number;
  delayed: number;
}

/** Everything one strategy's run produced; `results.ts` turns it into the public result. */
export interface EngineOutput {
  jobs: number;
  completed: number;
  deadLettered: Map<string, BinnedSeries>;
  /** Jobs still waiting, running or delayed when the run stopped at the horizon. */
  unfinished: number;
  /** The unfinished jobs by where they were: waiting for a worker, running, or delayed until a retry. */
  pending: PendingJobs;
  /** Jobs that are neither finished nor pending: a bug if ever non-zero (computed from independent counts). */
  lost: number;
  /** Virtual time when the last job finished. */
  drainMs: number;
  /** True when the run stopped at the scenario's horizon with work still pending. */
  stoppedAtHorizon: boolean;
  dependencies: DependencySeries[];
  /** `attemptsHistogram.completed[n]`: jobs that completed after n attempts; likewise for dead letters. */
  attemptsHistogram: { completed: number[]; deadLettered: number[] };
  events: number;
  /** Under flow control, per dependency (by index), when each slow-start ramp began; empty otherwise. */
  rampStarts: number[][];
}

/** Where the run stopped, as the engine hands it to {@link RunRecorder.output}. */
export interface RunEnd {
  jobs: number;
  pending: PendingJobs;
  events: number;
  stoppedAtHorizon: boolean;
  rampStarts: number[][];
}

/**
 * What a run records about its jobs: the per-dependency time series, the dead letters by reason, the
 * attempts histogram, and the counts of finished jobs; and, at the end, the run's {@link EngineOutput}.
 * The engine's steps write here and read nothing back.
 *
 * @example
 * const recorder = new RunRecorder(['search']);
 * recorder.series[0]?.first.add(t);
 * recorder.finish(3, t, undefined); // completed after 3 attempts
 */
export class RunRecorder {
  /** One entry per dependency, by index. */
  readonly series: DependencySeries[];
  readonly deadLettered = new Map<string, BinnedSeries>();
  readonly histogram = { completed: [] as number[], deadLettered: [] as number[] };
  completed = 0;
  finished = 0;
  drainMs = 0;

  /**
   * `bins`: the bins the run is expected to reach, allocated at once (growing a day's series step by step
   * allocated and copied three times its size); `gauges` false leaves the budget gauges, which a strategy
   * without a budget never sets, at a small start.
   */
  constructor(dependencyNames: readonly string[], bins = 256, gauges = true) {
    const gaugeBins = gauges ? bins : 256;
    this.series = dependencyNames.map((name) => ({
      name,
      first: new BinnedSeries(BIN_MS, 'counter', bins),
      retries: new BinnedSeries(BIN_MS, 'counter', bins),
      successes: new BinnedSeries(BIN_MS, 'counter', bins),
      failures: new BinnedSeries(BIN_MS, 'counter', bins),
      granted: new BinnedSeries(BIN_MS, 'counter', bins),
      deferred: new BinnedSeries(BIN_MS, 'counter', bins),
      refused: new BinnedSeries(BIN_MS, 'counter', bins),
      queueOps: new BinnedSeries(BIN_MS, 'counter', bins),
      allowance: new BinnedSeries(BIN_MS, 'gauge', gaugeBins),
      spent: new BinnedSeries(BIN_MS, 'gauge', gaugeBins),
      denied: new BinnedSeries(BIN_MS, 'gauge', gaugeBins),
      // Grows from a small start: only a dependency with a rate limit ever counts here.
      rateLimited: new BinnedSeries(BIN_MS, 'counter', 256),
    }));
  }

  /** A job ended at `t` after `attempts` attempts: completed (`reason` undefined) or dead-lettered. */
  finish(attempts: number, t: number, reason: string | undefined): void {
    this.finished++;
    this.drainMs = t;
    const bucket = reason === undefined ? this.histogram.completed : this.histogram.deadLettered;
    bucket[attempts] = (bucket[attempts] ?? 0) + 1;
    if (reason === undefined) {
      this.completed++;
      return;
    }
    let dl = this.deadLettered.get(reason);
    if (!dl) {
      dl = new BinnedSeries(BIN_MS);
      this.deadLettered.set(reason, dl);
    }
    dl.add(t);
  }

  /**
   * The run's output. `lost` comes from counts kept apart (jobs created, finished, pending), so a job the
   * engine dropped shows as a non-zero difference instead of vanishing.
   */
  output(end: RunEnd): EngineOutput {
    const { waiting, running, delayed } = end.pending;
    const unfinished = waiting + running + delayed;
    let deadLetterCount = 0;
    for (const dl of this.deadLettered.values()) deadLetterCount += dl.total();
    return {
      jobs: end.jobs,
      completed: this.completed,
      deadLettered: this.deadLettered,
      unfinished,
      pending: end.pending,
      lost: end.jobs - this.completed - deadLetterCount - unfinished,
      drainMs: this.drainMs,
      stoppedAtHorizon: end.stoppedAtHorizon && unfinished > 0,
      dependencies: this.series,
      attemptsHistogram: this.histogram,
      events: end.events,
      rampStarts: end.rampStarts,
    };
  }
}
