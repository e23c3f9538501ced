import type pg from 'pg';
import type { PostgresFleet } from '../postgres/fleet.js';
import type { RedisFleet } from '../redis/fleet.js';
import { explainSchemaError } from './connect-postgres.js';
import { connectRedis } from './connect-redis.js';
import type { FleetBackend } from './options.js';
import { parsePostgresUrl } from './postgres-url.js';

/**
 * The fleet a command works on, as the CLI opened it: a `RedisFleet` or a `PostgresFleet` (so a command
 * that opens BullMQ queues reaches the same connection), with `explain`, which turns PostgreSQL's
 * "relation does not exist" into "run stormguard migrate" (and leaves any other error as it is).
 */
export type CliFleet = (RedisFleet | PostgresFleet) & {
  /** Where the flags pointed: the backend and its URL (and schema). */
  readonly target: FleetBackend;
  explain(error: unknown): unknown;
};

/** How a command's fleet is opened. */
export interface OpenFleetOptions {
  /**
   * For commands that run until stopped (`dashboard`, `budget watch`, `metrics serve`): the Redis
   * connection reconnects after a drop, and each command fails within `commandTimeoutMs` meanwhile (a
   * PostgreSQL pool reconnects by itself). Default false: a drop ends the command.
   */
  longRunning?: boolean;
  /**
   * PostgreSQL is not asked before the command starts, and its pool is node-postgres's default size: an
   * unreachable server shows as errors in what the command reads (the console) instead of stopping it.
   * Default false: a one-shot pool, and a server that cannot be reached within 5 s fails the command.
   */
  lazy?: boolean;
  /** With `longRunning` on Redis, the longest one command may take. Default 2000 ms. */
  commandTimeoutMs?: number;
  /** Listing budgets and breakers writes nothing on Redis (status commands). Default false. */
  readOnly?: boolean;
  /** The breaker store's round-trip timeout, for commands that act on breakers. Default the store's. */
  breakerTimeoutMs?: number;
}

/**
 * The one place the CLI turns its backend flags into stores: connects to the backend `fleetBackend` chose
 * (Redis by default, PostgreSQL with `--postgres`; the schema is never migrated from here, that is
 * `stormguard migrate`), builds the whole fleet under `prefix` with `redisFleet` or `postgresFleet`,
 * runs `work`, and closes every connection whatever happens. A PostgreSQL error of `work` that means
 * the schema lacks stormguard's tables is rethrown as "run stormguard migrate".
 *
 * @example
 * const rows = await withFleet(fleetBackend(flags, command), flags.prefix, (fleet) =>
 *   readFleetStatus(fleet.status, { throwOnError: true }),
 * );
 */
export async function withFleet<T>(
  target: FleetBackend,
  prefix: string,
  work: (fleet: CliFleet) => Promise<T>,
  options: OpenFleetOptions = {},
): Promise<T> {
  const fleet = await openFleet(target, prefix, options);
  try {
    return await work(fleet);
  } catch (error) {
    throw fleet.explain(error);
  } finally {
    await fleet.close();
  }
}

/**
 * Opens the fleet {@link withFleet} runs a command on; the caller closes it (`dashboard` holds it until
 * it is stopped).
 *
 * @example
 * const fleet = await openFleet({ kind: 'redis', url: 'redis://127.0.0.1:6379' }, 'stormguard', { longRunning: true });
 */
export async function openFleet(
  target: FleetBackend,
  prefix: string,
  options: OpenFleetOptions = {},
): Promise<CliFleet> {
  const breaker =
    options.breakerTimeoutMs === undefined ? {} : { breaker: { timeoutMs: options.breakerTimeoutMs } };
  if (target.kind === 'redis') {
    const redis = await connectRedis(target.url, {
      ...(options.longRunning ? { longRunning: true } : {}),
      ...(options.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: options.commandTimeoutMs }),
    });
    try {
      // Loaded here, so commands on PostgreSQL never load the Redis stores (nor ioredis).
      const { redisFleet } = await import('../redis/fleet.js');
      const fleet = redisFleet({
        redis,
        prefix,
        ...(options.readOnly ? { readOnly: true } : {}),
        ...breaker,
      });
      const closeStores = fleet.close;
      return Object.assign(fleet, {
        target,
        explain: (error: unknown) => error,
        close: async () => {
          await closeStores();
          redis.disconnect();
        },
      });
    } catch (error) {
      redis.disconnect();
      throw error;
    }
  }
  const pool = await connectPostgres(target.url, options.lazy === true);
  const { postgresFleet } = await import('../postgres/fleet.js');
  const fleet = postgresFleet({ pool, schema: target.schema, prefix, migrate: false, ...breaker });
  return Object.assign(fleet, {
    target,
    // Named for commands and options that open BullMQ 6's PostgreSQL backend on the same database.
    connectionString: target.url,
    explain: (error: unknown) => explainSchemaError(target, error),
    close: async () => {
      if (!pool.ended) await pool.end();
    },
  });
}

/**
 * A pool for a command. By default it is small, gives up connecting within 5 s, and asks the server once
 * before the command runs, so an unreachable one fails with a one-line error naming the (masked) URL. A
 * lazy one is node-postgres's default and is not asked: the server may come and go while the command
 * runs. node-postgres is loaded here, on first use.
 */
async function connectPostgres(url: string, lazy: boolean): Promise<pg.Pool> {
  const { shown } = parsePostgresUrl(url);
  // A missing pg is named by the CLI with the command and the install line (src/cli/peers.ts).
  const { default: pgModule } = await import('pg');
  const pool = new pgModule.Pool({
    connectionString: url,
    fallback_application_name: 'stormguard',
    ...(lazy ? {} : { connectionTimeoutMillis: 5_000, max: 2 }),
  });
  // An idle client the server dropped must not crash the CLI; the next query reports the error.
  pool.on('error', () => undefined);
  if (lazy) return pool;
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end();
    throw new Error(
      `cannot reach PostgreSQL at ${shown}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return pool;
}
