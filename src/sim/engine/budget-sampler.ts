import type { Clock } from '../../common/clock.js';
import type { Continuations } from './continuations.js';
import type { SimFlowControl } from './flow.js';
import type { DependencySeries } from './recorder.js';
import type { SimBudget, StrategyRuntime } from './runtime.js';

/** The largest table of uses filled up front: 2^24 entries (128 MB); beyond it, a sparse array. */
const USES_PREFILLED = 1 << 24;

/** Sub-buckets whose writes a use remembers (one bit each): windows of up to 30 sub-buckets are tracked. */
const REMEMBERED_BUCKETS = 31;

/** What one budget wrote for one dependency (see {@link BudgetSampler.wrote}), and what it last read. */
interface BudgetUse {
  budget: SimBudget;
  d: number;
  /** Virtual time of its last write. */
  at: number;
  /**
   * From this time on, the retries it decided (spent or denied) have left its window: the end of the
   * bucket after the window that began with the last one (a sliding window counts whole sub-buckets).
   */
  retriesClearAt: number;
  /** Successes it recorded since its store began the dependency's state. */
  successes: number;
  /** The sub-bucket of its last write, and one bit per sub-bucket before it that it wrote (bit k: k before). */
  lastBucket: number;
  written: number;
  /** True while its counts are in its dependency's sums (`tracked`): from its first write that can lift it off an empty window. */
  tracked: boolean;
  /** Its counts when last read, as they are in the sums. */
  allowance: number;
  spent: number;
  denied: number;
  /** The sub-bucket at whose start it is due to be read again (-1: none), and whether it is due at the next sample. */
  dueBucket: number;
  dueNext: boolean;
}

/** One dependency's sums of the tracked budgets' last reads, and how many budgets are tracked. */
interface DependencySums {
  allowance: number;
  spent: number;
  denied: number;
  tracked: number;
}

/**
 * The strategy's budgets seen from the engine: which have successes to flush, the flush itself, and the
 * once-per-bin sample of their allowance, spend and denials into the dependencies' gauges (and, under
 * flow control, the read that tells the gate a budget stopped denying).
 *
 * A budget's counts for a dependency change only when it writes (a success, a retry decision) or when a
 * sub-bucket it wrote slides to the window's edge, where it counts in part and then drops out. So each
 * budget's last read is kept in running sums per dependency, and a budget is read again only then: after
 * a write, at the start of the sub-bucket in which one of its written sub-buckets becomes the oldest, and
 * at every sample while it is (its part changes by the millisecond). A budget that holds nothing that can
 * lift it off an empty window (no retry in the window, too few successes) is left out of the sums and
 * counted as the floor with nothing spent: a fleet of per-worker budgets then costs what its busy workers
 * write, not its size times the seconds. Budgets are told apart by the worker that uses them (0 for a
 * budget every worker shares), so tracking a write is an array index, not a map lookup.
 *
 * @example
 * const sampler = new BudgetSampler(runtime, names, recorder.series, clock, continuations, flow);
 * sampler.wrote(budget, worker, d, false); // after budget.recordSuccess(name)
 * await sampler.flushAndSample(t, true);
 */
export class BudgetSampler {
  /**
   * Budgets with successes recorded since the last flush: only they have anything to push. A flush of the
   * others does nothing, and a fleet of per-worker budgets would pay for one each tick; a budget whose store
   * is in this process (`inProcess`) wrote each success at once and is never flushed.
   */
  readonly #unflushed = new Set<SimBudget>();
  /** Per budget and dependency (`key × dependencies + d`), what the budget wrote for it. */
  readonly #uses: (BudgetUse | undefined)[];
  /** Per dependency, the sums of the tracked budgets' last reads, and how many are tracked. */
  readonly #sums: DependencySums[];
  /** Uses to read at the next sample (a write, or a sub-bucket at the window's edge). */
  #dueNext: BudgetUse[] = [];
  /** Uses to read at the start of a sub-bucket, by sub-bucket. */
  readonly #dueAt = new Map<number, BudgetUse[]>();
  /** The last sub-bucket whose due reads were taken. */
  #sampledBucket = Number.NEGATIVE_INFINITY;
  readonly #forgetAfterMs: number;
  readonly #bucketMs: number;
  readonly #buckets: number;
  /** Fewer successes than this leave the allowance at its floor: floor(successes × ratio) <= minAllowance. */
  readonly #liftingSuccesses: number;
  /** True when every worker has a budget of its own (told apart by worker); false for one shared budget. */
  readonly #perWorker: boolean;

