import { type Clock, systemClock } from '../common/clock.js';
import {
  type BreakerOp,
  type BreakerRecord,
  type BreakerStepInput,
  initialBreakerRecord,
  stepBreaker,
} from './machine.js';
import type { ResolvedBreakerOptions } from './options.js';
import type {
  BreakerAdmission,
  BreakerBatch,
  BreakerRecordResult,
  BreakerSnapshot,
  BreakerStore,
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

/**
 * Breaker state for one process, on an injectable clock. Right for a single worker, for tests and for the
 * simulator; a fleet shares state through `RedisBreakerStore` (`stormguard/redis`) instead.
 *
 * @example
 * const clock = new FakeClock();
 * const breaker = new CircuitBreaker({ store: new MemoryBreakerStore({ clock }) });
 */
export class MemoryBreakerStore implements BreakerStore {
  readonly #records = new Map<string, BreakerRecord>();
  readonly #clock: Clock;
  readonly #degraded: boolean;

  constructor(options: MemoryBreakerStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#degraded = options.degraded ?? false;
  }

  async acquire(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerAdmission> {
    const step = this.#apply(dependency, 'acquire', options);
    return {
      allowed: step.allowed,
      probe: step.probe,
      ...(step.ticket === undefined ? {} : { ticket: step.ticket }),
      transitions: step.transitions,
      snapshot: this.#snapshot(dependency, step.view),
    };
  }

  async record(
    dependency: string,
    outcome: 'success' | 'failure',
    options: ResolvedBreakerOptions,
    ticket?: string,
  ): Promise<BreakerRecordResult> {
    const step = this.#apply(dependency, outcome, options, ticket === undefined ? {} : { ticket });
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

  async read(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerSnapshot> {
    const record = this.#records.get(dependency) ?? initialBreakerRecord();
    return this.#snapshot(dependency, stepBreaker(record, 'peek', this.#clock.now(), options).view);
  }

  /** The dependencies this store holds state for, sorted. */
  dependencies(): string[] {
    return [...this.#records.keys()].sort();
  }

  #apply(dependency: string, op: BreakerOp, options: ResolvedBreakerOptions, input: BreakerStepInput = {}) {
    const step = stepBreaker(
      this.#records.get(dependency) ?? initialBreakerRecord(),
      op,
      this.#clock.now(),
      options,
      input,
    );
    if (op !== 'peek') this.#records.set(dependency, step.record);
    return step;
  }

  #snapshot(dependency: string, view: Omit<BreakerSnapshot, 'dependency' | 'degraded'>): BreakerSnapshot {
    return { dependency, ...view, degraded: this.#degraded };
  }
}
