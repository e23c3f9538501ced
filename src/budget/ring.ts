import {
  type AgedSuccesses,
  addCount,
  type BudgetWindow,
  intDiv,
  mulDiv,
  oldestOverlapMs,
} from './window.js';

/** A ring's sums at one moment (see window.ts): successes and denials weighted, spend whole. */
export interface RingSums {
  successes: number;
  spent: number;
  denied: number;
}

/**
 * One configuration's ring of sub-buckets for one dependency, in memory: `buckets + 1` slots, each
 * remembering which bucket index it holds, so a slot left over from an older window is recognised (and
 * skipped when summing, reset when written) instead of counted. The arithmetic of window.ts.
 */
export class Ring {
  readonly #slots: number;
  readonly #index: Float64Array;
  readonly #successes: Float64Array;
  readonly #spent: Float64Array;
  readonly #denied: Float64Array;
  /** The newest bucket index written: time never goes backwards for a ring. */
  #last = Number.NEGATIVE_INFINITY;
  /** What `sums` returns, reused: read it before the next call. */
  readonly #sums: RingSums = { successes: 0, spent: 0, denied: 0 };

  constructor(readonly window: BudgetWindow) {
    this.#slots = window.buckets + 1;
    this.#index = new Float64Array(this.#slots).fill(Number.NaN);
    this.#successes = new Float64Array(this.#slots);
    this.#spent = new Float64Array(this.#slots);
    this.#denied = new Float64Array(this.#slots);
  }

  /** The bucket a write at `now` goes to (never older than the newest written), without writing. */
  currentAt(now: number): number {
    return Math.max(this.#last, intDiv(now, this.window.bucketMs));
  }

  /** Moves the ring to `now` and returns the current bucket index. */
  advance(now: number): number {
    const current = this.currentAt(now);
    this.#last = current;
    return current;
  }

  /** Adds aged successes (stamped `now − ageMs`); those older than the oldest bucket kept are dropped. */
  addSuccesses(successes: readonly AgedSuccesses[], now: number, current: number): void {
    const { bucketMs, buckets } = this.window;
    for (const { ageMs, count } of successes) {
      const bucket = Math.min(current, intDiv(Math.max(0, now - ageMs), bucketMs));
      if (current - bucket > buckets) continue;
      const slot = this.#slot(bucket);
      this.#successes[slot] = addCount(this.#successes[slot]!, count);
    }
  }

  /** Adds granted and denied retries to the current bucket. */
  addDecisions(granted: number, denied: number, current: number): void {
    const slot = this.#slot(current);
    this.#spent[slot] = addCount(this.#spent[slot]!, granted);
    this.#denied[slot] = addCount(this.#denied[slot]!, denied);
  }

  /** The sums of the window at `now`, `current` being {@link currentAt}(now), in an object reused by the next call. */
  sums(now: number, current: number): RingSums {
    const { bucketMs, buckets } = this.window;
    let successes = 0;
    let spent = 0;
    let denied = 0;
    let oldSuccesses = 0;
    let oldDenied = 0;
    for (let slot = 0; slot < this.#slots; slot++) {
      const age = current - this.#index[slot]!;
      if (!(age >= 0 && age <= buckets)) continue;
      spent = addCount(spent, this.#spent[slot]!);
      if (age < buckets) {
        successes = addCount(successes, this.#successes[slot]!);
        denied = addCount(denied, this.#denied[slot]!);
      } else {
        oldSuccesses = this.#successes[slot]!;
        oldDenied = this.#denied[slot]!;
      }
    }
    // An earlier time than the newest bucket counts as that bucket's start: the oldest bucket counts whole.
    const overlap = current > intDiv(now, bucketMs) ? bucketMs : oldestOverlapMs(now, bucketMs);
    const sums = this.#sums;
    sums.successes = addCount(successes, mulDiv(oldSuccesses, overlap, bucketMs));
    sums.spent = spent;
    sums.denied = addCount(denied, mulDiv(oldDenied, overlap, bucketMs));
    return sums;
  }

  /** The slot of bucket `bucket`, emptied first if it still holds an older bucket. */
  #slot(bucket: number): number {
    const slot = bucket % this.#slots;
    if (this.#index[slot] !== bucket) {
      this.#index[slot] = bucket;
      this.#successes[slot] = 0;
      this.#spent[slot] = 0;
      this.#denied[slot] = 0;
    }
    return slot;
  }
}
