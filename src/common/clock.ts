/**
 * A source of the current time in epoch milliseconds. Everything that needs "now" takes a Clock, so tests
 * and the simulator can run on virtual time instead of the wall clock.
 *
 * @example
 * const clock: Clock = systemClock;
 * const startedAt = clock.now();
 */
export interface Clock {
  now(): number;
}

/**
 * The wall clock (`Date.now()`). The only place in stormguard that reads it.
 *
 * @example
 * const budget = new RetryBudget({ store, clock: systemClock }); // the default when no clock is given
 */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

/**
 * A clock that moves only when told to: for tests and the simulator.
 *
 * @example
 * const clock = new FakeClock(0);
 * clock.advance(1_500);
 * clock.now(); // 1500
 */
export class FakeClock implements Clock {
  #now: number;

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  /** Moves time forward by `ms` (never backwards: a clock that goes back breaks every window). */
  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0)
      throw new RangeError(`FakeClock.advance: ms must be a finite number >= 0, got ${ms}`);
    this.#now += ms;
    return this.#now;
  }

  /** Sets the time; it may not go backwards. */
  set(ms: number): void {
    if (ms < this.#now)
      throw new RangeError(`FakeClock.set: time may not go backwards (${ms} < ${this.#now})`);
    this.#now = ms;
  }
}
