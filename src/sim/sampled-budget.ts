import { MemoryBudgetStore } from '../budget/memory-store.js';
import type { RetryBudgetOptions } from '../budget/options.js';
import { RetryBudget } from '../budget/retry-budget.js';
import type { WindowCounts } from '../budget/window.js';
import type { Clock } from '../common/clock.js';
import { DeferredSuccessStore } from './deferred-budget-store.js';

/**
 * stormguard's `RetryBudget` over a `MemoryBudgetStore` of its own (or a {@link DeferredSuccessStore}),
 * which the engine samples once per second and dependency. `counts` answers synchronously what `state()`
 * would resolve to on that store (its read, or an empty window), so sampling a day costs no promise per read.
 */
export class SampledBudget extends RetryBudget {
  /** Its store is in this process: a success is written at once, and `flush` has nothing to push. */
  readonly inProcess = true;
  readonly #store: MemoryBudgetStore | DeferredSuccessStore;
  /** What a dependency the store holds nothing for reads as. */
  readonly #empty: WindowCounts;

  /**
   * `deferSuccesses`: the store applies success writes only when the dependency is read (a
   * {@link DeferredSuccessStore}); the same answers, for a budget that mostly records successes nobody reads.
   */
  constructor(options: Omit<RetryBudgetOptions, 'store' | 'clock'>, clock: Clock, deferSuccesses = false) {
    const store = deferSuccesses ? new DeferredSuccessStore(clock) : new MemoryBudgetStore({ clock });
    super({ ...options, store, clock });
    this.#store = store;
    this.#empty = Object.freeze({ allowance: this.minAllowance, spent: 0, denied: 0, successes: 0 });
  }

  /**
   * On a {@link DeferredSuccessStore}, the success is logged as `RetryBudget.recordSuccess` would write it
   * (`[{ ageMs: 0, count }]` with this budget's settings) once the store has seen a first write from it;
   * what `recordSuccess` does besides (checking the name, which the scenario's parsing checked, and noting
   * settings that are this budget's own) changes nothing here. Otherwise, `RetryBudget.recordSuccess`.
   */
  override recordSuccess(dependency: string, count = 1): void {
    const store = this.#store;
    if (store instanceof DeferredSuccessStore && store.logSuccess(dependency, count)) return;
    super.recordSuccess(dependency, count);
  }

  /** The dependency's counts now, as `state(dependency)` reports them. */
  counts(dependency: string): WindowCounts {
    return this.#store.read(dependency) ?? this.#empty;
  }
}
