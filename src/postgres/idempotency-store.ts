import type { Clock } from '../common/clock.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import type { IdempotencyClaim, IdempotencyStore } from '../idempotency/store.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';

/**
 * Options of {@link PostgresIdempotencyStore}.
 *
 * @example
 * new PostgresIdempotencyStore({ connection: process.env.DATABASE_URL!, schema: 'shop' });
 */
export interface PostgresIdempotencyStoreOptions extends PostgresStoreOptions {
  /**
   * TEST ONLY: use this clock's time instead of the server's `clock_timestamp()`. In production leave it
   * unset: the database server is the fleet's one clock. Default unset.
   */
  timeOverride?: Clock;
}

const OPTION_NAMES = {
  timeOverride: true,
  connection: true,
  schema: true,
  prefix: true,
  migrate: true,
} as const satisfies OptionNames<PostgresIdempotencyStoreOptions>;

/**
 * The idempotency guard's store in PostgreSQL: one row per key, one function call (one round trip) per
 * step (`sql/002-idempotency.sql`, `sql/007-idempotency-finish-again.sql`), with the Redis store's contract: a claim lives `inFlightTtlMs`, an
 * outcome `ttlMs`, both on the server's clock. Expired rows read as absent; each claim deletes up to
 * 4 of them, so the table needs no scheduled clean-up.
 *
 * Defaults: schema `stormguard`, migrations on first use.
 *
 * @example
 * import pg from 'pg';
 * import { idempotencyGuard } from 'stormguard';
 * import { PostgresIdempotencyStore } from 'stormguard/postgres';
 *
 * const store = new PostgresIdempotencyStore({ connection: new pg.Pool() });
 * const guard = idempotencyGuard({ store, ttlMs: 86_400_000 });
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  readonly #db: PostgresDatabase;
  readonly #timeOverride: Clock | undefined;

  constructor(options: PostgresIdempotencyStoreOptions) {
    checkOptionNames('PostgresIdempotencyStore', options, OPTION_NAMES);
    this.#db = new PostgresDatabase(options, 'PostgreSQL idempotency store');
    this.#timeOverride = options.timeOverride;
  }

  async begin(key: string, token: string, inFlightTtlMs: number): Promise<IdempotencyClaim> {
    return this.#call<IdempotencyClaim>('idempotency_begin', [key, token, inFlightTtlMs]);
  }

  async finish(key: string, token: string, value: string, ttlMs: number): Promise<boolean> {
    return this.#call<boolean>('idempotency_finish', [key, token, value, ttlMs]);
  }

  async release(key: string, token: string): Promise<boolean> {
    return this.#call<boolean>('idempotency_release', [key, token]);
  }

  async renew(key: string, token: string, inFlightTtlMs: number): Promise<boolean> {
    return this.#call<boolean>('idempotency_renew', [key, token, inFlightTtlMs]);
  }

  /** Ends the pool when the store opened it from a connection string; leaves your pool alone. */
  close(): Promise<void> {
    return this.#db.close();
  }

  /** One round trip: `SELECT <schema>.<fn>(prefix, ...values, test time or NULL for the server's)`. */
  async #call<T>(fn: string, values: unknown[]): Promise<T> {
    const args = [this.#db.prefix, ...values, this.#timeOverride?.now() ?? null];
    const placeholders = args.map((_, i) => `$${i + 1}`).join(', ');
    const [row] = await this.#db.query<{ result: T }>(
      `SELECT ${this.#db.q}.${fn}(${placeholders}) AS result`,
      args,
    );
    return row!.result;
  }
}
