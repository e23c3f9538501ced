import { type Clock, systemClock } from '../common/clock.js';
import {
  type BreakerOp,
  type BreakerRecord,
  type BreakerStepInput,
  initialBreakerRecord,
  stepBreaker,
} from './machine.js';
import type { ResolvedBreakerOptions } from './options.js';
import { checkOverride } from './override.js';
import type {
  BreakerAdmission,
  BreakerBatch,
  BreakerListing,
  BreakerOverrideOp,
  BreakerOverrideRequest,
  BreakerRecordResult,
  BreakerSnapshot,
  BreakerStore,
  ListedBreaker,
} from './types.js';

/**
 * Options of {@link MemoryBreakerStore}.
 *
 * @example
 * new MemoryBreakerStore({ clock: new FakeClock(0) });
 */
export interface MemoryBreakerStoreOptions {
  /** Where "now" comes from. Default: the system clock. Tests and the simulator pass a FakeClock. */
  clock?: Clock;
  /** Marks every snapshot as degraded: used when this store stands in for an unreachable shared one. Default false. */
  degraded?: boolean;
}

const SWEEP_MIN_SIZE = 1_024;
const NO_TICKET: BreakerStepInput = Object.freeze({});

/**
 * Breaker state for one process, on an injectable clock. Right for a single worker, for tests and for the
 * simulator; a fleet shares state through `RedisBreakerStore` (`stormguard/redis`) instead. Memory is
 * bounded like Redis's: only calls' outcomes and probes store anything, and a dependency nothing wrote
 * for 2 × (windowMs + coolDownMs) is forgotten; its state then equals a fresh breaker's, as when a Redis
 * key expires.
 *
 * @example
 * const clock = new FakeClock();
 * const breaker = new CircuitBreaker({ store: new MemoryBreakerStore({ clock }) });
 */
export class MemoryBreakerStore implements BreakerStore, BreakerListing {
  readonly #records = new Map<
    string,
    { record: BreakerRecord; expiresAtMs: number; options: ResolvedBreakerOptions }
  >();
  #sweepAtSize = SWEEP_MIN_SIZE;
  readonly #clock: Clock;
  readonly #degraded: boolean;

  constructor(options: MemoryBreakerStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#degraded = options.degraded ?? false;
  }

