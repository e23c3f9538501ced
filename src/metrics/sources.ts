import type { BudgetEvents, BudgetSnapshot } from '../budget/types.js';
import type { Disposable, Listener } from '../common/events.js';
import type { LimitStore } from '../runtime/limits/store.js';
import type { WorkerEvents } from '../runtime/worker-events.js';

/**
 * Anything with typed, disposable subscriptions: an `EventBus` or an object exposing one.
 *
 * @example
 * const events: Subscribable<WorkerEvents> = new EventBus<WorkerEvents>();
 */
export interface Subscribable<Events extends object> {
  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): Disposable;
}

/**
 * What `observeWorker` needs: a stormguard worker (from `createWorker`) or anything carrying its events.
 *
 * @example
 * metrics.observeWorker(createWorker('index', processor, options));
 * metrics.observeWorker({ events: myWorkerEventBus });
 */
export interface ObservableWorker {
  readonly events: Subscribable<WorkerEvents>;
  /** The worker's flow control, when it has one: paused and parked gauges are read from it. */
  readonly flow?: ObservableFlow | undefined;
  /** The worker's limits, when it has them: the waiting gauge is read from them. */
  readonly limits?: ObservableLimits | undefined;
}

/**
 * What the waiting gauge reads of a worker's limits (`worker.limits`, a `LimitController`).
 *
 * @example
 * const limits: ObservableLimits = worker.limits;
 */
export interface ObservableLimits {
  readonly queue: string;
  status(): readonly { dependency: string; waiting: number }[];
}

/**
 * A budget snapshot, optionally with the settings it was computed with (a store knows them per dependency).
 *
 * @example
 * const s: ObservedBudgetState = { ...(await budget.state('search')), ratio: 0.2, minAllowance: 10 };
 */
export interface ObservedBudgetState extends BudgetSnapshot {
  ratio?: number;
  minAllowance?: number;
}

/**
 * What `observeBudget` needs: a `RetryBudget`'s events and its fleet-wide state.
 *
 * @example
 * metrics.observeBudget(new RetryBudget({ store: new RedisBudgetStore({ redis }) }));
 */
export interface ObservableBudget {
  readonly events: Subscribable<BudgetEvents>;
  /** The fleet's view of one dependency's budget (read from the store); undefined when the store holds none. */
  state(dependency: string): ObservedBudgetState | undefined | Promise<ObservedBudgetState | undefined>;
  /** Dependencies the budget knows of. */
  dependencies(): readonly string[] | Promise<readonly string[]>;
  /** The configured ratio (0, 1], exported so alerts can compare the observed retry ratio with it (a state's own `ratio` wins). */
  readonly ratio?: number;
  /** The configured floor per window (a state's own `minAllowance` wins). */
  readonly minAllowance?: number;
}

/**
 * A circuit breaker's states.
 *
 * @example
 * const s: BreakerStateName = 'half-open';
 */
export type BreakerStateName = 'closed' | 'open' | 'half-open';

/**
 * Events a circuit breaker emits that the metrics read (a subset of the breaker's own events).
 *
 * @example
 * bus.emit('state-change', { dependency: 'search', from: 'closed', to: 'open' });
 */
export interface BreakerStateEvents {
  'state-change': { dependency: string; from: BreakerStateName; to: BreakerStateName };
  rejected: { dependency: string; state: 'open' | 'half-open' };
}

/**
 * What `observeBreaker` needs: a `CircuitBreaker`'s events and, to report the fleet's state rather than
 * what this process saw, its `state(dependency)`.
 *
 * @example
 * metrics.observeBreaker(new CircuitBreaker({ store: new RedisBreakerStore({ redis }) }));
 */
export interface ObservableBreaker {
  readonly events: Subscribable<BreakerStateEvents>;
  /** The breaker's shared state; a `degraded` answer (a local guess while the store is away) is not shown. */
  state?(dependency: string): Promise<{ state: BreakerStateName; degraded?: boolean } | undefined>;
  /** Dependencies with breaker state, beyond those the metrics have seen in events. */
  dependencies?(): Promise<readonly string[]>;
}

/**
 * What `observeDeadLetters` needs: a dead-letter queue (from `deadLetterQueue`) that can count its jobs.
 *
 * @example
 * metrics.observeDeadLetters(deadLetterQueue('index', { connection }));
 */
export interface ObservableDeadLetterQueue {
  count(): Promise<number>;
  /** The queue whose dead letters it holds: the `queue` label. */
  readonly sourceQueue?: string;
  /** Its replays' `replayed` events, counted in `stormguard_replays_total`. */
  readonly events?: Subscribable<Pick<WorkerEvents, 'replayed'>>;
}

/**
 * What the paused and parked gauges read of a worker's flow control (`worker.flow`, a `FlowController`).
 *
 * @example
 * const flow: ObservableFlow = worker.flow;
 */
export interface ObservableFlow {
  readonly queue: string;
  status(): readonly { dependency: string; paused: boolean }[];
  dependencies(): readonly string[];
  parked(dependency: string): Promise<number>;
}

/**
 * What `observeFlow` reads of a flow store (`MemoryFlowStore`, `RedisFlowStore`, `PostgresFlowStore`, or a
 * fleet's `flow`): the fleet-wide kill switch and each dependency's down mark. Both reads never write.
 *
 * @example
 * metrics.observeFlow(new RedisFlowStore({ redis }), { dependencies: ['search'] });
 */
export interface ObservableFlowStore {
  /** True while the kill switch (`stormguard flow off`) turns flow control off everywhere. */
  switchedOff(): boolean | Promise<boolean>;
  /** The dependency's flow snapshot; only `down` is read. */
  read(dependency: string): { down: boolean } | Promise<{ down: boolean }>;
}

/**
 * What `observeLimits` reads of a limit store (every flow store: `MemoryFlowStore`, `RedisFlowStore`,
 * `PostgresFlowStore`, or a fleet's `flow`): the limited dependencies, and each one's state. Both reads
 * never write.
 *
 * @example
 * metrics.observeLimits(fleet.flow);
 */
export type ObservableLimitStore = Pick<LimitStore, 'limitedDependencies' | 'limitState'>;
