import type { BreakerOp } from '../breaker/machine.js';
import type { ResolvedBreakerOptions } from '../breaker/options.js';
import {
  type BreakerServerStep,
  SharedBreakerStore,
  type SharedBreakerStoreSettings,
} from '../breaker/shared-store.js';
import type { BreakerListing, BreakerOverrideRequest, ListedBreaker } from '../breaker/types.js';
import type { Clock } from '../common/clock.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';

/**
 * Options of {@link PostgresBreakerStore}: the connection, and how the store behaves while PostgreSQL is
 * unreachable (`whenUnavailable` default `local`, `timeoutMs` 500, `retryIntervalMs` 1 000, `clock`).
 *
 * @example
 * new PostgresBreakerStore({ connection: pool, schema: 'shop', timeoutMs: 200 });
 */
export interface PostgresBreakerStoreOptions extends PostgresStoreOptions, SharedBreakerStoreSettings {
  /**
   * TEST ONLY: use this clock's time instead of the server's `clock_timestamp()`. In production leave it
   * unset: the database server is the fleet's one clock. Default unset.
   */
  timeOverride?: Clock;
}

/**
 * A breaker snapshot as the CLI lists it: with the options the breaker last wrote.
 *
 * @example
 * const open = (await store.list()).filter((b) => b.state === 'open');
 */
export type ListedPostgresBreaker = ListedBreaker;

interface StepResult extends BreakerServerStep {
  options: ResolvedBreakerOptions | null;
}

const OPTION_NAMES = {
  timeOverride: true,
  connection: true,
  schema: true,
  prefix: true,
  migrate: true,
  whenUnavailable: true,
  timeoutMs: true,
  retryIntervalMs: true,
  clock: true,
} as const satisfies OptionNames<PostgresBreakerStoreOptions>;

/**
 * Circuit-breaker state shared by the whole fleet through PostgreSQL, for fleets that run without Redis
 * (BullMQ 6 on its PostgreSQL backend). Each operation is one round trip: one call of the plpgsql function
 * `breaker_step` (`sql/001-breaker.sql`; the same machine as the memory and Redis stores), which locks
 * the dependency's row for any write, so admitting a half-open probe is atomic fleet-wide; time is the
 * server's `clock_timestamp()`. Acquire on a closed breaker, the hot path, takes no lock and writes
 * nothing. A dependency's row is read as absent once idle for 2 × (windowMs + coolDownMs).
 *
 * Never crashes or hangs its caller (see `SharedBreakerStore`, src/breaker/shared-store.ts): a round trip
 * that fails or takes longer than `timeoutMs` is answered by the `whenUnavailable` fallback (snapshots say
 * `degraded: true`), and PostgreSQL is tried again after `retryIntervalMs`.
 *
 * Defaults: schema `stormguard`, migrations on first use, fallback `local`, timeout 500 ms, retry 1 s.
 *
 * @example
 * import pg from 'pg';
 * import { CircuitBreaker } from 'stormguard';
 * import { PostgresBreakerStore } from 'stormguard/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const breaker = new CircuitBreaker({ store: new PostgresBreakerStore({ connection: pool }) });
 */
export class PostgresBreakerStore extends SharedBreakerStore implements BreakerListing {
  readonly #db: PostgresDatabase;
  readonly #timeOverride: Clock | undefined;

  constructor(options: PostgresBreakerStoreOptions) {
    checkOptionNames('PostgresBreakerStore', options, OPTION_NAMES);
    const db = new PostgresDatabase(options, 'PostgreSQL breaker store');
    super(options, 'PostgreSQL');
    this.#db = db;
    this.#timeOverride = options.timeOverride;
  }

  /** The schema holding the breaker table. */
  get schema(): string {
    return this.#db.schema;
  }

  /** The namespace of this store's rows in the schema. */
  get prefix(): string {
    return this.#db.prefix;
  }

  /**
   * Every dependency with live breaker state in this schema, sorted, each read with the options its
   * breaker last wrote. For the CLI and dashboards: one query. Unlike the other methods it rejects when
   * PostgreSQL is unreachable (a status report must not invent a fallback).
   *
   * @example
   * for (const b of await store.list()) console.log(b.dependency, b.state);
   */
  async list(): Promise<ListedPostgresBreaker[]> {
    const q = this.#db.q;
    const rows = await this.#db.query<{ dependency: string; step: StepResult }>(
      `SELECT b.dependency, ${q}.breaker_step(b.prefix, b.dependency, 'peek', NULL, 0, $2, NULL, NULL) AS step
         FROM ${q}.breakers b
        WHERE b.prefix = $1 AND b.expires_at_ms > ${q}.now_ms($2) AND b.options IS NOT NULL`,
      [this.#db.prefix, this.#timeOverride?.now() ?? null],
    );
    // Sorted here, as every store sorts (by UTF-16 code units, not the database's collation).
    rows.sort((a, b) => (a.dependency < b.dependency ? -1 : a.dependency > b.dependency ? 1 : 0));
    return rows.map(({ dependency, step }) => {
      const entry: ListedPostgresBreaker = { dependency, ...step.view, degraded: false };
      if (step.options) entry.options = step.options;
      return entry;
    });
  }

  /** Ends the pool when the store opened it from a connection string; leaves your pool alone. */
  close(): Promise<void> {
    return this.#db.close();
  }

  /** One round trip: one call of `breaker_step` (`sql/001-breaker.sql`). */
  protected async step(
    dependency: string,
    op: BreakerOp,
    options: ResolvedBreakerOptions,
    batchedSuccesses: number,
    ticket: string | undefined,
    override?: BreakerOverrideRequest,
  ): Promise<BreakerServerStep> {
    const [row] = await this.#db.query<{ step: StepResult }>(
      `SELECT ${this.#db.q}.breaker_step($1, $2, $3, $4, $5, $6, $7, $8) AS step`,
      [
        this.#db.prefix,
        dependency,
        op,
        JSON.stringify(options),
        batchedSuccesses,
        this.#timeOverride?.now() ?? null,
        ticket ?? null,
        override ? JSON.stringify(override) : null,
      ],
    );
    return row!.step;
  }
}
