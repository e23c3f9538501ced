import { Queue } from 'bullmq';
import { bullmqReplayQueue } from '../bullmq/bullmq-replay-queue.js';
import type { QueueBackendFactory } from '../bullmq/worker-options.js';
import { DEFAULT_PREFIX } from '../common/keys.js';
import type { PostgresConnection } from '../postgres/database.js';
import { flowStatusOf } from '../status/flow.js';
import type { ConsoleBackend } from './backend.js';

/**
 * Options of {@link postgresConsoleBackend}.
 *
 * @example
 * const options: PostgresConsoleBackendOptions = { connection: pool, schema: 'stormguard', url: process.env.DATABASE_URL };
 */
export interface PostgresConsoleBackendOptions {
  /** Your `pg.Pool` (left open by `close()`), or a connection string. */
  connection: PostgresConnection;
  /** The schema of stormguard's tables. Default `stormguard`. */
  schema?: string;
  /** stormguard's key prefix. Default `stormguard`. */
  prefix?: string;
  /**
   * Where replayed jobs go: BullMQ 6's PostgreSQL backend with this connection string. Without it (or
   * on BullMQ 5) the console reads everything and refuses replays, saying so.
   */
  queueUrl?: string;
}

/**
 * The console's view of a fleet whose state is in PostgreSQL: budgets, breakers, dead letters and flow
 * control (paused workers, parked jobs). The schema must be migrated
 * (`stormguard migrate`): the console never runs migrations.
 *
 * @example
 * import { createDashboard, postgresConsoleBackend } from 'stormguard/dashboard';
 *
 * const handler = createDashboard({
 *   backend: await postgresConsoleBackend({ connection: process.env.DATABASE_URL, queueUrl: process.env.DATABASE_URL }),
 * });
 */
export async function postgresConsoleBackend(
  options: PostgresConsoleBackendOptions,
): Promise<ConsoleBackend> {
  // Loaded here, so `stormguard/dashboard` on Redis never needs pg.
  const [
    { PostgresBreakerStore },
    { PostgresBudgetStore },
    { PostgresDeadLetterStore },
    { DEFAULT_SCHEMA },
    { PostgresAuditLog },
    { PostgresReplayRunStore },
    { PostgresFlowStore },
  ] = await Promise.all([
    import('../postgres/breaker-store.js'),
    import('../postgres/budget-store.js'),
    import('../postgres/dead-letter-store.js'),
    import('../postgres/schema.js'),
    import('../postgres/audit-log.js'),
    import('../postgres/replay-run-store.js'),
    import('../postgres/flow-store.js'),
  ]);
  // Every store reads the one prefix: a store without it would read the default's rows (the console
  // then showed no dead letter and no audit entry that `stormguard dlq list --prefix` shows).
  const common = {
    connection: options.connection,
    schema: options.schema ?? DEFAULT_SCHEMA,
    prefix: options.prefix ?? DEFAULT_PREFIX,
    migrate: false,
  };
  const budgets = new PostgresBudgetStore(common);
  const breakers = new PostgresBreakerStore(common);
  const deadLetters = new PostgresDeadLetterStore(common);
  const runs = new PostgresReplayRunStore(common);
  const flow = new PostgresFlowStore(common);
  const bullmq = (await import('bullmq')) as { createPostgresBackend?: QueueBackendFactory };
  const factory = bullmq.createPostgresBackend;
  const queues = new Map<string, Queue>();
  return {
    status: { budget: budgets, breaker: breakers, deadLetters, flow: flowStatusOf(flow) },
    deadLetters,
    breakers,
    runs,
    audit: new PostgresAuditLog(common),
    replayQueue(queue) {
      if (!options.queueUrl || !factory)
        throw new Error(
          'replay on PostgreSQL needs BullMQ 6 (createPostgresBackend) and the queue connection (queueUrl)',
        );
      let opened = queues.get(queue);
      if (!opened) {
        const args = [queue, { connection: options.queueUrl }, factory] as unknown as ConstructorParameters<
          typeof Queue
        >;
        opened = new Queue(...args);
        queues.set(queue, opened);
      }
      return bullmqReplayQueue(opened);
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
      queues.clear();
      await Promise.all([
        budgets.close?.(),
        breakers.close?.(),
        deadLetters.close?.(),
        runs.close(),
        flow.close(),
      ]);
    },
  };
}
