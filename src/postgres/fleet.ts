import pg from 'pg';
import type { SharedBreakerStoreSettings } from '../breaker/shared-store.js';
import { DEFAULT_PREFIX } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { closeOnce, type Fleet, fleetStatusSources } from '../status/fleet.js';
import { PostgresAuditLog } from './audit-log.js';
import { PostgresBreakerStore } from './breaker-store.js';
import { PostgresBudgetStore } from './budget-store.js';
import { PostgresDeadLetterStore } from './dead-letter-store.js';
import { PostgresFlowStore } from './flow-store.js';
import { PostgresReplayRunStore } from './replay-run-store.js';
import { assertSchema, DEFAULT_SCHEMA } from './schema.js';

/**
 * Options of {@link postgresFleet}: give `pool` or `connectionString`.
 *
 * @example
 * const options: PostgresFleetOptions = { connectionString: process.env.DATABASE_URL, schema: 'stormguard' };
 */
export interface PostgresFleetOptions {
  /** Your `pg.Pool`, shared by every store and never ended by the fleet. */
  pool?: pg.Pool;
  /** A `postgres://` URL: the fleet opens one pool for every store and ends it on `close()`. */
  connectionString?: string;
  /** The schema of stormguard's tables and functions. Default `stormguard`. */
  schema?: string;
  /** The namespace inside the schema, as the Redis key prefix. Default `stormguard`. */
  prefix?: string;
  /**
   * Run the migrations on first use (see `PostgresStoreOptions.migrate`). Set false where
   * `stormguard migrate` runs at deploy time, as operators' tools should. Default true.
   */
  migrate?: boolean;
  /** The breaker store's round-trip timeout and fallback (see `PostgresBreakerStoreOptions`). */
  breaker?: SharedBreakerStoreSettings;
}

const OPTION_NAMES = {
  pool: true,
  connectionString: true,
  schema: true,
  prefix: true,
  migrate: true,
  breaker: true,
} as const satisfies OptionNames<PostgresFleetOptions>;

/**
 * A {@link Fleet} on PostgreSQL: its `pool` is the one every store works on.
 *
 * @example
 * const fleet: PostgresFleet = postgresFleet({ pool });
 * fleet.schema; // 'stormguard'
 */
export interface PostgresFleet extends Fleet {
  readonly backend: 'postgres';
  /** The pool every store works on (yours, or the one opened from `connectionString`). */
  readonly pool: pg.Pool;
  /** The connection string it was built from, when it was (BullMQ 6's PostgreSQL backend can use it). */
  readonly connectionString?: string;
  readonly schema: string;
}

/**
 * Every store of a fleet whose state is in PostgreSQL, on one pool, one schema and one prefix: budgets,
 * breakers, dead letters (evictions recorded in the audit log), replay runs, flow control and the audit
 * log, and the fleet-status sources over them. Hand it to `createDashboard`, or read `fleet.status`
 * with `readFleetStatus`.
 *
 * @example
 * import { readFleetStatus } from 'stormguard';
 * import { postgresFleet } from 'stormguard/postgres';
 *
 * const fleet = postgresFleet({ connectionString: process.env.DATABASE_URL, schema: 'stormguard', migrate: false });
 * const status = await readFleetStatus(fleet.status);
 * await fleet.close();
 */
export function postgresFleet(options: PostgresFleetOptions): PostgresFleet {
  checkOptionNames('postgresFleet', options, OPTION_NAMES, {
    connection: 'give your pg.Pool as `pool`, or a postgres:// URL as `connectionString`',
    redis: 'a Redis option: use redisFleet from stormguard/redis',
  });
  const given = options ?? {};
  if ((given.pool === undefined) === (given.connectionString === undefined))
    throw new InvalidInputError(
      'postgresFleet: give `pool` (your pg.Pool) or `connectionString` (a postgres:// URL), one of them',
    );
  if (given.connectionString !== undefined && given.connectionString.trim() === '')
    throw new InvalidInputError('postgresFleet: connectionString is empty; give a postgres:// URL');
  const schema = given.schema ?? DEFAULT_SCHEMA;
  assertSchema(schema);
  const prefix = given.prefix ?? DEFAULT_PREFIX;
  assertPrefix(prefix);
  const owned = given.pool === undefined;
  const pool =
    given.pool ??
    new pg.Pool({ connectionString: given.connectionString, fallback_application_name: 'stormguard' });
  // An idle client the server dropped must not crash the process; the next query reports the error.
  if (owned) pool.on('error', () => undefined);
  const common = { connection: pool, schema, prefix, migrate: given.migrate ?? true };
  const audit = new PostgresAuditLog(common);
  const stores = {
    budget: new PostgresBudgetStore(common),
    breaker: new PostgresBreakerStore({ ...common, ...given.breaker }),
    deadLetters: new PostgresDeadLetterStore({ ...common, audit }),
    flow: new PostgresFlowStore(common),
  };
  return {
    backend: 'postgres',
    prefix,
    schema,
    pool,
    ...(given.connectionString === undefined ? {} : { connectionString: given.connectionString }),
    ...stores,
    replayRuns: new PostgresReplayRunStore(common),
    audit,
    status: fleetStatusSources(stores),
    close: closeOnce(async () => {
      if (owned && !pool.ended) await pool.end();
    }),
  };
}
