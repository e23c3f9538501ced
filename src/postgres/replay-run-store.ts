import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { REPLAY_RUNS_KEPT, type ReplayRun, type ReplayRunStore } from '../runtime/replay-runs.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';

/**
 * Options of {@link PostgresReplayRunStore}.
 *
 * @example
 * new PostgresReplayRunStore({ connection: pool, schema: 'shop', prefix: 'shop' });
 */
export interface PostgresReplayRunStoreOptions extends PostgresStoreOptions {}

/** The runs `listRuns` returns, newest first, as the other stores. */
const LISTED = 100;
/** A run id as the store hands them out: a positive whole number. */
const RUN_ID = /^[1-9]\d{0,17}$/;

const OPTION_NAMES = {
  connection: true,
  schema: true,
  prefix: true,
  migrate: true,
} as const satisfies OptionNames<PostgresReplayRunStoreOptions>;

/**
 * Replay runs on PostgreSQL (`sql/009-replay-runs.sql`): each run as JSON with its version in
 * `replay_runs`, its snapshot of record ids one row per position in `replay_run_ids`. Creating a run is
 * one statement (its id, its snapshot and its row together); an update is one statement, a
 * compare-and-set on the run's version, so two processes never both run one.
 *
 * @example
 * import { PostgresDeadLetterStore, PostgresReplayRunStore } from 'stormguard/postgres';
 * import { createReplayRun, runReplay } from 'stormguard/bullmq';
 *
 * const store = new PostgresDeadLetterStore({ connection: process.env.DATABASE_URL! });
 * const runs = new PostgresReplayRunStore({ connection: process.env.DATABASE_URL! });
 * const run = await createReplayRun({ store, runs }, 'index', { reason: 'breaker-open', ratePerSecond: 20 });
 * await runReplay({ store, runs, queue: 'index', jobs }, run.id);
 */
export class PostgresReplayRunStore implements ReplayRunStore {
  readonly #db: PostgresDatabase;

  constructor(options: PostgresReplayRunStoreOptions) {
    checkOptionNames('PostgresReplayRunStore', options, OPTION_NAMES);
    this.#db = new PostgresDatabase(options, 'PostgreSQL replay-run store');
  }

  async createRun(run: Omit<ReplayRun, 'id' | 'version'>, recordIds: readonly string[]): Promise<ReplayRun> {
    const q = this.#db.q;
    const [row] = await this.#db.query<{ id: string }>(
      `WITH s AS (
         INSERT INTO ${q}.replay_run_seq AS t (prefix, seq) VALUES ($1, 1)
         ON CONFLICT (prefix) DO UPDATE SET seq = t.seq + 1 RETURNING seq
       ), ids AS (
         INSERT INTO ${q}.replay_run_ids (prefix, run_id, position, record_id)
         SELECT $1, s.seq, o.n - 1, o.record_id FROM s, unnest($2::text[]) WITH ORDINALITY AS o(record_id, n)
       )
       INSERT INTO ${q}.replay_runs (prefix, id, version, run)
       SELECT $1, s.seq, 1, $3::jsonb || jsonb_build_object('id', s.seq::text, 'version', 1) FROM s
       RETURNING id`,
      [this.#db.prefix, recordIds, JSON.stringify(run)],
    );
    // Runs beyond the newest REPLAY_RUNS_KEPT go with their snapshots, unless started and open (a row
    // started meanwhile is re-checked under its lock, and kept).
    await this.#db.query(
      `WITH old AS (
         DELETE FROM ${q}.replay_runs r
          WHERE r.prefix = $1 AND r.id <= $2::bigint - $3
            AND NOT (r.run->'startedAtMs' IS NOT NULL AND r.run->>'status' IN ('pending', 'running'))
          RETURNING r.id
       )
       DELETE FROM ${q}.replay_run_ids i USING old WHERE i.prefix = $1 AND i.run_id = old.id`,
      [this.#db.prefix, row!.id, REPLAY_RUNS_KEPT],
    );
    return { ...run, id: String(row!.id), version: 1 };
  }

  async getRun(id: string): Promise<ReplayRun | undefined> {
    if (!RUN_ID.test(id)) return undefined;
    const [row] = await this.#db.query<{ run: ReplayRun }>(
      `SELECT run FROM ${this.#db.q}.replay_runs WHERE prefix = $1 AND id = $2`,
      [this.#db.prefix, id],
    );
    return row?.run;
  }

  async listRuns(): Promise<ReplayRun[]> {
    const rows = await this.#db.query<{ run: ReplayRun }>(
      `SELECT run FROM ${this.#db.q}.replay_runs WHERE prefix = $1 ORDER BY id DESC LIMIT $2`,
      [this.#db.prefix, LISTED],
    );
    return rows.map((row) => row.run);
  }

  async startedRuns(): Promise<ReplayRun[]> {
    const rows = await this.#db.query<{ run: ReplayRun }>(
      `SELECT run FROM ${this.#db.q}.replay_runs
        WHERE prefix = $1 AND run->'startedAtMs' IS NOT NULL AND run->>'status' IN ('pending', 'running')
        ORDER BY id`,
      [this.#db.prefix],
    );
    return rows.map((row) => row.run);
  }

  async runRecordIds(id: string, from: number, count: number): Promise<string[]> {
    if (!RUN_ID.test(id) || count <= 0) return [];
    const rows = await this.#db.query<{ record_id: string }>(
      `SELECT record_id FROM ${this.#db.q}.replay_run_ids
        WHERE prefix = $1 AND run_id = $2 AND position >= $3 AND position < $3 + $4 ORDER BY position`,
      [this.#db.prefix, id, Math.max(0, from), count],
    );
    return rows.map((row) => row.record_id);
  }

  async updateRun(run: ReplayRun): Promise<ReplayRun | undefined> {
    if (!RUN_ID.test(run.id)) return undefined;
    const next: ReplayRun = { ...run, version: run.version + 1 };
    const rows = await this.#db.query(
      `UPDATE ${this.#db.q}.replay_runs SET version = $3 + 1, run = $4::jsonb
        WHERE prefix = $1 AND id = $2 AND version = $3 RETURNING id`,
      [this.#db.prefix, run.id, run.version, JSON.stringify(next)],
    );
    return rows.length === 1 ? next : undefined;
  }

  /** Ends the pool when the store opened it from a connection string; leaves your pool alone. */
  close(): Promise<void> {
    return this.#db.close();
  }
}
