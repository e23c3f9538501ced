import type { BreakerListing, ListedBreaker } from '../breaker/types.js';
import type { Clock } from '../common/clock.js';
import type { DeadLetterReason } from '../policy/types.js';
import type { DeadLetterQueueSummary, DeadLetterStore, MaybePromise } from '../runtime/contracts.js';
import type { DependencyLimit, LimitHold, LimitOverride, LimitStore } from '../runtime/limits/store.js';
import type { BudgetStatus, BudgetStatusSource } from './budget.js';

/**
 * The fleet's state, read once from its stores: what `stormguard budget status|watch`, `breaker status`,
 * the Prometheus exporter and the console show. Plain JSON (no class, no Map), so it goes as it is over
 * Server-Sent Events or `--json`.
 *
 * @example
 * const status = await readFleetStatus({ budget, breaker, deadLetters });
 * for (const name of status.needsAttention) console.log(name, status.dependencies.find((d) => d.dependency === name)?.attention);
 */
export interface FleetStatus {
  /** When it was read (epoch ms): the breaker store's clock when it answered, else the `clock` option's. */
  atMs: number;
  /** Every dependency any source knows of (and those of the `dependencies` option), sorted by name. */
  dependencies: DependencyStatus[];
  /** Names of the dependencies whose `attention` is not empty, the most pressing first (then by name). */
  needsAttention: string[];
  /** Every dead-letter queue read (all registered ones unless the `queues` option names them), sorted. */
  queues: QueueStatus[];
  /** Workers that stopped taking jobs for a dependency (flow control); absent without a flow source. */
  pausedWorkers?: PausedWorkerStatus[];
  /** Jobs held without calling their dependency (flow control); absent without a flow source. */
  parkedJobs?: ParkedJobsStatus[];
  /**
   * Flow control's fleet-wide kill switch (`stormguard flow off|on`); absent without a flow source that
   * reads it.
   */
  flowControl?: FlowControlStatus;
  /** Sources that could not be read; their parts of the status are missing, the rest is whole. */
  errors: StatusSourceError[];
}

/**
 * One dependency in the {@link FleetStatus}: its budget, its breaker, its dead letters, and why it needs
 * attention. A part whose source holds nothing for the dependency (or was not given) is absent.
 *
 * @example
 * // { dependency: 'search', budget: { allowance: 10, spent: 10, headroom: 0, ... },
 * //   breaker: { state: 'open', halfOpenAtMs: 1764682230000, ... },
 * //   deadLetters: { total: 3, byReason: { 'breaker-open': 3 }, byQueue: { index: 3 } },
 * //   attention: ['breaker-open', 'budget-exhausted', 'dead-letters'] }
 */
export interface DependencyStatus {
  dependency: string;
  budget?: BudgetStatus;
  /**
   * Its breaker as the store lists it: `state`, `override` when an operator holds it, and while open
   * `halfOpenAtMs`, the next probe time (absent while forced open: only a reset lifts it).
   */
  breaker?: ListedBreaker;
  /** Its dead letters over the queues read; zeros when there are none, absent without a dead-letter source. */
  deadLetters?: DependencyDeadLetters;
  /** Workers paused for it (flow control); absent without a flow source. */
  pausedWorkers?: number;
  /** Jobs parked for it (flow control); absent without a flow source. */
  parkedJobs?: number;
  /** Flow control's mark of it (down, or when it recovered); absent without a flow source that reads marks. */
  flow?: DependencyFlowStatus;
  /**
   * Its fleet-wide limits (in flight against the cap, the rate, a Retry-After hold, an operator's
   * override); absent without a limits source, or when the source lists nothing for it.
   */
  limits?: DependencyLimitStatus;
  /** Why an operator should look at it, most pressing first; empty when all is well. */
  attention: AttentionReason[];
}

/**
 * Why a dependency is listed in {@link FleetStatus.needsAttention}, most pressing first:
 * - `breaker-forced-open`: an operator holds its breaker open; `breaker-open`, `breaker-half-open`.
 * - `budget-exhausted`: no retry left in the window (headroom 0); `budget-denying`: denials in the window.
 * - `budget-unreadable`: its stored budget state cannot be read.
 * - `degraded`: a figure comes from a local fallback, not the shared store.
 * - `marked-down`: flow control holds it down (a worker saw it unhealthy and none has seen it recover).
 * - `limit-held`: a Retry-After answer holds its calls fleet-wide until the hold's end.
 * - `limit-paused`: an operator paused its calls fleet-wide (`stormguard limits pause`).
 * - `workers-paused`, `jobs-parked`: flow control holds work back for it.
 * - `limit-pinned`: its calls in flight have reached its `maxInFlight`: more wait for a slot.
 * - `breaker-forced-closed`: an operator holds its breaker closed (it will not protect the dependency).
 * - `dead-letters`: it has dead letters.
 *
 * @example
 * if (dependency.attention.includes('breaker-open')) page(dependency.dependency);
 */
