import type { BudgetWindow, WindowCounts } from './window.js';

/**
 * A value now or later: in-process stores answer synchronously, so the hot path allocates no promise.
 *
 * @example
 * const spend: MaybePromise<StoreSpend> = store.trySpend('search', window, 0, 1);
 */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Whether a budget enforces its denials or only counts them (see `RetryBudget`'s `mode`).
 *
 * @example
 * const mode: BudgetMode = 'shadow';
 */
export type BudgetMode = 'enforce' | 'shadow';

/**
 * A store's answer to `trySpend`: how many of the retries asked for were granted, and the window's counts
 * after the call. Retries are decided one after another: each is granted iff spent < allowance (then
 * counted as spent), otherwise counted as denied, never as spent. The store knows nothing of shadow mode:
 * `RetryBudget` lets denied retries through in shadow mode, and the counts are the same either way.
 *
 * @example
 * const { granted } = await store.trySpend('search', window, 0, 3); // 0..3 of the 3 asked for
 */
export interface StoreSpend extends WindowCounts {
  granted: number;
}

/**
 * A store's answer to `read`: the counts and the settings they were computed with.
 *
 * @example
 * const read = await store.read('search'); // { allowance, spent, denied, successes, window }
 */
export interface StoreRead extends WindowCounts {
  window: BudgetWindow;
}

/**
 * Options of `BudgetStore.dependencies`.
 *
 * @example
 * await store.dependencies({ signal: AbortSignal.timeout(5_000) });
 */
export interface ListOptions {
  /** Stops the listing when aborted. Default: none (the listing runs to its end). */
  signal?: AbortSignal;
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
 * const spend = await store.trySpend('search', window, 0, 1); // { granted: 1, allowance: 10, ... }
 */
export interface BudgetStore {
  /**
   * True when calls cross the network. `RetryBudget` then batches successes locally, flushes them on an
   * interval, and bounds every call with its timeout; in-process stores are written through synchronously.
   */
  readonly remote: boolean;

  /**
   * Atomically: adds `pendingSuccesses` to the current bucket, computes the allowance, and decides `count`
   * retries one after another (several concurrent requests for one dependency can share one call).
   */
  trySpend(
    dependency: string,
    window: BudgetWindow,
    pendingSuccesses: number,
    count: number,
  ): MaybePromise<StoreSpend>;

  /** Adds `count` successes to the dependency's current bucket. */
  addSuccesses(dependency: string, count: number, window: BudgetWindow): MaybePromise<void>;

  /**
   * The dependency's counts without changing them, computed with `window` or, when omitted, with the
   * settings last used for it (how the CLI reads a budget it did not configure). `undefined` when the store
   * holds nothing for it.
   */
  read(dependency: string, window?: BudgetWindow): MaybePromise<StoreRead | undefined>;

  /**
   * Every dependency the store holds counts for, sorted. A remote store that walks its keys in steps stops
   * (and rejects with `signal.reason`) once `signal` is aborted: `RetryBudget` aborts a listing it gave up on.
   */
  dependencies(options?: ListOptions): MaybePromise<string[]>;

  /** Resolves when the store answers; used to notice that a remote store is back. */
  ping(): MaybePromise<void>;
}
