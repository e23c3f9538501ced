/**
 * The retry budget as a first SQL design would have it, for bench/budget to measure
 * `PostgresBudgetStore` against on the same PostgreSQL: read the successes, then update the spend, in a
 * transaction, from the application.
 *
 * - A decision takes four sequential round trips: BEGIN, SELECT … FOR UPDATE (the row lock is what makes
 *   its grants exact under concurrency; without it two workers read the same spend and both grant), UPDATE,
 *   COMMIT.
 * - Fixed one-minute buckets keyed by `floor(now / 60 s)`, so the allowance collapses to the floor at the
 *   start of every minute.
 * - Unlike the Redis sketch it is not otherwise careless: a denial is not counted as spent, and the
 *   allowance is integer arithmetic. What it is measured on is the round trips.
 *
 * Time comes from an injectable `now()` (seconds), as in bench/baselines/naive-budget.ts.
 */
import type pg from 'pg';

export interface NaiveSqlBudgetOptions {
  windowS?: number;
  ratio?: number;
  minAllowance?: number;
  /** Seconds since the epoch. Default: the wall clock. */
  now?: () => number;
}

/** The table the naive design keeps its fixed buckets in. */
export const NAIVE_SQL_TABLE = `CREATE TABLE IF NOT EXISTS naive_budget (
  name text NOT NULL,
  bucket bigint NOT NULL,
  ok bigint NOT NULL DEFAULT 0,
  retry bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (name, bucket)
)`;

/** The naive design's `record_success` / `try_spend_retry` pair over one pool. */
export class NaiveSqlBudget {
  readonly #pool: pg.Pool;
  readonly #windowS: number;
  readonly #ratioPercent: number;
  readonly #minAllowance: number;
  readonly #now: () => number;

  constructor(pool: pg.Pool, options: NaiveSqlBudgetOptions = {}) {
    this.#pool = pool;
    this.#windowS = options.windowS ?? 60;
    this.#ratioPercent = Math.round((options.ratio ?? 0.2) * 100);
    this.#minAllowance = options.minAllowance ?? 10;
    this.#now = options.now ?? (() => Date.now() / 1_000);
  }

  #bucket(): number {
    return Math.floor(this.#now() / this.#windowS);
  }

  /** `record_success`: one upsert (one round trip) per success. */
  async recordSuccess(name: string, count = 1): Promise<void> {
    await this.#pool.query(
      `INSERT INTO naive_budget (name, bucket, ok) VALUES ($1, $2, $3)
       ON CONFLICT (name, bucket) DO UPDATE SET ok = naive_budget.ok + EXCLUDED.ok`,
      [name, this.#bucket(), count],
    );
  }

  /** `try_spend_retry`: BEGIN, SELECT … FOR UPDATE, UPDATE, COMMIT; true if the retry fits. */
  async trySpendRetry(name: string): Promise<boolean> {
    const bucket = this.#bucket();
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ ok: string; retry: string }>(
        'SELECT ok, retry FROM naive_budget WHERE name = $1 AND bucket = $2 FOR UPDATE',
        [name, bucket],
      );
      const ok = Number(rows[0]?.ok ?? 0);
      const used = Number(rows[0]?.retry ?? 0);
      const allowance = Math.max(this.#minAllowance, Math.floor((ok * this.#ratioPercent) / 100));
      const granted = used < allowance;
      if (granted)
        await client.query(
          `INSERT INTO naive_budget (name, bucket, retry) VALUES ($1, $2, 1)
           ON CONFLICT (name, bucket) DO UPDATE SET retry = naive_budget.retry + 1`,
          [name, bucket],
        );
      await client.query('COMMIT');
      return granted;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}
