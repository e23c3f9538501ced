/**
 * The two queue backends the worker benchmark runs on, each started for the run on a free loopback port
 * (never the machine's shared services), each with the server's own count of the commands it executed.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import type { BudgetStore } from '../../src/budget/store.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { TestPostgres } from '../../tests/helpers/postgres-server.js';
import { TestRedis } from '../../tests/helpers/redis-server.js';

export type BackendName = 'redis' | 'postgres';

/** A running backend, as the benchmark uses it. */
export interface BenchBackend {
  name: BackendName;
  /** The server and its version, for the printout. */
  server: string;
  /** BullMQ's `connection` option on this backend. */
  connection: unknown;
  /** BullMQ's backend factory (`createPostgresBackend`), or undefined for BullMQ's default (Redis). */
  factory: ((...args: never[]) => unknown) | undefined;
  /** Commands the server has executed so far: Redis `INFO commandstats` (inside Lua scripts included),
   * PostgreSQL `pg_stat_statements` (top-level statements of every client). */
  commandCount(): Promise<number>;
  /** A retry budget store on this backend, under `prefix`. */
  budgetStore(prefix: string): BudgetStore;
  close(): Promise<void>;
}

/** Starts a redis-server of the run's own. */
export async function redisBackend(): Promise<BenchBackend> {
  const server = await TestRedis.start();
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  const info = await redis.info('server');
  return {
    name: 'redis',
    server: `Redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? '?'}`,
    connection: server.connection,
    factory: undefined,
    async commandCount() {
      const stats = await redis.info('commandstats');
      let total = 0;
      for (const match of stats.matchAll(/calls=(\d+)/g)) total += Number(match[1]);
      return total;
    },
    budgetStore: (prefix) => new RedisBudgetStore({ redis, prefix }),
    async close() {
      redis.disconnect();
      await server.close();
    },
  };
}

/**
 * Starts a PostgreSQL of the run's own (initdb into a temporary folder, fsync off) with
 * `pg_stat_statements`, and BullMQ 6's PostgreSQL backend on it.
 */
export async function postgresBackend(): Promise<BenchBackend> {
  const server = await TestPostgres.start({
    settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'top' },
  });
  const admin = new pg.Pool({ connectionString: server.url(), max: 1 });
  const stores = new pg.Pool({ connectionString: server.url(), max: 4 });
  await admin.query('CREATE EXTENSION pg_stat_statements');
  const { rows } = await admin.query<{ server_version: string }>('SHOW server_version');
  const { createPostgresBackend } = (await import('bullmq')) as unknown as {
    createPostgresBackend: (...args: never[]) => unknown;
  };
  return {
    name: 'postgres',
    server: `PostgreSQL ${rows[0]?.server_version ?? '?'}, fsync off`,
    connection: { connectionString: server.url(), migrate: true },
    factory: createPostgresBackend,
    async commandCount() {
      const result = await admin.query<{ n: string }>(
        `SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'`,
      );
      return Number(result.rows[0]?.n);
    },
    budgetStore: (prefix) => new PostgresBudgetStore({ connection: stores, prefix }),
    async close() {
      await stores.end();
      await admin.end();
      await server.close();
    },
  };
}
