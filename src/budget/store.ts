import type { AgedSuccesses, BudgetWindow, WindowCounts } from './window.js';

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
 * The settings a store applied: those stored with the dependency's state (see window.ts), not
 * necessarily the caller's.
 *
 * @example
 * if (!sameSettings(spend.window, mine)) log('overruled by the stored settings');
 */
export interface StoreSettings {
  /** The governing settings: every count and decision of the reply was computed with them. */
  window: BudgetWindow;
  /** Settings of a higher version taking over once they hold a whole window of counts. */
  pending?: BudgetWindow;
  /**
   * Set when the dependency's stored state could not be read (corrupt, or written by another version) and
   * was replaced by fresh state: says what was wrong. Only that dependency is affected.
   */
  reset?: string;
}

/**
 * A store's answer to `trySpend`: how many of the retries asked for were granted, and the window's counts
 * after the call. Retries are decided one after another: each is granted iff spent < allowance (then
 * counted as spent), otherwise counted as denied, never as spent. The store knows nothing of shadow mode:
 * `RetryBudget` lets denied retries through in shadow mode, and the counts are the same either way.
 *
 * @example
 * const { granted } = await store.trySpend('search', window, [], 3); // 0..3 of the 3 asked for
 */
export interface StoreSpend extends WindowCounts, StoreSettings {
  granted: number;
}

/**
 * A store's answer to `addSuccesses`: the settings it applied.
 *
 * @example
 * const { window } = await store.addSuccesses('search', [{ ageMs: 0, count: 5 }], mine);
 */
export type StoreWrite = StoreSettings;

/**
 * The settings part of a spend: what a remote store's `addSuccesses` answers when it writes successes
 * through a `trySpend` of no retries.
 *
 * @example
 * const write = settingsOf(await store.trySpend('search', window, successes, 0)); // { window, pending?, reset? }
 */
export function settingsOf({ window, pending, reset }: StoreSpend): StoreWrite {
  const settings: StoreWrite = { window };
  if (pending) settings.pending = pending;
  if (reset !== undefined) settings.reset = reset;
  return settings;
}

/**
 * A store's answer to `read`: the counts and the governing settings they were computed with.
 *
 * @example
 * const read = await store.read('search'); // { allowance, spent, denied, successes, window }
 */
export interface StoreRead extends WindowCounts {
  window: BudgetWindow;
  pending?: BudgetWindow;
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
 * Where budget counters live. `RetryBudget` passes its settings on every call; a store keeps, per
 * dependency, the governing settings and the counts, and applies the rules and arithmetic of `window.ts`
 * atomically, on its own clock.
 *
 * Implementations: `MemoryBudgetStore` (one process) and `RedisBudgetStore` (`stormguard/redis`, a fleet).
 * Every implementation must pass the conformance suite in `store.case.ts`.
 *
 * @example
 * const store: BudgetStore = new MemoryBudgetStore();
 * const spend = await store.trySpend('search', window, [], 1); // { granted: 1, allowance: 10, ... }
 */
export interface BudgetStore {
  /**
   * True when calls cross the network. `RetryBudget` then batches successes locally, flushes them on an
   * interval, and bounds every call with its timeout; in-process stores are written through synchronously.
   */
  readonly remote: boolean;

  /**
   * Atomically: applies the caller's settings (window.ts), adds the aged successes, computes the allowance,
   * and decides `count` retries one after another (several concurrent requests for one dependency can
   * share one call).
   */
  trySpend(
    dependency: string,
    window: BudgetWindow,
    successes: readonly AgedSuccesses[],
    count: number,
  ): MaybePromise<StoreSpend>;

  /** Applies the caller's settings and adds the aged successes. */
  addSuccesses(
    dependency: string,
    successes: readonly AgedSuccesses[],
    window: BudgetWindow,
  ): MaybePromise<StoreWrite>;

  /**
   * The dependency's counts without changing them, computed with the governing settings stored with them
   * (so the CLI reads a budget it did not configure). `undefined` when the store holds nothing for it.
   * Rejects with a `CorruptBudgetStateError` when the stored state cannot be read (other dependencies are
   * unaffected).
   */
  read(dependency: string): MaybePromise<StoreRead | undefined>;

  /**
   * Every dependency the store holds counts for, sorted. A remote store that walks its keys in steps stops
   * (and rejects with `signal.reason`) once `signal` is aborted: `RetryBudget` aborts a listing it gave up on.
   */
  dependencies(options?: ListOptions): MaybePromise<string[]>;

  /** Resolves when the store answers; used to notice that a remote store is back. */
  ping(): MaybePromise<void>;
}
