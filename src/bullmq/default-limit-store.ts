import { createRequire } from 'node:module';
import type { LimitStore } from '../runtime/limits/store.js';
import type { OwnLimitStore } from '../runtime/limits/worker-limits.js';

type ClosableLimitStore = LimitStore & { close(): Promise<void> };

/** What the default needs of `stormguard/redis` and `stormguard/postgres`: their flow stores. */
interface RedisSubpath {
  RedisFlowStore: new (options: { redis: unknown }) => ClosableLimitStore;
}
interface PostgresSubpath {
  PostgresFlowStore: new (options: { connection: unknown }) => ClosableLimitStore;
}

/**
 * The PostgreSQL connection a flow store can open from a BullMQ 6 PostgreSQL backend's connection: a
 * connection string, pool options with a `connectionString` (the store opens a pool of its own), or a
 * `pg.Pool` (used as it is). `undefined` for anything else (pool options without a connection string).
 *
 * @example
 * postgresConnectionOf({ connectionString: 'postgres://app@db/app', migrate: true }); // 'postgres://app@db/app'
 */
export function postgresConnectionOf(connection: unknown): unknown {
  if (typeof connection === 'string') return connection;
  if (typeof connection !== 'object' || connection === null) return undefined;
  const candidate = connection as { connectionString?: unknown; query?: unknown; connect?: unknown };
  if (typeof candidate.query === 'function' && typeof candidate.connect === 'function') return connection;
  return typeof candidate.connectionString === 'string' ? candidate.connectionString : undefined;
}

/**
 * True when {@link defaultLimitStore} can open a store for this worker: on Redis (no `backend`), or on a
 * backend whose connection names a PostgreSQL database.
 *
 * @example
 * hasDefaultLimitStore({ host: '127.0.0.1', port: 6379 }, undefined); // true
 */
export function hasDefaultLimitStore(connection: unknown, backend: unknown): boolean {
  return backend === undefined || postgresConnectionOf(connection) !== undefined;
}

/**
 * The flow store a worker's limits use when none is named (no `limitsOptions.store`, no flow control): on
 * Redis a `RedisFlowStore` (prefix `stormguard`) on the worker's connection, on BullMQ 6's PostgreSQL
 * backend a `PostgresFlowStore` (schema and prefix `stormguard`) on its database. Given a client or a
 * pool, the store uses it as it is; given options or a connection string it opens its own, which
 * `close()` closes. Loaded from the package's public entry points only when used, as
 * `defaultDeadLetters` loads its store (the adapter never imports a store's source).
 *
 * @example
 * const { store, close } = defaultLimitStore({ host: '127.0.0.1', port: 6379 }, undefined);
 * await store.limitState('openai');
 * await close();
 */
export function defaultLimitStore(connection: unknown, backend: unknown): OwnLimitStore {
  const load = createRequire(import.meta.url);
  if (backend === undefined) {
    const { RedisFlowStore } = load('stormguard/redis') as RedisSubpath;
    const store = new RedisFlowStore({ redis: connection });
    return { store, close: () => store.close() };
  }
  const { PostgresFlowStore } = load('stormguard/postgres') as PostgresSubpath;
  const store = new PostgresFlowStore({ connection: postgresConnectionOf(connection) });
  return { store, close: () => store.close() };
}
