import { type Clock, systemClock } from '../common/clock.js';
import { DependencyState } from './dependency-state.js';
import type { BudgetStore, StoreRead, StoreSpend, StoreWrite } from './store.js';
import type { AgedSuccesses, BudgetWindow } from './window.js';

const SWEEP_MIN_SIZE = 1_024;

/**
 * A budget store in this process's memory, on an injectable clock. For one worker, tests and the simulator
 * (it makes a million decisions in well under a second); a fleet needs `RedisBudgetStore`, because a budget
 * kept per worker multiplies with the number of workers. It follows the same rules as every store
 * (window.ts): the first settings written for a dependency govern it until a higher `version` takes over.
 * Memory is bounded: a dependency nothing wrote for two windows is forgotten (as a Redis key expires),
 * never one still in its window, so an endless stream of distinct names costs only the live ones.
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
  /** When each dependency's state expires if nothing writes it: as a Redis key's time to live. */
  readonly #expiresAt = new Map<string, number>();
  #sweepAtSize = SWEEP_MIN_SIZE;

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  trySpend(
    dependency: string,
    window: BudgetWindow,
    successes: readonly AgedSuccesses[],
    count: number,
  ): StoreSpend {
    const now = this.#clock.now();
    return this.#state(dependency, window, now).write(now, window, successes, count);
  }

  addSuccesses(dependency: string, successes: readonly AgedSuccesses[], window: BudgetWindow): StoreWrite {
    const now = this.#clock.now();
    return this.#state(dependency, window, now).record(now, window, successes);
  }

  read(dependency: string): StoreRead | undefined {
    const now = this.#clock.now();
    if ((this.#expiresAt.get(dependency) ?? Number.POSITIVE_INFINITY) <= now) this.#forget(dependency);
    return this.#states.get(dependency)?.read(now);
  }

  /** The dependencies this store holds live state for, sorted. */
  dependencies(): string[] {
    this.#sweep(this.#clock.now());
    return [...this.#states.keys()].sort();
  }

  ping(): void {}

  #state(dependency: string, window: BudgetWindow, now: number): DependencyState {
    let state = this.#states.get(dependency);
    if (state && (this.#expiresAt.get(dependency) as number) <= now) {
      this.#forget(dependency);
      state = undefined;
    }
    if (!state) {
      if (this.#states.size >= this.#sweepAtSize) this.#sweep(now);
      state = new DependencyState(window);
      this.#states.set(dependency, state);
    }
    // Every write keeps the state two windows (of the longest settings it has seen) past now, like the
    // Redis store's keys: by then every bucket in it has left the window, so forgetting it loses nothing.
    const keepMs = 2 * Math.max(window.windowMs, state.window.windowMs);
    this.#expiresAt.set(dependency, Math.max(this.#expiresAt.get(dependency) ?? 0, now + keepMs));
    return state;
  }

  #forget(dependency: string): void {
    this.#states.delete(dependency);
    this.#expiresAt.delete(dependency);
  }

  /**
   * Drops every expired state. Run when the number of dependencies doubles since the last sweep, so its
   * cost is spread over the writes that grew the map: memory stays within about twice the dependencies
   * written in the last two windows, however many distinct names pass through.
   */
  #sweep(now: number): void {
    for (const [dependency, expiresAt] of this.#expiresAt) if (expiresAt <= now) this.#forget(dependency);
    this.#sweepAtSize = Math.max(SWEEP_MIN_SIZE, 2 * this.#states.size);
  }
}
