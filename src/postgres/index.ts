/**
 * stormguard's PostgreSQL stores (`stormguard/postgres`), on node-postgres (`pg`, a peer dependency:
 * bring your own pool or a connection string): the fleet-wide breaker, idempotency, retry budget and
 * flow-control stores, the dead-letter store and its bulk replay runs, for fleets on BullMQ 6's PostgreSQL backend that run no Redis. Every decision is one round trip
 * (one plpgsql function call) on the server's clock; the tables live in a schema you name, created by
 * numbered migrations on first use or by `stormguard migrate --postgres URL`.
 *
 * @example
 * import pg from 'pg';
 * import { PostgresBreakerStore } from 'stormguard/postgres';
 * const store = new PostgresBreakerStore({ connection: new pg.Pool(), schema: 'stormguard' });
 */

export type { BreakerStoreEvents, BreakerStoreFallback } from '../breaker/shared-store.js';
export { PostgresAuditLog, type PostgresAuditLogOptions } from './audit-log.js';
export {
  type ListedPostgresBreaker,
  PostgresBreakerStore,
  type PostgresBreakerStoreOptions,
} from './breaker-store.js';
export { PostgresBudgetStore, type PostgresBudgetStoreOptions } from './budget-store.js';
export type { PostgresConnection, PostgresStoreOptions } from './database.js';
export { PostgresDeadLetterStore, type PostgresDeadLetterStoreOptions } from './dead-letter-store.js';
export { type PostgresFleet, type PostgresFleetOptions, postgresFleet } from './fleet.js';
export { PostgresFlowStore, type PostgresFlowStoreOptions } from './flow-store.js';
export { PostgresIdempotencyStore, type PostgresIdempotencyStoreOptions } from './idempotency-store.js';
export { type Migration, type MigrationReport, migrate, migrations } from './migrations.js';
export { PostgresReplayRunStore, type PostgresReplayRunStoreOptions } from './replay-run-store.js';
export { assertSchema, DEFAULT_SCHEMA } from './schema.js';
