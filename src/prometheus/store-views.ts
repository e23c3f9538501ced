import { type ResolvedBreakerOptions, resolveBreakerOptions } from '../breaker/options.js';
import type { BudgetStore } from '../budget/store.js';
import type { BudgetEvents } from '../budget/types.js';
import { PPM } from '../budget/window.js';
import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { isCorruptBudgetStateError } from '../errors/corrupt-budget-state-error.js';
import type { BreakerStateEvents, BreakerStateName, ObservableBreaker, ObservableBudget } from './sources.js';

/**
 * A budget seen only through its store: no events, and each dependency's state as the store holds it,
 * with the settings the fleet last used for it (ratio, floor, window). What an exporter that runs no
 * worker (`stormguard metrics serve`) observes.
 *
 * @example
 * metrics.observeBudget(readOnlyBudget(new RedisBudgetStore({ redis })));
 */
export function readOnlyBudget(store: Pick<BudgetStore, 'read' | 'dependencies'>): ObservableBudget {
  return {
    events: new EventBus<BudgetEvents>(),
    dependencies: () => store.dependencies(),
    state: async (dependency) => {
      // One unreadable dependency leaves the others' metrics alone.
      const read = await Promise.resolve()
        .then(() => store.read(dependency))
        .catch((error: unknown) => {
          if (isCorruptBudgetStateError(error)) return undefined;
          throw error;
        });
      if (!read) return undefined;
      return {
        dependency,
        allowance: read.allowance,
        spent: read.spent,
        denied: read.denied,
        successes: read.successes,
        windowMs: read.window.windowMs,
        degraded: false,
        ratio: read.window.ratioPpm / PPM,
        minAllowance: read.window.minAllowance,
      };
    },
  };
}

/** A breaker as a store lists it (`RedisBreakerStore.list()`). */
interface ListedBreakerLike {
  dependency: string;
  state: BreakerStateName;
  degraded?: boolean;
  options?: ResolvedBreakerOptions;
}

/** What {@link readOnlyBreaker} needs: `RedisBreakerStore` is one. */
export interface ListableBreakerStore {
  list(): Promise<readonly ListedBreakerLike[]>;
  read(
    dependency: string,
    options: ResolvedBreakerOptions,
  ): Promise<{ state: BreakerStateName; degraded?: boolean }>;
}

/**
 * Breakers seen only through their store: no events. The listing (a SCAN) runs at most every
 * `listIntervalMs` (default 60 000); between listings each known breaker is read on its own, with the
 * options the fleet stored for it.
 *
 * @example
 * metrics.observeBreaker(readOnlyBreaker(new RedisBreakerStore({ redis }), { listIntervalMs: 15_000 }));
 */
export function readOnlyBreaker(
  store: ListableBreakerStore,
  options: { listIntervalMs?: number; clock?: Clock } = {},
): ObservableBreaker {
  const listIntervalMs = options.listIntervalMs ?? 60_000;
  const clock = options.clock ?? systemClock;
  const known = new Map<string, ResolvedBreakerOptions | undefined>();
  let listedAtMs = Number.NEGATIVE_INFINITY;
  // The listing of the current scrape, when it ran one: its states are fresh, no need to read again.
  let fresh: Map<string, ListedBreakerLike> | undefined;
  return {
    events: new EventBus<BreakerStateEvents>(),
    dependencies: async () => {
      fresh = undefined;
      if (clock.now() - listedAtMs < listIntervalMs) return [...known.keys()];
      listedAtMs = clock.now();
      const listed = await store.list();
      fresh = new Map(listed.map((b) => [b.dependency, b]));
      for (const b of listed) known.set(b.dependency, b.options);
      return [...known.keys()];
    },
    state: async (dependency) => {
      const listed = fresh?.get(dependency);
      if (listed) return listed;
      if (!known.has(dependency)) return undefined;
      return store.read(dependency, known.get(dependency) ?? resolveBreakerOptions());
    },
  };
}
