import type { AuditLog } from '../audit/types.js';
import type { BreakerListing, BreakerStore } from '../breaker/types.js';
import type { BudgetStore } from '../budget/store.js';
import type { DeadLetterStore } from '../runtime/contracts.js';
import type { FlowStore } from '../runtime/flow-control/store.js';
import type { ReplayRunStore } from '../runtime/replay-runs.js';
import { flowStatusOf } from './flow.js';
import type { FleetStatusSources } from './types.js';

/**
 * Everything one backend holds for a fleet, under one prefix: the stores operators read and act on, the
 * sources of the fleet-status read model, and one `close()`. The CLI and the console take one; `redisFleet`
 * (`stormguard/redis`), `postgresFleet` (`stormguard/postgres`) and {@link memoryFleet} build one from a
 * single connection, so no store can end up on another prefix or schema than its neighbours.
 *
 * @example
 * import { readFleetStatus } from 'stormguard';
 * import { redisFleet } from 'stormguard/redis';
 *
 * const fleet = redisFleet({ redis: process.env.REDIS_URL, prefix: 'shop' });
 * try {
 *   const status = await readFleetStatus(fleet.status);
 *   await fleet.flow.setOff(true); // flow control off fleet-wide
 * } finally {
 *   await fleet.close();
 * }
 */
export interface Fleet {
  /** Where the state lives: `memory`, `redis` or `postgres` (or your own name for a fleet you build). */
  readonly backend: string;
  /** The prefix every store reads and writes under (stormguard's key prefix; a namespace on PostgreSQL). */
  readonly prefix: string;
  /** The fleet-wide retry budgets. */
  readonly budget: BudgetStore;
  /** The fleet-wide circuit breakers, listable (operators override them through it). */
  readonly breaker: BreakerStore & BreakerListing;
  /** The dead letters; its evictions are recorded in {@link audit}. */
  readonly deadLetters: DeadLetterStore;
  /** The bulk replay runs (the console's, automatic replay's, `stormguard dlq runs`). */
  readonly replayRuns: ReplayRunStore;
  /**
   * Flow control's shared state (down marks, slow start, park lists, paused workers, the kill switch) and
   * each dependency's limits (leases, the rate pacer, Retry-After holds, operators' overrides).
   */
  readonly flow: FlowStore;
  /** Where operators' actions (and dead-letter evictions) are recorded. */
  readonly audit: AuditLog;
  /** What `readFleetStatus` reads: every source above, flow control and limits included. */
  readonly status: FleetStatusSources;
  /**
   * Closes what the fleet opened: the client or pool it made from a URL or options. A client or pool you
   * passed stays open (it is yours). Idempotent.
   */
  close(): Promise<void>;
}

/** The stores {@link fleetStatusSources} reads. */
export type FleetStores = Pick<Fleet, 'budget' | 'breaker' | 'deadLetters' | 'flow'>;

/**
 * The read model's sources of a fleet's stores: budgets, breakers, dead letters, flow control (marks,
 * kill switch, paused workers, parked jobs) through {@link flowStatusOf}, and each dependency's limits,
 * which live in the flow store. Every fleet's `status`.
 *
 * @example
 * const status = await readFleetStatus(fleetStatusSources({ budget, breaker, deadLetters, flow }));
 */
export function fleetStatusSources(stores: FleetStores): FleetStatusSources {
  return {
    budget: stores.budget,
    breaker: stores.breaker,
    deadLetters: stores.deadLetters,
    flow: flowStatusOf(stores.flow),
    limits: stores.flow,
  };
}

/**
 * A `close()` that runs `close` once, however often it is called (and concurrently): a fleet is often
 * closed both by its user and by a handler that was given it.
 *
 * @example
 * const close = closeOnce(() => pool.end());
 */
export function closeOnce(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= close();
    return closing;
  };
}
