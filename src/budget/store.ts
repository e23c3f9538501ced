import type { BudgetWindow, WindowCounts } from './window.js';

/** A value now or later: in-process stores answer synchronously, so the hot path allocates no promise. */
export type MaybePromise<T> = T | Promise<T>;

/** Whether a budget enforces its denials or only counts them. */
export type BudgetMode = 'enforce' | 'shadow';

/**
 * What a store decided for one `trySpend`:
 * - `granted`: the retry fits; it was counted as spent.
 * - `denied`: it does not fit (enforce mode); counted as denied, never as spent.
 * - `would-deny`: it does not fit, but the budget is in shadow mode: counted as denied and let through
 *   without being counted as spent, so later decisions match what enforce mode would have made.
 */
export type SpendOutcome = 'granted' | 'denied' | 'would-deny';

/** A store's answer to `trySpend`: the outcome and the window's counts after it. */
export interface StoreSpend extends WindowCounts {
  outcome: SpendOutcome;
}

/** A store's answer to `read`: the counts and the settings they were computed with. */
export interface StoreRead extends WindowCounts {
  window: BudgetWindow;
}

/**
 * Where budget counters live. `RetryBudget` owns the settings and passes them on every call; a store only
 * keeps counts per dependency and applies the window arithmetic of `window.ts` atomically.
 *
 * Implementations: `MemoryBudgetStore` (one process) and `RedisBudgetStore` (`stormguard/redis`, a fleet).
 * Every implementation must pass the conformance suite in `store.case.ts`.
 *
 * @example
 * const store: BudgetStore = new MemoryBudgetStore();
 * const spend = await store.trySpend('search', window, 'enforce', 0);
 */
export interface BudgetStore {
  /**
   * True when calls cross the network. `RetryBudget` then batches successes locally, flushes them on an
   * interval, and bounds every call with its timeout; in-process stores are written through synchronously.
   */
  readonly remote: boolean;

  /**
   * Atomically: adds `pendingSuccesses` to the current bucket, computes the allowance, and grants the retry
   * iff spent < allowance (spent + 1), otherwise counts a denial (never spent).
   */
  trySpend(
    dependency: string,
    window: BudgetWindow,
    mode: BudgetMode,
    pendingSuccesses: number,
  ): MaybePromise<StoreSpend>;

  /** Adds `count` successes to the dependency's current bucket. */
  addSuccesses(dependency: string, count: number, window: BudgetWindow): MaybePromise<void>;

  /**
   * The dependency's counts without changing them, computed with `window` or, when omitted, with the
   * settings last used for it (how the CLI reads a budget it did not configure). `undefined` when the store
   * holds nothing for it.
   */
  read(dependency: string, window?: BudgetWindow): MaybePromise<StoreRead | undefined>;

  /** Every dependency the store holds counts for, sorted. */
  dependencies(): MaybePromise<string[]>;

  /** Resolves when the store answers; used to notice that a remote store is back. */
  ping(): MaybePromise<void>;
}
