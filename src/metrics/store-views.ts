import { type ResolvedBreakerOptions, resolveBreakerOptions } from '../breaker/options.js';
import type { BreakerListing, ListedBreaker } from '../breaker/types.js';
import type { BudgetStore } from '../budget/store.js';
import type { BudgetEvents } from '../budget/types.js';
import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { budgetStatusOf } from '../status/budget.js';
import { breakersOf, budgetsOf, readFleetStatus } from '../status/read-fleet-status.js';
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
    // The fleet-status read model's listing and per-dependency read: the CLI and the console show the same.
    dependencies: async () =>
      budgetsOf(await readFleetStatus({ budget: store }, { throwOnError: true })).map((b) => b.dependency),
    state: async (dependency) => {
      const row = await budgetStatusOf(store, dependency);
      // One unreadable dependency leaves the others' metrics alone.
      if (!row || row.unreadable !== undefined) return undefined;
      return {
        dependency,
        allowance: row.allowance,
        spent: row.spent,
        denied: row.denied,
        successes: row.successes,
        windowMs: row.windowMs,
        degraded: false,
        ratio: row.ratio,
        minAllowance: row.minAllowance,
      };
    },
  };
}

/** What {@link readOnlyBreaker} needs: every breaker store (`RedisBreakerStore`, …) is one. */
export interface ListableBreakerStore extends BreakerListing {
  read(
    dependency: string,
    options: ResolvedBreakerOptions,
  ): Promise<{ state: BreakerStateName; degraded?: boolean }>;
}

/**
 * Breakers seen only through their store: no events. The listing (the store's registry) runs at most every
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
  let fresh: Map<string, ListedBreaker> | undefined;
  return {
    events: new EventBus<BreakerStateEvents>(),
    dependencies: async () => {
      fresh = undefined;
      if (clock.now() - listedAtMs < listIntervalMs) return [...known.keys()];
      listedAtMs = clock.now();
      const listed = breakersOf(await readFleetStatus({ breaker: store }, { throwOnError: true }));
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
