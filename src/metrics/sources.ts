import type { BudgetEvents, BudgetSnapshot } from '../budget/types.js';
import type { Disposable, Listener } from '../common/events.js';
import type { WorkerEvents } from '../jobs/types.js';

/** Anything with typed, disposable subscriptions: an `EventBus` or an object exposing one. */
export interface Subscribable<Events extends object> {
  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): Disposable;
}

/** What `observeWorker` needs: a stormguard worker (from `createWorker`) or anything carrying its events. */
export interface ObservableWorker {
  readonly events: Subscribable<WorkerEvents>;
}

/** A budget snapshot, optionally with the settings it was computed with (a store knows them per dependency). */
export interface ObservedBudgetState extends BudgetSnapshot {
  ratio?: number;
  minAllowance?: number;
}

/** What `observeBudget` needs: a `RetryBudget`'s events and its fleet-wide state. */
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

/** A circuit breaker's states. */
export type BreakerStateName = 'closed' | 'open' | 'half-open';

/** Events a circuit breaker emits that the metrics read. */
export interface BreakerStateEvents {
  'state-change': { dependency: string; from: BreakerStateName; to: BreakerStateName };
  rejected: { dependency: string; state: 'open' | 'half-open' };
}

/**
 * What `observeBreaker` needs: a `CircuitBreaker`'s events and, to report the fleet's state rather than
 * what this process saw, its `state(dependency)`.
 */
export interface ObservableBreaker {
  readonly events: Subscribable<BreakerStateEvents>;
  state?(dependency: string): Promise<{ state: BreakerStateName } | undefined>;
  /** Dependencies with breaker state, beyond those the metrics have seen in events. */
  dependencies?(): Promise<readonly string[]>;
}

/** What `observeDeadLetters` needs: a dead-letter queue (from `deadLetterQueue`) that can count its jobs. */
export interface ObservableDeadLetterQueue {
  count(): Promise<number>;
  /** The queue whose dead letters it holds: the `queue` label. */
  readonly sourceQueue?: string;
}
