import type { AuditLog } from '../audit/types.js';
import type { BreakerListing, BreakerStore } from '../breaker/types.js';
import type { DeadLetterStore } from '../runtime/contracts.js';
import type { LimitStore } from '../runtime/limits/store.js';
import type { ReplayQueue } from '../runtime/replay/replay-queue.js';
import type { ReplayRunStore } from '../runtime/replay-runs.js';
import type { Fleet } from '../status/fleet.js';
import type { FleetStatusSources } from '../status/types.js';

/**
 * What the console's routes read and act on: a fleet's stores, and the queues replayed jobs go back to.
 * Internal: `createDashboard` builds it from the `Fleet` it is given ({@link consoleBackendOf}).
 */
export interface ConsoleBackend {
  /** What the overview reads, through the fleet-status read model (`readFleetStatus`). */
  status: FleetStatusSources;
  /** Where dead letters are filed. */
  deadLetters: DeadLetterStore;
  /** The breakers operators override. */
  breakers: BreakerStore & BreakerListing;
  /** Each dependency's limits, which operators change (the fleet's flow store). */
  limits: Pick<LimitStore, 'limitState' | 'limitedDependencies' | 'overrideLimits'>;
  /** Where bulk replays and their snapshots are kept. */
  runs: ReplayRunStore;
  /** Where actions are recorded. */
  audit: AuditLog;
  /** The queue replayed jobs go back to. */
  replayQueue(queue: string): ReplayQueue;
}

/**
 * The console's view of `fleet`, replaying onto the queues `replayQueue` gives.
 *
 * @example
 * const backend = consoleBackendOf(memoryFleet(), () => new MemoryReplayQueue());
 */
export function consoleBackendOf(fleet: Fleet, replayQueue: (queue: string) => ReplayQueue): ConsoleBackend {
  return {
    status: fleet.status,
    deadLetters: fleet.deadLetters,
    breakers: fleet.breaker,
    limits: fleet.flow,
    runs: fleet.replayRuns,
    audit: fleet.audit,
    replayQueue,
  };
}