export type AttentionReason =
  | 'breaker-forced-open'
  | 'breaker-open'
  | 'breaker-half-open'
  | 'budget-exhausted'
  | 'budget-denying'
  | 'budget-unreadable'
  | 'degraded'
  | 'marked-down'
  | 'limit-held'
  | 'limit-paused'
  | 'workers-paused'
  | 'jobs-parked'
  | 'limit-pinned'
  | 'breaker-forced-closed'
  | 'dead-letters';

/**
 * A dependency's dead letters over the queues read.
 *
 * @example
 * // { total: 3, byReason: { 'max-attempts': 2, permanent: 1 }, byQueue: { index: 3 } }
 */
export interface DependencyDeadLetters {
  total: number;
  /**
   * Counts by reason, only those above 0. Absent when working it out would walk more index entries than
   * the `breakdownLimit` option allows (a reason's count in a queue where the dependency is not alone).
   */
  byReason?: Partial<Record<DeadLetterReason, number>>;
  /** Counts by queue, only those above 0. */
  byQueue: Record<string, number>;
}

/**
 * One dead-letter queue: its registration and counts (each one index count in every store).
 *
 * @example
 * // { queue: 'index', count: 12, evicted: 0, registeredAt: 1764600000000, retention: {},
 * //   byReason: { 'max-attempts': 12 }, byDependency: { search: 12 } }
 */
export interface QueueStatus extends DeadLetterQueueSummary {
  /** Counts by reason, only those above 0. */
  byReason: Partial<Record<DeadLetterReason, number>>;
  /** Counts by the dependencies the status lists, only those above 0. */
  byDependency: Record<string, number>;
}

/**
 * A worker that flow control has stopped from taking a dependency's jobs.
 *
 * @example
 * // { queue: 'index', dependency: 'search', worker: 'host-1:4242', sinceMs: 1764682200000, untilMs: 1764682230000 }
 */
export interface PausedWorkerStatus {
  queue: string;
  dependency: string;
  /** The worker's name, when it has one. */
  worker?: string;
  /** Since when (epoch ms). */
  sinceMs?: number;
  /** Until when, at the latest (the breaker's next probe time), when known. */
  untilMs?: number;
}

/**
 * Jobs of a queue parked because their dependency is down.
 *
 * @example
 * // { queue: 'mixed', dependency: 'search', count: 120, oldestMs: 1764682200000 }
 */
export interface ParkedJobsStatus {
  queue: string;
  dependency: string;
  count: number;
  /** When the oldest was parked (epoch ms), when known. */
  oldestMs?: number;
}

/**
 * Flow control's fleet-wide state: `on` is false while an operator has it switched off (`stormguard flow
 * off`): workers then pause, park and pace nothing (admission stays).
 *
 * @example
 * // { on: false }
 */
export interface FlowControlStatus {
  on: boolean;
}

/**
 * A dependency as flow control marks it, at the flow store's time.
 *
 * @example
 * // { down: false, recoveredAtMs: 1764682230000, recoveredForMs: 4000 }
 */
export interface DependencyFlowStatus {
  /** A worker saw it unhealthy (its breaker open, or its budget denying), and none has seen it recover. */
  down: boolean;
  /** When it last recovered (its slow-start ramp runs from then), when it has. */
  recoveredAtMs?: number;
  /** How long ago that was, by the flow store's clock. */
  recoveredForMs?: number;
}

/**
 * A dependency's fleet-wide limits at the limits store's time: what `stormguard limits status`, the
 * console's Limits page and the limit gauges show. The store's `LimitState` without its
 * clock, with what a reader wants worked out: how long a hold has left, when an override lapses, whether
 * an operator paused it and whether its calls in flight have reached the cap.
 *
 * @example
 * // { inFlight: 24, declared: { maxInFlight: 25 }, effective: { maxInFlight: 25, maxRatePerSecond: 50 },
 * //   hold: { untilMs: 1764682290000, reason: 'retry-after', setAtMs: 1764682230000, remainingMs: 42000 },
 * //   probing: false, paused: false, pinned: false }
 */
export interface DependencyLimitStatus {
  /** Cost units held by live leases, fleet-wide. */
  inFlight: number;
  /** The lowest value of each field among the live declarations of workers' code. */
  declared: DependencyLimit;
  /** What is enforced: the override's fields where it sets them, else `declared`. */
  effective: DependencyLimit;
  /** An operator's live override, with how long until it lapses by itself (absent: until a reset). */
  override?: LimitOverride & { expiresInMs?: number };
  /** A live Retry-After hold, with how long it has left. */
  hold?: LimitHold & { remainingMs: number };
  /** A hold ended and no call has succeeded since: only probes run. */
  probing: boolean;
  /** When it last came out of a hold (its slow-start ramp runs from then). */
  recoveredAtMs?: number;
  /** An operator paused it: no call starts anywhere until resumed (or the override lapses). */
  paused: boolean;
  /** Its calls in flight have reached the effective `maxInFlight`. */
  pinned: boolean;
}

