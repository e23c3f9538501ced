import type { Clock } from '../common/clock.js';
import type { BreakerSnapshot } from './types.js';

interface Entry {
  snapshot: BreakerSnapshot;
  /** Local clock when the store answered. */
  learnedAtMs: number;
  /** Local clock until which the answer may be reused without asking the store. */
  trustUntilMs: number;
}

/**
 * What this process last heard from a shared breaker store about each dependency, and how long it may
 * answer from it alone: a closed breaker for `ttlMs` (a peer may open it meanwhile; that staleness is the
 * price of not asking), an open one for `ttlMs` too, or until it half-opens when that is sooner (an
 * operator may force it closed or reset it meanwhile, and that must reach every worker within `ttlMs`; an
 * open breaker held by an operator has no half-open time at all). Half-open and degraded
 * answers are never reused: probe admission must stay atomic fleet-wide, and a fallback is local anyway.
 * Deadlines are kept on the local clock, converted from the store's clock by the snapshot's own `nowMs`,
 * so clock skew between a worker and Redis does not matter.
 *
 * @example
 * const cache = new BreakerStateCache(250, systemClock);
 * cache.learn(admission.snapshot);
 * cache.trusted('search')?.state; // 'closed' for 250 ms, then undefined
 */
export class BreakerStateCache {
  readonly #entries = new Map<string, Entry>();

  constructor(
    readonly ttlMs: number,
    readonly clock: Clock,
  ) {}

  /** Remembers the store's latest answer for its dependency (or forgets, when it must not be reused). */
  learn(snapshot: BreakerSnapshot): void {
    const nowMs = this.clock.now();
    const untilMs =
      snapshot.degraded || snapshot.state === 'half-open'
        ? undefined
        : snapshot.state === 'closed' || snapshot.halfOpenAtMs === undefined
          ? nowMs + this.ttlMs
          : nowMs + Math.min(this.ttlMs, snapshot.halfOpenAtMs - snapshot.nowMs);
    if (untilMs === undefined) this.#entries.delete(snapshot.dependency);
    else this.#entries.set(snapshot.dependency, { snapshot, learnedAtMs: nowMs, trustUntilMs: untilMs });
  }

  /** The remembered snapshot, its `nowMs` moved on by the time since, while it may be trusted. */
  trusted(dependency: string): BreakerSnapshot | undefined {
    const entry = this.#entries.get(dependency);
    const nowMs = this.clock.now();
    if (!entry || nowMs >= entry.trustUntilMs) return undefined;
    return { ...entry.snapshot, nowMs: entry.snapshot.nowMs + (nowMs - entry.learnedAtMs) };
  }

  /** Drops what is known of `dependency` (its breaker state expired; the next call asks the store). */
  forget(dependency: string): void {
    this.#entries.delete(dependency);
  }

  /** The last answer said closed (however old): successes of calls it admitted may be batched. */
  lastKnownClosed(dependency: string): BreakerSnapshot | undefined {
    const entry = this.#entries.get(dependency);
    return entry?.snapshot.state === 'closed' ? entry.snapshot : undefined;
  }
}
