import type { WindowCounts } from '../../budget/window.js';
import type { BreakerGate, BudgetGate } from '../../policy/types.js';
import type { FlowSettings } from './flow.js';
import type { LimitSettings } from './limits.js';

/** A retry budget as the engine drives it; stormguard's `RetryBudget` is one. */
export interface SimBudget extends BudgetGate {
  readonly windowMs: number;
  /** Sub-buckets of the sliding window. */
  readonly buckets: number;
  readonly minAllowance: number;
  readonly ratio: number;
  /** True when its store is in this process: `recordSuccess` writes at once and `flush` has nothing to push. */
  readonly inProcess?: boolean;
  recordSuccess(dependency: string): void;
  /** The dependency's counts now, synchronously (what `state()` reports), for the engine's sampling. */
  counts(dependency: string): WindowCounts;
  flush(): unknown;
  close(): unknown;
}

/** A breaker as the engine drives it (stormguard's `CircuitBreaker` is one): admission, outcomes, and the gate `decide` asks. */
export interface SimBreaker extends BreakerGate {
  acquire(dependency: string): Promise<SimAdmission>;
  /** `acquire` answered synchronously when the breaker's store is in this process; `undefined` otherwise. */
  acquireNow(dependency: string): SimAdmission | undefined;
  /** `admission` carries the probe ticket of a half-open probe: only those outcomes move the breaker. */
  recordSuccess(dependency: string, admission?: { ticket?: string }): Promise<SimBreakerSnapshot>;
  recordFailure(dependency: string, admission?: { ticket?: string }): Promise<SimBreakerSnapshot>;
  /** `recordSuccess` / `recordFailure` applied synchronously, under the same condition as `acquireNow`. */
  recordNow(
    dependency: string,
    outcome: 'success' | 'failure',
    admission?: { ticket?: string },
  ): SimBreakerSnapshot | undefined;
}

/** What the engine reads of a breaker snapshot. */
export interface SimBreakerSnapshot {
  state: string;
  halfOpenAtMs?: number;
  nowMs?: number;
  probesInFlight?: number;
}

/** What the engine reads of a breaker admission. */
export interface SimAdmission {
  allowed: boolean;
  ticket?: string;
  snapshot: SimBreakerSnapshot;
}

/**
 * What one strategy puts between a failed attempt and its retry: the budget each worker consults (the same
 * instance for every worker of a fleet budget, one per worker for per-worker budgets, none for a ceiling
 * alone) and an optional breaker.
 */
export interface StrategyRuntime {
  /**
   * The budget worker `worker` consults; `undefined` means it retries on its ceiling alone. Per-worker
   * budgets are built on a worker's first call, so a large fleet costs what its busy workers use.
   */
  budgetOf(worker: number): SimBudget | undefined;
  /** Each budget built so far, once, to flush, sample and close. */
  readonly budgets: readonly SimBudget[];
  /** How many budgets the strategy has, built or not: 0, 1 for a fleet, or one per worker. */
  readonly budgetCount: number;
  /** The budgets' window (they share their settings), or `undefined` without a budget. */
  readonly budgetWindowMs?: number;
  /**
   * A budget with the strategy's settings that no worker uses, when budgets are built lazily: what every
   * budget not built yet reports when sampled.
   */
  readonly unused?: SimBudget;
  readonly breaker?: SimBreaker;
  /** Flow control's settings: with them, workers ask the flow gate before they take a job. */
  readonly flow?: FlowSettings;
  /** Fleet-wide limits per dependency: with them, a job takes a slot of its dependency before it starts. */
  readonly limits?: LimitSettings;
}
