import pg from 'pg';
import { DEFAULT_PREFIX } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { migrate } from './migrations.js';
import { assertSchema, DEFAULT_SCHEMA, quotedSchema } from './schema.js';

/**
 * How a PostgreSQL store reaches the database: your `pg.Pool` (shared with the rest of your code; the
 * store never ends it) or a connection string (the store opens a pool of its own and ends it on `close()`).
 *
 * @example
 * const connection: PostgresConnection = process.env.DATABASE_URL ?? new pg.Pool({ max: 10 });
 */
export type PostgresConnection = pg.Pool | string;

/**
 * Options every PostgreSQL store takes.
 *
 * @example
 * const options: PostgresStoreOptions = { connection: pool, schema: 'shop_retries' };
 */
export interface PostgresStoreOptions {
  /** Your `pg.Pool`, or a connection string (`postgres://user@host:5432/db`). Required. */
  connection: PostgresConnection;
  /**
   * The schema holding stormguard's tables and functions: 1-63 lower-case letters, digits or `_`.
   * Default `stormguard`.
   */
  schema?: string;
  /**
   * The application's namespace inside the schema, as the Redis stores' key prefix: stores with different
   * prefixes never see each other's rows. Any 1-64 characters. Default `stormguard`.
   */
  prefix?: string;
  /**
   * Run the migrations on first use (once per pool and schema in a process; concurrent workers migrate
   * once, under an advisory lock). Set false when `stormguard migrate` runs at deploy time and the
   * workers' role may not create tables. Default true.
   */
  migrate?: boolean;
}

// One migration per pool and schema in a process, shared by every store on that pool.
const migrated = new WeakMap<pg.Pool, Map<string, Promise<unknown>>>();

/**
 * A store's way to the database: the pool, the schema, migrations on first use, and `close()` ending only
 * a pool the store opened itself. Internal to `src/postgres`.
 */
export class PostgresDatabase {
  readonly pool: pg.Pool;
  readonly schema: string;
  readonly prefix: string;
  /** The quoted schema, for SQL text. */
  readonly q: string;
  readonly #owned: boolean;
  readonly #migrate: boolean;

  constructor(options: PostgresStoreOptions, subject: string) {
    const connection = options?.connection;
    const schema = options?.schema ?? DEFAULT_SCHEMA;
    assertSchema(schema);
    const prefix = options?.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    this.prefix = prefix;
    if (typeof connection === 'string') {
      if (connection.trim() === '')
        throw new InvalidInputError(`${subject}: connection is empty; pass a pg.Pool or a postgres:// URL`);
      // Named in pg_stat_activity unless the connection string names itself (application_name=...).
      this.pool = new pg.Pool({ connectionString: connection, fallback_application_name: 'stormguard' });
      // An idle client the server dropped must not crash the process; the next query reports the error.
      this.pool.on('error', () => undefined);
      this.#owned = true;
    } else if (isPool(connection)) {
      this.pool = connection;
      this.#owned = false;
    } else {
      throw new InvalidInputError(`${subject}: connection must be a pg.Pool or a postgres:// URL`);
    }
    this.schema = schema;
    this.q = quotedSchema(schema);
    this.#migrate = options.migrate ?? true;
  }

  /** Runs one statement (one round trip), after the migrations when this is the first use. */
  async query<Row extends pg.QueryResultRow>(text: string, values: readonly unknown[]): Promise<Row[]> {
    if (this.#migrate) await this.ready();
    const result = await this.pool.query<Row>(text, values as unknown[]);
    return result.rows;
  }

  /** Resolves once the schema is migrated (a failed attempt is tried again by the next call). */
  ready(): Promise<unknown> {
    let bySchema = migrated.get(this.pool);
    if (!bySchema) {
      bySchema = new Map();
      migrated.set(this.pool, bySchema);
    }
    let pending = bySchema.get(this.schema);
    if (!pending) {
      const map = bySchema;
      pending = migrate(this.pool, this.schema).catch((error: unknown) => {
        map.delete(this.schema);
        throw error;
      });
      bySchema.set(this.schema, pending);
    }
    return pending;
  }

  /** Ends the pool when the store opened it from a connection string; leaves your pool alone. */
  async close(): Promise<void> {
    if (this.#owned && !this.pool.ended) await this.pool.end();
  }
}

function isPool(value: unknown): value is pg.Pool {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as pg.Pool).query === 'function' &&
    typeof (value as pg.Pool).connect === 'function'
  );
}
