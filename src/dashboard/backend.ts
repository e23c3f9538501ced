import type { AuditLog } from '../audit/types.js';
import type { BreakerListing, BreakerStore } from '../breaker/types.js';
import type { DeadLetterStore } from '../runtime/contracts.js';
import type { ReplayQueue } from '../runtime/replay/replay-queue.js';
import type { ReplayRunStore } from '../runtime/replay-runs.js';
import type { FleetStatusSources } from '../status/types.js';

/**
 * What the console reads and acts on: the fleet's stores, behind one small interface so the handler is
 * the same on Redis and on PostgreSQL. `redisConsoleBackend` and `postgresConsoleBackend` build one; a
 * test or an embedding app may pass its own.
 *
 * @example
 * const backend = redisConsoleBackend({ redis, prefix: 'stormguard' });
 * const handler = createDashboard({ backend });
 */
export interface ConsoleBackend {
  /** What the overview reads, through the fleet-status read model (`readFleetStatus`). */
  status: FleetStatusSources & { deadLetters: DeadLetterStore };
  /** Where dead letters are filed (the same store as `status.deadLetters`). */
  deadLetters: DeadLetterStore;
  /** The breakers operators override (the same store as `status.breaker`). */
  breakers: BreakerStore & BreakerListing;
  /**
   * Where bulk replays and their snapshots are kept (`RedisReplayRunStore`, `PostgresReplayRunStore`, …;
   * absent: bulk replay is not offered).
   */
  runs?: ReplayRunStore;
  /** Where actions are recorded. */
  audit: AuditLog;
  /** The BullMQ queue replayed jobs go back to (opened on first use, closed by `close`). */
  replayQueue(queue: string): ReplayQueue;
  /** Closes what the backend opened (never a client the caller passed). */
  close(): Promise<void>;
}