  constructor(
    private readonly runtime: StrategyRuntime,
    private readonly dependencyNames: readonly string[],
    private readonly series: readonly DependencySeries[],
    private readonly clock: Clock,
    private readonly continuations: Continuations,
    private readonly flow: SimFlowControl | undefined,
  ) {
    this.#sums = dependencyNames.map(() => ({ allowance: 0, spent: 0, denied: 0, tracked: 0 }));
    this.#forgetAfterMs = 2 * (runtime.budgetWindowMs ?? 0);
    this.#perWorker = runtime.budgetCount > 1;
    // Filled up front so V8 keeps it a flat array (written out of order, it would not).
    const uses = (this.#perWorker ? runtime.budgetCount : 1) * dependencyNames.length;
    this.#uses = uses <= USES_PREFILLED ? new Array<BudgetUse | undefined>(uses).fill(undefined) : [];
    const settings = runtime.unused ?? runtime.budgets[0];
    this.#liftingSuccesses = settings ? Math.floor((settings.minAllowance + 1) / settings.ratio) : 0;
    this.#bucketMs = settings ? settings.windowMs / settings.buckets : 1;
    this.#buckets = settings ? settings.buckets : 0;
  }

  /** `budget` (worker `worker`'s) recorded a success for `d`: it has something to flush, and it wrote. */
  recordedSuccess(budget: SimBudget, worker: number, d: number): void {
    if (budget.inProcess !== true) this.#unflushed.add(budget);
    this.wrote(budget, worker, d, false);
  }

  /** `budget` (worker `worker`'s) wrote for dependency `d` now: a retry decision (`retry`), or a success. */
  wrote(budget: SimBudget, worker: number, d: number, retry: boolean): void {
    const now = this.clock.now();
    const index = (this.#perWorker ? worker : 0) * this.dependencyNames.length + d;
    let use = this.#uses[index];
    if (use === undefined) {
      use = {
        budget,
        d,
        at: now,
        retriesClearAt: Number.NEGATIVE_INFINITY,
        successes: 0,
        lastBucket: Number.NEGATIVE_INFINITY,
        written: 0,
        tracked: false,
        allowance: 0,
        spent: 0,
        denied: 0,
        dueBucket: -1,
        dueNext: false,
      };
      this.#uses[index] = use;
    } else if (use.at + this.#forgetAfterMs <= now) {
      // The store forgot the dependency: this write starts its state afresh.
      use.retriesClearAt = Number.NEGATIVE_INFINITY;
      use.successes = 0;
    }
    use.at = now;
    const bucket = Math.floor(now / this.#bucketMs);
    const gap = bucket - use.lastBucket;
    if (gap > 0) {
      use.written = gap > REMEMBERED_BUCKETS ? 1 : ((use.written << gap) | 1) >>> 0;
      use.lastBucket = bucket;
    }
    if (retry) use.retriesClearAt = (bucket + this.#buckets + 1) * this.#bucketMs;
    else use.successes++;
    if (!use.tracked && (retry || use.successes >= this.#liftingSuccesses)) {
      use.tracked = true;
      const sums = this.#sums[d] as DependencySums;
      sums.tracked++;
    }
    if (use.tracked && !use.dueNext) {
      use.dueNext = true;
      this.#dueNext.push(use);
    }
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
   * Writes the sums into the gauges, after reading the budgets that are due (see the class comment). A
   * budget not tracked for a dependency (not built yet, idle for two windows, or whose retries have left
   * the window and which holds only a few successes) reads as an empty window: the floor, nothing spent,
   * nothing denied.
   */
  #sample(t: number): void {
    const { dependencyNames, runtime } = this;
    const bucket = Math.floor(t / this.#bucketMs);
    const due = this.#dueNext;
    this.#dueNext = [];
    for (const use of due) {
      use.dueNext = false;
      this.#read(use, t, bucket);
    }
    // The sub-buckets begun since the last sample (after a quiet spell, the keys due are fewer).
    const begun =
      bucket - this.#sampledBucket <= this.#dueAt.size
        ? Array.from({ length: bucket - this.#sampledBucket }, (_, i) => this.#sampledBucket + 1 + i)
        : [...this.#dueAt.keys()].filter((b) => b <= bucket);
    for (const b of begun) {
      const atStart = this.#dueAt.get(b);
      if (atStart === undefined) continue;
      this.#dueAt.delete(b);
      for (const use of atStart) if (use.dueBucket === b && !use.dueNext) this.#read(use, t, bucket);
    }
    this.#sampledBucket = bucket;
    const floor = runtime.unused?.minAllowance ?? runtime.budgets[0]?.minAllowance ?? 0;
    for (let d = 0; d < dependencyNames.length; d++) {
      const sums = this.#sums[d] as DependencySums;
      const s = this.series[d] as DependencySeries;
      s.allowance.set(t, sums.allowance + (runtime.budgetCount - sums.tracked) * floor);
      s.spent.set(t, sums.spent);
      s.denied.set(t, sums.denied);
    }
  }

  /**
   * Reads a tracked use's counts into its dependency's sums (or drops it from them when it can no longer
   * lift off an empty window), and says when it is due again.
   */
  #read(use: BudgetUse, t: number, bucket: number): void {
    use.dueBucket = -1;
    if (!use.tracked) return;
    const sums = this.#sums[use.d] as DependencySums;
    sums.allowance -= use.allowance;
    sums.spent -= use.spent;
    sums.denied -= use.denied;
    const forgotten = use.at + this.#forgetAfterMs <= t;
    if (forgotten || (use.retriesClearAt <= t && use.successes < this.#liftingSuccesses)) {
      use.tracked = false;
      use.allowance = 0;
      use.spent = 0;
      use.denied = 0;
      sums.tracked--;
      return;
    }
    const counts = use.budget.counts(this.dependencyNames[use.d] as string);
    use.allowance = counts.allowance;
    use.spent = counts.spent;
    use.denied = counts.denied;
    sums.allowance += counts.allowance;
    sums.spent += counts.spent;
    sums.denied += counts.denied;
    this.#schedule(use, bucket);
  }

  /**
   * When a use's counts can next change without a write: at every sample while a sub-bucket it wrote is
   * the window's oldest (counted in part, by the millisecond), else at the start of the sub-bucket in which
   * the oldest one it wrote still inside the window becomes the oldest; never when it wrote none. A window
   * of more sub-buckets than a use remembers is read at every sample.
   */
  #schedule(use: BudgetUse, bucket: number): void {
    const buckets = this.#buckets;
    const oldest = bucket - buckets;
    if (buckets >= REMEMBERED_BUCKETS || isWritten(use, oldest)) {
      use.dueNext = true;
      this.#dueNext.push(use);
      return;
    }
    for (let b = oldest + 1; b <= use.lastBucket; b++) {
      if (!isWritten(use, b)) continue;
      const at = b + buckets;
      use.dueBucket = at;
      const list = this.#dueAt.get(at);
      if (list) list.push(use);
      else this.#dueAt.set(at, [use]);
      return;
    }
  }
}

/** Whether `use` wrote in sub-bucket `bucket` (within the sub-buckets it remembers). */
function isWritten(use: BudgetUse, bucket: number): boolean {
  const k = use.lastBucket - bucket;
  return k >= 0 && k < REMEMBERED_BUCKETS && ((use.written >>> k) & 1) === 1;
}

async function flushAll(flushing: readonly SimBudget[]): Promise<void> {
  for (const budget of flushing) {
    const flushed = budget.flush();
    if (flushed instanceof Promise) await flushed;
  }
}