  async acquire(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerAdmission> {
    return this.acquireNow(dependency, options);
  }

  /**
   * {@link acquire}, answered synchronously (the state is in this process): the same admission, no promise.
   *
   * @example
   * const { allowed } = store.acquireNow('search', resolveBreakerOptions());
   */
  acquireNow(dependency: string, options: ResolvedBreakerOptions): BreakerAdmission {
    const { allowed, probe, ticket, transitions, view } = this.#apply(dependency, 'acquire', options);
    const snapshot = this.#snapshot(dependency, view);
    return ticket === undefined
      ? { allowed, probe, transitions, snapshot }
      : { allowed, probe, ticket, transitions, snapshot };
  }

  async record(
    dependency: string,
    outcome: 'success' | 'failure',
    options: ResolvedBreakerOptions,
    ticket?: string,
  ): Promise<BreakerRecordResult> {
    return this.recordNow(dependency, outcome, options, ticket);
  }

  /**
   * {@link record}, applied synchronously (the state is in this process): the same result, no promise.
   *
   * @example
   * const { snapshot } = store.recordNow('search', 'failure', resolveBreakerOptions());
   */
  recordNow(
    dependency: string,
    outcome: 'success' | 'failure',
    options: ResolvedBreakerOptions,
    ticket?: string,
  ): BreakerRecordResult {
    const step = this.#apply(dependency, outcome, options, ticket === undefined ? NO_TICKET : { ticket });
    return { transitions: step.transitions, snapshot: this.#snapshot(dependency, step.view) };
  }

  async recordBatch(
    dependency: string,
    batch: BreakerBatch,
    options: ResolvedBreakerOptions,
  ): Promise<BreakerRecordResult> {
    const step = this.#apply(dependency, batch.outcome ?? 'successes', options, {
      batchedSuccesses: batch.successes,
      ...(batch.ticket === undefined ? {} : { ticket: batch.ticket }),
    });
    return { transitions: step.transitions, snapshot: this.#snapshot(dependency, step.view) };
  }

  async override(
    dependency: string,
    op: BreakerOverrideOp,
    request: BreakerOverrideRequest,
    options: ResolvedBreakerOptions,
  ): Promise<BreakerRecordResult> {
    const checked = checkOverride(op, request);
    const nowMs = this.#clock.now();
    const stored = this.#records.get(dependency);
    const governing = stored && stored.expiresAtMs > nowMs ? stored.options : options;
    const step = this.#apply(dependency, op, governing, { override: checked });
    return { transitions: step.transitions, snapshot: this.#snapshot(dependency, step.view) };
  }

  async read(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerSnapshot> {
    const nowMs = this.#clock.now();
    return this.#snapshot(
      dependency,
      stepBreaker(this.#live(dependency, nowMs), 'peek', nowMs, options).view,
    );
  }

  /**
   * Every dependency with live state, sorted, each read with the options its breaker last wrote.
   *
   * @example
   * for (const b of await store.list()) console.log(b.dependency, b.state);
   */
  async list(): Promise<ListedBreaker[]> {
    const nowMs = this.#clock.now();
    return this.dependencies().flatMap((dependency) => {
      const entry = this.#records.get(dependency);
      if (!entry) return [];
      const view = stepBreaker(entry.record, 'peek', nowMs, entry.options).view;
      return [{ ...this.#snapshot(dependency, view), options: entry.options }];
    });
  }

  /** The dependencies this store holds live state for, sorted. */
  dependencies(): string[] {
    this.#sweep(this.#clock.now());
    return [...this.#records.keys()].sort();
  }

  #apply(dependency: string, op: BreakerOp, options: ResolvedBreakerOptions, input: BreakerStepInput = {}) {
    const nowMs = this.#clock.now();
    const step = stepBreaker(this.#live(dependency, nowMs), op, nowMs, options, input);
    // As the Redis script: peeks and an acquire that admits no probe and changes no state write nothing
    // (so a name that is only ever asked about costs no memory); a write keeps the state for
    // 2 × (windowMs + coolDownMs), after which it is forgotten, as the Redis key expires.
    // A reset forgets the breaker; an override is kept until a reset lifts it.
    if (op === 'reset') {
      this.#records.delete(dependency);
      return step;
    }
    const writes =
      op === 'success' ||
      op === 'failure' ||
      op === 'successes' ||
      op === 'force-open' ||
      op === 'force-closed' ||
      (op === 'acquire' && (step.probe || step.transitions.length > 0));
    if (writes) {
      const expiresAtMs = step.record.override
        ? Number.POSITIVE_INFINITY
        : nowMs + 2 * (options.windowMs + options.coolDownMs);
      const entry = this.#records.get(dependency);
      if (entry) {
        // Updated in place: a write per call must not cost a new entry and a map insert.
        entry.record = step.record;
        entry.expiresAtMs = expiresAtMs;
        entry.options = options;
      } else {
        if (this.#records.size >= this.#sweepAtSize) this.#sweep(nowMs);
        this.#records.set(dependency, { record: step.record, expiresAtMs, options });
      }
    }
    return step;
  }

  /** The stored record, or a fresh one when there is none or it expired (an expired one is dropped). */
  #live(dependency: string, nowMs: number): BreakerRecord {
    const entry = this.#records.get(dependency);
    if (entry === undefined) return initialBreakerRecord();
    if (entry.expiresAtMs > nowMs) return entry.record;
    this.#records.delete(dependency);
    return initialBreakerRecord();
  }

  /** Drops every expired record; run when the map doubles since the last sweep (amortised O(1)). */
  #sweep(nowMs: number): void {
    for (const [dependency, entry] of this.#records)
      if (entry.expiresAtMs <= nowMs) this.#records.delete(dependency);
    this.#sweepAtSize = Math.max(SWEEP_MIN_SIZE, 2 * this.#records.size);
  }

  /** The view as a snapshot: the same fields in the same order as `{ dependency, ...view, degraded }`, built without a spread. */
  #snapshot(dependency: string, view: Omit<BreakerSnapshot, 'dependency' | 'degraded'>): BreakerSnapshot {
    const snapshot = {
      dependency,
      state: view.state,
      successes: view.successes,
      failures: view.failures,
      volume: view.volume,
      consecutiveFailures: view.consecutiveFailures,
      probesAdmitted: view.probesAdmitted,
      probeSuccesses: view.probeSuccesses,
      probesInFlight: view.probesInFlight,
      nowMs: view.nowMs,
    } as BreakerSnapshot;
    if (view.openedAtMs !== undefined) snapshot.openedAtMs = view.openedAtMs;
    if (view.override !== undefined) snapshot.override = view.override;
    if (view.halfOpenAtMs !== undefined) snapshot.halfOpenAtMs = view.halfOpenAtMs;
    snapshot.degraded = this.#degraded;
    return snapshot;
  }
}
