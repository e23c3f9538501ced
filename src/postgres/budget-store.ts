import {
  type BudgetStore,
  type ListOptions,
  type StoreRead,
  type StoreSpend,
  type StoreWrite,
  settingsOf,
} from '../budget/store.js';
import type { AgedSuccesses, BudgetWindow } from '../budget/window.js';
import type { Clock } from '../common/clock.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { CorruptBudgetStateError } from '../errors/corrupt-budget-state-error.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';

/**
 * Options of {@link PostgresBudgetStore}.
 *
 * @example
 * const options: PostgresBudgetStoreOptions = { connection: pool, schema: 'shop', prefix: 'checkout' };
 */
export interface PostgresBudgetStoreOptions extends PostgresStoreOptions {
  /**
   * TEST ONLY: use this clock's time instead of the server's `clock_timestamp()`, so a conformance suite can
   * run window cases on a fake clock. In production leave it unset: workers' clocks disagree, the database
   * server's does not. Default unset.
   */
  clock?: Clock;
}

/** What `budget_apply` returns (see sql/003-budget.sql). */
interface Reply {
  granted?: number;
  allowance: number;
  spent: number;
  denied: number;
  successes: number;
  window: BudgetWindow;
  pending?: BudgetWindow;
  reset?: string;
  problem?: string;
}

const OPTION_NAMES = {
  clock: true,
  connection: true,
  schema: true,
  prefix: true,
  migrate: true,
} as const satisfies OptionNames<PostgresBudgetStoreOptions>;

/**
 * The fleet-wide retry budget store on PostgreSQL, for fleets without Redis. Each `trySpend` is one round
 * trip, one call of the plpgsql function `budget_apply` (`sql/003-budget.sql`): the dependency's row is
 * locked, the caller's settings applied, batched successes added (each group stamped with the server's
 * time minus its age), the sliding window summed and the retries granted or denied, with time from the
 * server's `clock_timestamp()`. The rules and integer arithmetic are those of every budget store
 * (src/budget/window.ts): the settings stored with a dependency govern every worker, a higher
 * `settingsVersion` takes over once it holds a whole window of counts, a denial is never spent. A flushed
 * success batch is one round trip per dependency. A row is read as absent two windows after its last
 * write; a row that cannot be read affects its own dependency only (a write replaces it and says so in
 * `reset`, a read rejects with a `CorruptBudgetStateError`).
 *
 * When PostgreSQL cannot be reached the calls reject, and `RetryBudget` falls back to its declared
 * degraded mode, as with any store. The commit of a decision does not wait for the disk (see the SQL file):
 * a server crash may forget the last moment's counts, never grant past them.
 *
 * Defaults: schema `stormguard`, prefix `stormguard`, migrations on first use.
 *
 * @example
 * import pg from 'pg';
 * import { RetryBudget } from 'stormguard';
 * import { PostgresBudgetStore } from 'stormguard/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const budget = new RetryBudget({ store: new PostgresBudgetStore({ connection: pool }), ratio: 0.2 });
 */
export class PostgresBudgetStore implements BudgetStore {
  readonly remote = true;
  readonly #db: PostgresDatabase;
  readonly #clock: Clock | undefined;
  readonly #write: string;
  readonly #read: string;

  constructor(options: PostgresBudgetStoreOptions) {
    checkOptionNames('PostgresBudgetStore', options, OPTION_NAMES);
    this.#db = new PostgresDatabase(options, 'PostgreSQL budget store');
    this.#clock = options.clock;
    const q = this.#db.q;
    this.#write = `SELECT ${q}.budget_apply($1, $2, true, $3, $4, $5, $6, $7, $8, $9, $10, $11) AS r`;
    this.#read = `SELECT ${q}.budget_apply($1, $2, false, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, $3) AS r`;
  }

  /** The schema holding the budget table. */
  get schema(): string {
    return this.#db.schema;
  }

  /** The namespace of this store's rows in the schema. */
  get prefix(): string {
    return this.#db.prefix;
  }

  async trySpend(
    dependency: string,
    window: BudgetWindow,
    successes: readonly AgedSuccesses[],
    count: number,
  ): Promise<StoreSpend> {
    const [row] = await this.#db.query<{ r: Reply }>(this.#write, [
      this.#db.prefix,
      dependency,
      window.bucketMs,
      window.buckets,
      window.ratioPpm,
      window.minAllowance,
      window.version,
      count,
      successes.map((s) => s.ageMs),
      successes.map((s) => s.count),
      this.#now(),
    ]);
    const {
      granted,
      allowance,
      spent,
      denied,
      successes: counted,
      window: governing,
      pending,
      reset,
    } = row!.r;
    const spend: StoreSpend = {
      granted: granted!,
      allowance,
      spent,
      denied,
      successes: counted,
      window: governing,
    };
    if (pending) spend.pending = pending;
    if (reset !== undefined) spend.reset = reset;
    return spend;
  }

  async addSuccesses(
    dependency: string,
    successes: readonly AgedSuccesses[],
    window: BudgetWindow,
  ): Promise<StoreWrite> {
    return settingsOf(await this.trySpend(dependency, window, successes, 0));
  }

  async read(dependency: string): Promise<StoreRead | undefined> {
    const [row] = await this.#db.query<{ r: Reply | null }>(this.#read, [
      this.#db.prefix,
      dependency,
      this.#now(),
    ]);
    const reply = row?.r;
    if (!reply) return undefined;
    if (reply.problem !== undefined) throw new CorruptBudgetStateError(dependency, reply.problem);
    const read: StoreRead = {
      allowance: reply.allowance,
      spent: reply.spent,
      denied: reply.denied,
      successes: reply.successes,
      window: reply.window,
    };
    if (reply.pending) read.pending = reply.pending;
    return read;
  }

  /** Every dependency with a live budget under this prefix, sorted: one query. */
  async dependencies(options: ListOptions = {}): Promise<string[]> {
    options.signal?.throwIfAborted();
    const q = this.#db.q;
    const rows = await this.#db.query<{ dependency: string }>(
      `SELECT dependency FROM ${q}.budgets WHERE prefix = $1 AND expires_at_ms > ${q}.now_ms($2)`,
      [this.#db.prefix, this.#now()],
    );
    // Sorted here, as every store sorts (by UTF-16 code units, not the database's collation).
    return rows.map((row) => row.dependency).sort();
  }

  async ping(): Promise<void> {
    await this.#db.query('SELECT 1', []);
  }

  /** Ends the pool when the store opened it from a connection string; leaves your pool alone. */
  close(): Promise<void> {
    return this.#db.close();
  }

  #now(): number | null {
    return this.#clock ? this.#clock.now() : null;
  }
}
