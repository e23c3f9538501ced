import { type Clock, systemClock } from '../common/clock.js';
import { DependencyState } from './dependency-state.js';
import type { BudgetStore, StoreRead, StoreSpend, StoreWrite } from './store.js';
import type { AgedSuccesses, BudgetWindow } from './window.js';

/**
 * A budget store in this process's memory, on an injectable clock. For one worker, tests and the simulator
 * (it makes a million decisions in well under a second); a fleet needs `RedisBudgetStore`, because a budget
 * kept per worker multiplies with the number of workers. It follows the same rules as every store
 * (window.ts): the first settings written for a dependency govern it until a higher `version` takes over.
 *
 * Defaults: `clock` is the system clock.
 *
 * @example
 * const clock = new FakeClock(0);
 * const budget = new RetryBudget({ store: new MemoryBudgetStore({ clock }) });
 */
export class MemoryBudgetStore implements BudgetStore {
  readonly remote = false;
  readonly #clock: Clock;
  readonly #states = new Map<string, DependencyState>();

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  trySpend(
    dependency: string,
    window: BudgetWindow,
    successes: readonly AgedSuccesses[],
    count: number,
  ): StoreSpend {
    return this.#state(dependency, window).write(this.#clock.now(), window, successes, count);
  }

  addSuccesses(dependency: string, successes: readonly AgedSuccesses[], window: BudgetWindow): StoreWrite {
    return this.#state(dependency, window).record(this.#clock.now(), window, successes);
  }

  read(dependency: string): StoreRead | undefined {
    return this.#states.get(dependency)?.read(this.#clock.now());
  }

  dependencies(): string[] {
    return [...this.#states.keys()].sort();
  }

  ping(): void {}

  #state(dependency: string, window: BudgetWindow): DependencyState {
    let state = this.#states.get(dependency);
    if (!state) {
      state = new DependencyState(window);
      this.#states.set(dependency, state);
    }
    return state;
  }
}