/**
 * What the limits part of the read model reads: every flow store (`MemoryFlowStore`, `RedisFlowStore`,
 * `PostgresFlowStore`, a fleet's `flow`) is one as it is.
 *
 * @example
 * await readFleetStatus({ limits: fleet.flow });
 */
export type LimitStatusSource = Pick<LimitStore, 'limitedDependencies' | 'limitState'>;

/**
 * One dependency's mark as a {@link FlowStatusSource} reads it.
 *
 * @example
 * // { dependency: 'search', down: true, nowMs: 1764682230000 }
 */
export interface FlowMarkStatus {
  dependency: string;
  down: boolean;
  recoveredAtMs?: number;
  /** The flow store's clock when it answered. */
  nowMs: number;
}

/**
 * A source that could not be read during one {@link readFleetStatus}.
 *
 * @example
 * // { source: 'breaker', message: 'connect ECONNREFUSED 127.0.0.1:6379' }
 */
export interface StatusSourceError {
  source: 'budget' | 'breaker' | 'dead-letters' | 'flow' | 'limits';
  message: string;
}

/**
 * What the dead-letter part of the read model needs: every dead-letter store is one.
 *
 * @example
 * const source: DeadLetterStatusSource = new MemoryDeadLetterStore();
 */
export type DeadLetterStatusSource = Pick<DeadLetterStore, 'queues' | 'queue' | 'count'>;

/**
 * What the flow-control part of the read model reads: the kill switch, each dependency's mark, paused
 * workers and parked jobs. Each method is optional; a missing one leaves its part of the status absent.
 * Those taking a scope are told the dependencies and queues the rest of the status found, so a store
 * keyed by them (the flow store's park lists) can be asked about each: {@link flowStatusOf} adapts a
 * `FlowStore`.
 *
 * @example
 * const flow: FlowStatusSource = { parkedJobs: async () => [{ queue: 'mixed', dependency: 'search', count: 3 }] };
 */
export interface FlowStatusSource {
  /** True while flow control is switched off fleet-wide. */
  switchedOff?(): MaybePromise<boolean>;
  marks?(known: FlowStatusScope): MaybePromise<readonly FlowMarkStatus[]>;
  pausedWorkers?(known: FlowStatusScope): MaybePromise<readonly PausedWorkerStatus[]>;
  parkedJobs?(known: FlowStatusScope): MaybePromise<readonly ParkedJobsStatus[]>;
}

/**
 * The dependencies and queues a {@link FlowStatusSource} is asked about.
 *
 * @example
 * const scope: FlowStatusScope = { dependencies: ['search'], queues: ['index'] };
 */
export interface FlowStatusScope {
  dependencies: readonly string[];
  queues: readonly string[];
}

/**
 * The stores {@link readFleetStatus} reads; each is optional, and a missing one leaves its part absent.
 * The memory, Redis (and Cluster) and PostgreSQL stores of each kind are sources as they are.
 *
 * @example
 * const sources: FleetStatusSources = {
 *   budget: new RedisBudgetStore({ redis }),
 *   breaker: new RedisBreakerStore({ redis }),
 *   deadLetters: new RedisDeadLetterStore({ redis }),
 * };
 */
export interface FleetStatusSources {
  budget?: BudgetStatusSource;
  breaker?: BreakerListing;
  deadLetters?: DeadLetterStatusSource;
  flow?: FlowStatusSource;
  /** Each limited dependency's limits (`limitedDependencies`, then one `limitState` each). */
  limits?: LimitStatusSource;
}

/**
 * Options of {@link readFleetStatus}.
 *
 * @example
 * await readFleetStatus(sources, { queues: ['index'], dependencies: ['search', 'mail'] });
 */
export interface FleetStatusOptions {
  /** The dead-letter queues to read. Default: every registered queue. */
  queues?: readonly string[];
  /** Dependencies listed even when no source holds anything for them yet. Default none. */
  dependencies?: readonly string[];
  /**
   * The most index entries one read walks to break a dependency's dead letters down by reason (a count
   * on two indexes walks the smaller). Past it, `byReason` is left out. Default 10 000.
   */
  breakdownLimit?: number;
  /** Rethrow the first source error instead of reporting it in `errors` (the CLI does). Default false. */
  throwOnError?: boolean;
  /** The clock of `atMs` when no breaker answered. Default: the system clock. */
  clock?: Clock;
}
