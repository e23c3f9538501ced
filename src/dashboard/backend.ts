import type { BreakerSnapshot } from '../breaker/types.js';
import type { BudgetStatus } from '../budget/status.js';
import type { ReplayQueue } from '../bullmq/replay.js';
import type { DeadLetterStore } from '../runtime/contracts.js';
import type { ConsoleAuditLog } from './audit.js';

/**
 * What the console reads and acts on: the fleet's stores, behind one small interface so the handler is
 * the same on Redis and on PostgreSQL. `redisConsoleBackend` and `postgresConsoleBackend` build one; a
 * test or an embedding app may pass its own.
 *
 * @example
 * const backend = await redisConsoleBackend({ redis, prefix: 'stormguard' });
 * const handler = createDashboard({ backend });
 */
export interface ConsoleBackend {
  /** Every dependency's budget (empty when the fleet keeps no budget state). */
  budgets(): Promise<BudgetStatus[]>;
  /** Every dependency's breaker, as the fleet shares it. */
  breakers(): Promise<BreakerSnapshot[]>;
  /** Where dead letters are filed. */
  deadLetters: DeadLetterStore;
  /** The BullMQ queue replayed jobs go back to (opened on first use, closed by `close`). */
  replayQueue(queue: string): ReplayQueue;
  /** Where actions are recorded. */
  audit: ConsoleAuditLog;
  /** Closes what the backend opened (never a client the caller passed). */
  close(): Promise<void>;
}
