import { MemoryAuditLog } from '../audit/memory-audit-log.js';
import { MemoryBreakerStore } from '../breaker/memory-store.js';
import { MemoryBudgetStore } from '../budget/memory-store.js';
import type { Clock } from '../common/clock.js';
import { DEFAULT_PREFIX } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import { MemoryFlowStore } from '../runtime/flow-control/memory-store.js';
import { MemoryDeadLetterStore } from '../runtime/memory-dead-letter-store.js';
import { MemoryReplayRunStore } from '../runtime/replay-runs.js';
import { type Fleet, fleetStatusSources } from './fleet.js';

/**
 * Options of {@link memoryFleet}.
 *
 * @example
 * const options: MemoryFleetOptions = { clock: new FakeClock(0) };
 */
export interface MemoryFleetOptions {
  /** The time of every store. Default: the system clock. */
  clock?: Clock;
  /** The prefix the fleet reports (memory stores share no keyspace, so it only names them). Default `stormguard`. */
  prefix?: string;
}

/**
 * A whole {@link Fleet} in this process's memory: for tests, the simulator and single-process tools. Its
 * dead-letter store records evictions in its audit log, as the Redis and PostgreSQL fleets do.
 *
 * @example
 * import { createDashboard } from 'stormguard/dashboard';
 * import { memoryFleet } from 'stormguard';
 *
 * const fleet = memoryFleet();
 * const handler = createDashboard({ fleet, replayQueue: () => myQueue });
 */
export function memoryFleet(options: MemoryFleetOptions = {}): Fleet {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  assertPrefix(prefix);
  const clock = options.clock ? { clock: options.clock } : {};
  const audit = new MemoryAuditLog(clock);
  const stores = {
    budget: new MemoryBudgetStore(clock),
    breaker: new MemoryBreakerStore(clock),
    deadLetters: new MemoryDeadLetterStore({ ...clock, audit }),
    flow: new MemoryFlowStore(clock),
  };
  return {
    backend: 'memory',
    prefix,
    ...stores,
    replayRuns: new MemoryReplayRunStore(),
    audit,
    status: fleetStatusSources(stores),
    close: async () => {},
  };
}
