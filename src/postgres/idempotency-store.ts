import type { Clock } from '../common/clock.js';
import type { IdempotencyClaim, IdempotencyStore } from '../redis/idempotency-store.js';
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

/**
 * The idempotency guard's store in PostgreSQL: one row per key, one function call (one round trip) per
 * step (`sql/002-idempotency.sql`), with the Redis store's contract: a claim lives `inFlightTtlMs`, an
 * outcome `ttlMs`, both on the server's clock. Expired rows read as absent and are deleted a few at a
 * time by later claims, so the table needs no scheduled clean-up.
 *
 * Defaults: schema `stormguard`, migrations on first use.
 *
 * @example
 * import pg from 'pg';
 * import { idempotencyGuard } from 'stormguard/bullmq';
 * import { PostgresIdempotencyStore } from 'stormguard/postgres';
 *
 * const store = new PostgresIdempotencyStore({ connection: new pg.Pool() });
 * const guard = idempotencyGuard({ store, ttlMs: 86_400_000 });
 */
export class PostgresIdempotencyStore implements IdempotencyStore {
  readonly #db: PostgresDatabase;
  readonly #timeOverride: Clock | undefined;

  constructor(options: PostgresIdempotencyStoreOptions) {
    this.#db = new PostgresDatabase(options, 'PostgreSQL idempotency store');
    this.#timeOverride = options.timeOverride;
  }

  async begin(key: string, token: string, inFlightTtlMs: number): Promise<IdempotencyClaim> {
    const [row] = await this.#call<{ claim: IdempotencyClaim }>(
      'idempotency_begin($1, $2, $3, $4) AS claim',
      [key, token, inFlightTtlMs],
    );
    return row!.claim;
  }

  async finish(key: string, token: string, value: string, ttlMs: number): Promise<boolean> {
    return this.#ok('idempotency_finish($1, $2, $3, $4, $5)', [key, token, value, ttlMs]);
  }

  async release(key: string, token: string): Promise<boolean> {
    return this.#ok('idempotency_release($1, $2, $3)', [key, token]);
  }

  async renew(key: string, token: string, inFlightTtlMs: number): Promise<boolean> {
    return this.#ok('idempotency_renew($1, $2, $3, $4)', [key, token, inFlightTtlMs]);
  }

  /** Ends the pool when the store opened it from a connection string; leaves your pool alone. */
  close(): Promise<void> {
    return this.#db.close();
  }

  async #ok(call: string, values: unknown[]): Promise<boolean> {
    const [row] = await this.#call<{ ok: boolean }>(`${call} AS ok`, values);
    return row!.ok;
  }

  /** `SELECT <schema>.<call>` with the test clock's time (or NULL: the server's) as the last argument. */
  #call<Row extends { [column: string]: unknown }>(call: string, values: unknown[]): Promise<Row[]> {
    return this.#db.query<Row>(`SELECT ${this.#db.q}.${call}`, [
      ...values,
      this.#timeOverride?.now() ?? null,
    ]);
  }
}
