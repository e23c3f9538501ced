import { type AgedSuccesses, addCount } from './window.js';

/** Successes recorded from `stampMs` on (within one quantum), not yet sent. */
interface Group {
  stampMs: number;
  count: number;
}

/**
 * Successes waiting to be sent to a remote store, per dependency, grouped by when they happened: a group
 * holds the successes of one quantum and is stamped with its first (so its age is never understated: a
 * success may count as up to one quantum older, never younger, the cautious side). When sent, each group
 * becomes an {@link AgedSuccesses}: its age on the local clock, a duration the store subtracts from its
 * own time.
 */
export class SuccessBatches {
  readonly #groups = new Map<string, Group[]>();

  constructor(readonly quantumMs: number) {}

  get size(): number {
    return this.#groups.size;
  }

  add(dependency: string, nowMs: number, count: number): void {
    let groups = this.#groups.get(dependency);
    if (!groups) {
      groups = [];
      this.#groups.set(dependency, groups);
    }
    const last = groups[groups.length - 1];
    if (last && nowMs - last.stampMs < this.quantumMs && nowMs >= last.stampMs)
      last.count = addCount(last.count, count);
    else groups.push({ stampMs: nowMs, count });
  }

  /** Removes and returns `dependency`'s successes as ages at `nowMs` (empty when there are none). */
  take(dependency: string, nowMs: number): AgedSuccesses[] {
    const groups = this.#groups.get(dependency);
    if (!groups) return [];
    this.#groups.delete(dependency);
    return groups.map((g) => ({ ageMs: Math.max(0, nowMs - g.stampMs), count: g.count }));
  }

  /** Removes and returns every dependency's successes as ages at `nowMs`. */
  takeAll(nowMs: number): Array<[string, AgedSuccesses[]]> {
    return [...this.#groups.keys()].map((dependency) => [dependency, this.take(dependency, nowMs)]);
  }

  clear(): void {
    this.#groups.clear();
  }
}

/**
 * The number of successes in a batch (saturating).
 *
 * @example
 * totalOf([{ ageMs: 5, count: 2 }, { ageMs: 0, count: 3 }]); // 5
 */
export function totalOf(successes: readonly AgedSuccesses[]): number {
  let total = 0;
  for (const { count } of successes) total = addCount(total, count);
  return total;
}
