import type { StoreDownEvent, StoreUpEvent } from '../common/store-outage.js';
import type { ResolvedBreakerOptions } from './options.js';

/**
 * The three states of a circuit breaker.
 *
 * @example
 * if ((await breaker.state('search')).state === 'open') pauseIndexing();
 */
export type BreakerStateName = 'closed' | 'open' | 'half-open';

/**
 * Why a breaker changed state. Stable strings: they appear in events, logs and the CLI.
 * - `consecutive-failures`, `failure-rate`: closed → open.
 * - `cool-down-elapsed`: open → half-open.
 * - `probe-failed`: half-open → open.
 * - `probes-succeeded`: half-open → closed.
 * - `forced-open`, `forced-closed`: an operator's override (`stormguard breaker force-open|force-close`).
 * - `reset`: an operator's reset: back to a fresh closed breaker, any override lifted.
 *
 * @example
 * breaker.events.on('state-change', (e) => { if (e.reason === 'probe-failed') log.warn('still down'); });
 */
export type BreakerTransitionReason =
  | 'consecutive-failures'
  | 'failure-rate'
  | 'cool-down-elapsed'
  | 'probe-failed'
  | 'probes-succeeded'
  | 'forced-open'
  | 'forced-closed'
  | 'reset';

/**
 * One state change, as the store reports it (to the one caller whose operation caused it).
 *
 * @example
 * // { from: 'closed', to: 'open', reason: 'consecutive-failures', atMs: 1764682200000 }
 */
export interface BreakerTransition {
  from: BreakerStateName;
  to: BreakerStateName;
  reason: BreakerTransitionReason;
  /** Store time of the change (epoch ms). */
  atMs: number;
}

/**
 * A dependency's breaker as the whole fleet sees it, at the store's time. Plain JSON: shown by the CLI,
 * exported as metrics, returned by `CircuitBreaker.state()`.
 *
 * @example
 * const { state, failures, volume, halfOpenAtMs } = await breaker.state('search');
 */
export interface BreakerSnapshot {
  dependency: string;
  state: BreakerStateName;
  /** Failures recorded in the sliding window. */
  failures: number;
  /** Successes recorded in the sliding window. */
  successes: number;
  /** failures + successes in the window. */
  volume: number;
  /** Failures in a row (reset by a success, and when the breaker closes). */
  consecutiveFailures: number;
  /** When the breaker last opened (epoch ms); kept after it closes, absent if it never opened. */
  openedAtMs?: number;
  /** When an open breaker half-opens (epoch ms); absent unless open or half-open. */
  halfOpenAtMs?: number;
  /** Probes admitted in the current half-open period (including those that already succeeded). */
  probesAdmitted: number;
  /** Probe successes in the current half-open period. */
  probeSuccesses: number;
  /** Probes of the current half-open period admitted and not yet reported (nor presumed lost). */
  probesInFlight: number;
  /** The store's clock when the snapshot was taken (epoch ms): Redis TIME for the Redis store. */
  nowMs: number;
  /** True when the shared store was unreachable and a local fallback answered. */
  degraded: boolean;
  /**
   * Set while an operator holds the breaker in a state by hand (`stormguard breaker force-open`): the
   * machine then neither opens, half-opens nor closes it until the override is lifted with a reset.
   */
  override?: BreakerOverride;
}

/**
 * An operator's hold on a breaker: forced open (no call goes through, no probe is admitted, it never
 * half-opens on its own) or forced closed (every call goes through; failures are counted but never open
 * it). Plain JSON, stored with the breaker's state, so every worker honours it.
 *
 * @example
 * // { state: 'open', reason: 'search cluster reindexing', by: 'alice', atMs: 1764682200000 }
 */
export interface BreakerOverride {
  state: 'open' | 'closed';
  /** Why, in the operator's words; required. */
  reason: string;
  /** Who: the identity of the request that set it, or `anonymous`. */
  by: string;
  /** Store time when it was set (epoch ms). */
  atMs: number;
}

/**
 * A breaker snapshot as a store lists it: with the options its breaker last wrote (absent when no
 * worker has written any yet).
 *
 * @example
 * const open = (await store.list()).filter((b) => b.state === 'open');
 */
export interface ListedBreaker extends BreakerSnapshot {
  options?: ResolvedBreakerOptions;
}

/**
 * A breaker store that can list every breaker it holds: what the fleet-status read model reads. The
 * memory, Redis and PostgreSQL stores are. `list` rejects when the store cannot be reached: a status
 * report never invents a fallback.
 *
 * @example
 * const listable: BreakerListing = new MemoryBreakerStore();
 * for (const b of await listable.list()) console.log(b.dependency, b.state);
 */
export interface BreakerListing {
  /** Every dependency with live breaker state, sorted by name. */
  list(): Promise<ListedBreaker[]>;
}

/**
 * The outcome of `BreakerStore.acquire`.
 *
 * @example
 * const { allowed, probe } = await store.acquire('search', resolveBreakerOptions());
 */
export interface BreakerAdmission {
  /** True when the call may go downstream now. */
  allowed: boolean;
  /** True when the call was admitted as one of the half-open breaker's probes. */
  probe: boolean;
  /**
   * Present when `probe` is true: pass it back with the call's outcome (`record(…, ticket)`, or the
   * admission to `CircuitBreaker.recordSuccess`), so that the outcome counts as this probe's. An outcome
   * without it never moves a half-open breaker.
   */
  ticket?: string;
  snapshot: BreakerSnapshot;
  transitions: BreakerTransition[];
}

/**
 * The outcome of `BreakerStore.record`.
 *
 * @example
 * const { snapshot, transitions } = await store.record('search', 'failure', resolveBreakerOptions(), admission.ticket);
 */
