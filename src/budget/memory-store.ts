import { type Clock, systemClock } from '../common/clock.js';
import type { BudgetStore, StoreRead, StoreSpend } from './store.js';
import { allowanceFor, type BudgetWindow, intDiv, oldestOverlapMs, weighted } from './window.js';

/**
 * One dependency's ring of sub-buckets: `buckets + 1` slots, each remembering which bucket index it holds,
 * so a slot left over from an older window is recognised and reset instead of counted.
 */
class Ring {
  readonly index: Float64Array;
  readonly successes: Float64Array;
  readonly spent: Float64Array;
  readonly denied: Float64Array;
  /** The settings last used for this dependency (what `read()` without settings computes with). */
  window: BudgetWindow | undefined;
  /** The newest bucket index written: time never goes backwards for a dependency (as in the Lua scripts). */
  last = Number.NEGATIVE_INFINITY;

  constructor(
    readonly bucketMs: number,
    readonly buckets: number,
  ) {
    const slots = buckets + 1;
    this.index = new Float64Array(slots).fill(Number.NaN);
    this.successes = new Float64Array(slots);
    this.spent = new Float64Array(slots);
    this.denied = new Float64Array(slots);
  }

  /** The slot of bucket `current`, emptied first if it still holds an older bucket. */
  slot(current: number): number {
    const slot = current % (this.buckets + 1);
    if (this.index[slot] !== current) {
      this.index[slot] = current;
      this.successes[slot] = 0;
      this.spent[slot] = 0;
      this.denied[slot] = 0;
    }
    return slot;
  }
}

/** Scratch sums, reused across calls so the hot path allocates nothing but its result. */
interface Sums {
  successes: number;
  spent: number;
  denied: number;
}

/**
 * A budget store in this process's memory, on an injectable clock. For one worker, tests and the simulator
 * (it makes a million decisions in well under a second); a fleet needs `RedisBudgetStore`, because a budget
 * kept per worker multiplies with the number of workers.
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
  readonly #rings = new Map<string, Ring>();
  readonly #sums: Sums = { successes: 0, spent: 0, denied: 0 };

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  trySpend(dependency: string, window: BudgetWindow, pendingSuccesses: number, count: number): StoreSpend {
    const now = this.#clock.now();
    const ring = this.#ring(dependency, window);
    const current = this.#advance(ring, now);
    const slot = ring.slot(current);
    ring.successes[slot]! += pendingSuccesses;
    const sums = this.#sum(ring, current, now);
    const allowance = allowanceFor(sums.successes, window.ratioPpm, window.minAllowance);
    const granted = Math.min(count, Math.max(0, allowance - sums.spent));
    ring.spent[slot]! += granted;
    ring.denied[slot]! += count - granted;
    return {
      granted,
      allowance,
      spent: sums.spent + granted,
      denied: sums.denied + count - granted,
      successes: sums.successes,
    };
  }

  addSuccesses(dependency: string, count: number, window: BudgetWindow): void {
    const ring = this.#ring(dependency, window);
    const slot = ring.slot(this.#advance(ring, this.#clock.now()));
    ring.successes[slot]! += count;
  }

  read(dependency: string, window?: BudgetWindow): StoreRead | undefined {
    const ring = this.#rings.get(dependency);
    const used = window ?? ring?.window;
    if (!used || !ring || ring.bucketMs !== used.bucketMs || ring.buckets !== used.buckets) return undefined;
    const now = this.#clock.now();
    const sums = this.#sum(ring, Math.max(ring.last, intDiv(now, used.bucketMs)), now);
    return {
      allowance: allowanceFor(sums.successes, used.ratioPpm, used.minAllowance),
      spent: sums.spent,
      denied: sums.denied,
      successes: sums.successes,
      window: used,
    };
  }

  dependencies(): string[] {
    return [...this.#rings.keys()].sort();
  }

  ping(): void {}

  /** The dependency's ring; a new (empty) one when its bucket geometry changed. */
  #ring(dependency: string, window: BudgetWindow): Ring {
    let ring = this.#rings.get(dependency);
    if (!ring || ring.bucketMs !== window.bucketMs || ring.buckets !== window.buckets) {
      ring = new Ring(window.bucketMs, window.buckets);
      this.#rings.set(dependency, ring);
    }
    ring.window = window;
    return ring;
  }

  /** The bucket index to write at `now`: never older than the newest one written. */
  #advance(ring: Ring, now: number): number {
    const current = intDiv(now, ring.bucketMs);
    if (current < ring.last) return ring.last;
    ring.last = current;
    return current;
  }

  /** Sums the window ending at `now`: whole buckets plus the oldest one weighted by its overlap. */
  #sum(ring: Ring, current: number, now: number): Sums {
    const { buckets, bucketMs } = ring;
    let successes = 0;
    let spent = 0;
    let denied = 0;
    let oldSuccesses = 0;
    let oldSpent = 0;
    let oldDenied = 0;
    for (let slot = 0; slot <= buckets; slot++) {
      const age = current - ring.index[slot]!;
      if (age >= 0 && age < buckets) {
        successes += ring.successes[slot]!;
        spent += ring.spent[slot]!;
        denied += ring.denied[slot]!;
      } else if (age === buckets) {
        oldSuccesses = ring.successes[slot]!;
        oldSpent = ring.spent[slot]!;
        oldDenied = ring.denied[slot]!;
      }
    }
    // An earlier time than the newest bucket counts as that bucket's start: the oldest bucket counts whole.
    const overlap = current > intDiv(now, bucketMs) ? bucketMs : oldestOverlapMs(now, bucketMs);
    const sums = this.#sums;
    sums.successes = successes + weighted(oldSuccesses, overlap, bucketMs, false);
    sums.spent = spent + weighted(oldSpent, overlap, bucketMs, true);
    sums.denied = denied + weighted(oldDenied, overlap, bucketMs, false);
    return sums;
  }
}
