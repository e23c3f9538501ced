import type { Clock } from '../../common/clock.js';
import type { Continuations } from './continuations.js';
import type { SimFlowControl } from './flow.js';
import type { DependencySeries } from './recorder.js';
import type { SimBudget, StrategyRuntime } from './runtime.js';

/** What one budget wrote for one dependency (see {@link BudgetSampler.wrote}). */
interface BudgetUse {
  /** Virtual time of its last write. */
  at: number;
  /** Virtual time of its last retry decision (a spend or a denial). */
  retryAt: number;
  /** Successes it recorded since its store began the dependency's state. */
  successes: number;
}

/**
 * The strategy's budgets seen from the engine: which have successes to flush, the flush itself, and the
 * once-per-bin sample of their allowance, spend and denials into the dependencies' gauges (and, under
 * flow control, the read that tells the gate a budget stopped denying).
 *
 * It tracks what each budget wrote for each dependency, so sampling reads only the budgets that can hold
 * something (`hot`): a fleet of per-worker budgets then costs what its busy workers hold, not its size.
 *
 * @example
 * const sampler = new BudgetSampler(runtime, names, recorder.series, clock, continuations, flow);
 * sampler.wrote(budget, d, false); // after budget.recordSuccess(name)
 * await sampler.flushAndSample(t, true);
 */
export class BudgetSampler {
  /**
   * Budgets with successes recorded since the last flush: only they have anything to push. A flush of the
   * others does nothing, and a fleet of per-worker budgets would pay for one each tick.
   */
  readonly #unflushed = new Set<SimBudget>();
  /**
   * Per dependency, what each budget wrote for it: when it last wrote, when it last decided a retry, and
   * the successes since its store began the dependency's state. A budget nothing wrote for in two windows
   * has been forgotten by its store; one that decided no retry in two windows and holds too few successes
   * to lift the allowance off its floor reads as an empty window too. Only the others (`hot`) are read
   * when sampling.
   */
  readonly #written: Map<SimBudget, BudgetUse>[];
  readonly #hot: Set<SimBudget>[];
  readonly #forgetAfterMs: number;
  /** Fewer successes than this leave the allowance at its floor: floor(successes × ratio) <= minAllowance. */
  readonly #liftingSuccesses: number;

  constructor(
    private readonly runtime: StrategyRuntime,
    private readonly dependencyNames: readonly string[],
    private readonly series: readonly DependencySeries[],
    private readonly clock: Clock,
    private readonly continuations: Continuations,
    private readonly flow: SimFlowControl | undefined,
  ) {
    this.#written = dependencyNames.map(() => new Map());
    this.#hot = dependencyNames.map(() => new Set());
    this.#forgetAfterMs = 2 * (runtime.budgetWindowMs ?? 0);
    const settings = runtime.unused ?? runtime.budgets[0];
    this.#liftingSuccesses = settings ? Math.floor((settings.minAllowance + 1) / settings.ratio) : 0;
  }

  /** `budget` recorded a success for `d`: it has something to flush, and it wrote. */
  recordedSuccess(budget: SimBudget, d: number): void {
    this.#unflushed.add(budget);
    this.wrote(budget, d, false);
  }

  /** `budget` wrote for dependency `d` now: a retry decision (`retry`), or a success. */
  wrote(budget: SimBudget, d: number, retry: boolean): void {
    const now = this.clock.now();
    const uses = this.#written[d] as Map<SimBudget, BudgetUse>;
    let use = uses.get(budget);
    if (!use) {
      use = { at: now, retryAt: Number.NEGATIVE_INFINITY, successes: 0 };
      uses.set(budget, use);
    } else if (use.at + this.#forgetAfterMs <= now) {
      // The store forgot the dependency: this write starts its state afresh.
      use.retryAt = Number.NEGATIVE_INFINITY;
      use.successes = 0;
    }
    use.at = now;
    if (retry) use.retryAt = now;
    else use.successes++;
    if (retry || use.successes >= this.#liftingSuccesses) (this.#hot[d] as Set<SimBudget>).add(budget);
  }

  /**
   * Flushes the budgets that recorded successes, then lets flow control read them and samples them when
   * `sample`. Returns the flush's promise when one had to be awaited, `undefined` when all ran now.
   */
  flushAndSample(t: number, sample: boolean): Promise<void> | undefined {
    if (this.#unflushed.size === 0) {
      this.#afterFlush(t, sample);
      return undefined;
    }
    const flushing = [...this.#unflushed];
    this.#unflushed.clear();
    this.continuations.beforePromise();
    return flushAll(flushing).then(() => this.#afterFlush(t, sample));
  }

  /** Once the budgets hold every success: flow control's look at them, then the sample when one is due. */
  #afterFlush(t: number, sample: boolean): void {
    if (this.flow) this.#readForFlow(this.flow, t);
    if (sample) this.#sample(t);
  }

  /** Flow control reads the budget of a dependency its denials marked down: has it stopped denying? */
  #readForFlow(flow: SimFlowControl, t: number): void {
    const { dependencyNames, runtime } = this;
    for (let d = 0; d < dependencyNames.length; d++)
      if (flow.awaitsBudget(d))
        for (const budget of runtime.budgets)
          flow.budgetRead(d, budget.counts(dependencyNames[d] as string), t);
  }

  /**
   * Sums every budget's counts per dependency into the gauges. Budgets that are not `hot` for a dependency
   * (not built yet, idle for two windows, or holding only a few successes) read as an empty window each:
   * the floor, nothing spent, nothing denied.
   */
  #sample(t: number): void {
    const { dependencyNames, runtime } = this;
    const forgetAfterMs = this.#forgetAfterMs;
    const floor = runtime.unused?.minAllowance ?? runtime.budgets[0]?.minAllowance ?? 0;
    for (let d = 0; d < dependencyNames.length; d++) {
      const name = dependencyNames[d] as string;
      let allowance = 0;
      let spent = 0;
      let denied = 0;
      let empty = runtime.budgetCount;
      const uses = this.#written[d] as Map<SimBudget, BudgetUse>;
      const hot = this.#hot[d] as Set<SimBudget>;
      for (const budget of hot) {
        const use = uses.get(budget) as BudgetUse;
        const forgotten = use.at + forgetAfterMs <= t;
        if (forgotten || (use.retryAt + forgetAfterMs <= t && use.successes < this.#liftingSuccesses)) {
          hot.delete(budget);
          if (forgotten) uses.delete(budget);
          continue;
        }
        empty--;
        const counts = budget.counts(name);
        allowance += counts.allowance;
        spent += counts.spent;
        denied += counts.denied;
      }
      allowance += empty * floor;
      const s = this.series[d] as DependencySeries;
      s.allowance.set(t, allowance);
      s.spent.set(t, spent);
      s.denied.set(t, denied);
    }
  }
}

async function flushAll(flushing: readonly SimBudget[]): Promise<void> {
  for (const budget of flushing) {
    const flushed = budget.flush();
    if (flushed instanceof Promise) await flushed;
  }
}