export interface BreakerRecordResult {
  snapshot: BreakerSnapshot;
  transitions: BreakerTransition[];
}

/**
 * Successes a caller counted locally while the breaker was closed, reported in one step, optionally
 * followed by one more outcome (a failure, or a half-open probe's result) applied after them.
 *
 * @example
 * await store.recordBatch?.('search', { successes: 120, outcome: 'failure' }, resolveBreakerOptions());
 */
export interface BreakerBatch {
  /** Successes of calls admitted while closed (>= 0): counted in the window, never as probe successes. */
  successes: number;
  /** An outcome recorded right after them, as `record` would. Default none. */
  outcome?: 'success' | 'failure';
  /** The probe ticket of `outcome`'s call, when it was admitted as a probe (see BreakerAdmission.ticket). */
  ticket?: string;
}

/**
 * Where breaker state lives. The memory store serves one process (and tests, on a fake clock); the Redis
 * store shares state across the fleet. Every operation is atomic: two workers can never both take the
 * last probe slot. Time comes from the store (the Redis server's clock), never from a worker.
 *
 * Implementations must pass the conformance suite in `src/breaker/store.case.ts`.
 *
 * @example
 * const store: BreakerStore = new MemoryBreakerStore({ clock: new FakeClock() });
 * const { allowed } = await store.acquire('search', resolveBreakerOptions());
 */
export interface BreakerStore {
  /** May a call to `dependency` go downstream now? In half-open, takes a probe slot when one is free. */
  acquire(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerAdmission>;
  /**
   * Records the outcome of a call that was admitted by `acquire`, and applies any transition it causes.
   * `ticket` is the admission's probe ticket when it was a probe: only such an outcome moves a half-open
   * breaker (closes it after enough successes, reopens it on a failure); any other outcome is counted in
   * the window only.
   */
  record(
    dependency: string,
    outcome: 'success' | 'failure',
    options: ResolvedBreakerOptions,
    ticket?: string,
  ): Promise<BreakerRecordResult>;
  /** The current snapshot, without changing anything. */
  read(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerSnapshot>;
  /**
   * Optional, for a store whose state is in this process: `acquire` answered synchronously (the same
   * admission, without a promise). `CircuitBreaker.acquireNow` uses it.
   */
  acquireNow?(dependency: string, options: ResolvedBreakerOptions): BreakerAdmission;
  /** Optional, with {@link acquireNow}: `record` applied synchronously (`CircuitBreaker.recordNow` uses it). */
  recordNow?(
    dependency: string,
    outcome: 'success' | 'failure',
    options: ResolvedBreakerOptions,
    ticket?: string,
  ): BreakerRecordResult;
  /**
   * Optional: records a batch of successes (and the outcome after it) atomically, in one round trip.
   * A CircuitBreaker batches successes on a closed breaker only when the store has this and is `shared`.
   */
  recordBatch?(
    dependency: string,
    batch: BreakerBatch,
    options: ResolvedBreakerOptions,
  ): Promise<BreakerRecordResult>;
  /**
   * An operator's override (`force-open`, `force-closed`, `reset`; see {@link BreakerOverrideOp}), applied
   * atomically and stored with the breaker's state so every worker honours it (within its
   * `stateCacheMs`). `request.reason` is required. The options of the breaker's own writers win when the
   * store holds them; `options` serve a breaker no worker has written yet. Unlike the other operations it
   * rejects when a shared store cannot be reached: an operator's action never lands in a local fallback.
   * Every store in this package has it.
   */
  override?(
    dependency: string,
    op: BreakerOverrideOp,
    request: BreakerOverrideRequest,
    options: ResolvedBreakerOptions,
  ): Promise<BreakerRecordResult>;
  /**
   * True when the state lives outside this process (each operation is a round trip), so a CircuitBreaker
   * may cache a closed or open state for `stateCacheMs`. Default false (in-process: nothing to save).
   */
  readonly shared?: boolean;
}

/**
 * Events a CircuitBreaker emits; metrics and logs subscribe.
 *
 * @example
 * breaker.events.on('rejected', (e) => log.info(`${e.dependency} refused, half-opens at ${e.halfOpenAtMs}`));
 */
export interface BreakerEvents {
  /** A state change caused by this process's call (each change is reported once, fleet-wide). */
  'state-change': {
    dependency: string;
    from: BreakerStateName;
    to: BreakerStateName;
    reason: BreakerTransitionReason;
    atMs: number;
  };
  /** A call was refused: the breaker is open, or half-open with every probe slot taken. */
  rejected: { dependency: string; state: 'open' | 'half-open'; halfOpenAtMs?: number };
  /** The shared store could not be reached; a local fallback answers for `dependency`. */
  degraded: StoreDownEvent & { store: 'breaker'; dependency: string };
  /** The shared store answers again for `dependency`. */
  recovered: StoreUpEvent & { store: 'breaker'; dependency: string };
}

/**
 * An operator's request to hold or reset a breaker: why (required, non-empty) and who.
 *
 * @example
 * const request: BreakerOverrideRequest = { reason: 'search cluster reindexing', by: 'alice' };
 */
export interface BreakerOverrideRequest {
  reason: string;
  /** The identity of whoever asked; `anonymous` when there is none. */
  by: string;
}

/**
 * An operator's override of a breaker:
 * - `force-open`: no call goes through and no probe is admitted until a reset; it never half-opens on its
 *   own. Outcomes of calls already under way are counted in the window.
 * - `force-closed`: every call goes through until a reset; failures are counted but never open it.
 * - `reset`: lifts any override and starts afresh: closed, empty window, no failure streak.
 *
 * @example
 * await store.override('search', 'force-open', { reason: 'reindexing', by: 'alice' }, options);
 */
export type BreakerOverrideOp = 'force-open' | 'force-closed' | 'reset';
