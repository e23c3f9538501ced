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
  /**
   * Four columns of `#slots` each, in one array (one allocation per ring: a fleet of per-worker budgets
   * builds rings by the million): the bucket index each slot holds, then its successes, spent and denied.
   */
  readonly #data: Float64Array;
  /** The newest bucket index written: time never goes backwards for a ring. */
  #last = Number.NEGATIVE_INFINITY;
  /** What `sums` returns, reused: read it before the next call. */
  readonly #sums: RingSums = { successes: 0, spent: 0, denied: 0 };

  constructor(readonly window: BudgetWindow) {
    this.#slots = window.buckets + 1;
    this.#data = new Float64Array(4 * this.#slots);
    this.#data.fill(Number.NaN, 0, this.#slots);
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
      const at = this.#slots + this.#slot(bucket);
      this.#data[at] = addCount(this.#data[at]!, count);
    }
  }

  /** Adds granted and denied retries to the current bucket. */
  addDecisions(granted: number, denied: number, current: number): void {
    const slot = this.#slot(current);
    const data = this.#data;
    const n = this.#slots;
    data[2 * n + slot] = addCount(data[2 * n + slot]!, granted);
    data[3 * n + slot] = addCount(data[3 * n + slot]!, denied);
  }

  /** The sums of the window at `now`, `current` being {@link currentAt}(now), in an object reused by the next call. */
  sums(now: number, current: number): RingSums {
    const { bucketMs, buckets } = this.window;
    let successes = 0;
    let spent = 0;
    let denied = 0;
    let oldSuccesses = 0;
    let oldDenied = 0;
    const data = this.#data;
    const n = this.#slots;
    for (let slot = 0; slot < n; slot++) {
      const age = current - data[slot]!;
      if (!(age >= 0 && age <= buckets)) continue;
      spent = addCount(spent, data[2 * n + slot]!);
      if (age < buckets) {
        successes = addCount(successes, data[n + slot]!);
        denied = addCount(denied, data[3 * n + slot]!);
      } else {
        oldSuccesses = data[n + slot]!;
        oldDenied = data[3 * n + slot]!;
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
    const n = this.#slots;
    const slot = bucket % n;
    const data = this.#data;
    if (data[slot] !== bucket) {
      data[slot] = bucket;
      data[n + slot] = 0;
      data[2 * n + slot] = 0;
      data[3 * n + slot] = 0;
    }
    return slot;
  }
}
