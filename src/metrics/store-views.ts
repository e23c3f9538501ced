import type { BudgetStore } from '../budget/store.js';
import type { BudgetEvents } from '../budget/types.js';
import { PPM } from '../budget/window.js';
import { EventBus } from '../common/events.js';
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
      const read = await store.read(dependency);
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

/**
 * Breakers seen only through their store's listing (read once per scrape): no events.
 *
 * @example
 * metrics.observeBreaker(readOnlyBreaker(new RedisBreakerStore({ redis })));
 */
export function readOnlyBreaker(store: {
  list(): Promise<readonly { dependency: string; state: BreakerStateName }[]>;
}): ObservableBreaker {
  // The scrape asks for the dependencies first, then for each state: one listing serves them all.
  let listing: Promise<readonly { dependency: string; state: BreakerStateName }[]> | undefined;
  return {
    events: new EventBus<BreakerStateEvents>(),
    dependencies: async () => {
      listing = store.list();
      return (await listing).map((b) => b.dependency);
    },
    state: async (dependency) => {
      const found = (await (listing ?? store.list())).find((b) => b.dependency === dependency);
      return found && { state: found.state };
    },
  };
}
