import type { Clock } from '../common/clock.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { PaceVerdict } from '../runtime/flow-control/pacing.js';
import type { SlowStartRamp } from '../runtime/flow-control/slow-start.js';
import {
  byQueueThenWorker,
  type FlowSnapshot,
  type FlowStore,
  type PausedWorkerEntry,
} from '../runtime/flow-control/store.js';
import { checkHoldMs, checkLimitExchange, normalOverride } from '../runtime/limits/limit-maths.js';
import type {
  LimitExchange,
  LimitExchangeResult,
  LimitHold,
  LimitState,
  LimitStore,
} from '../runtime/limits/store.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';

/**
 * Options of {@link PostgresFlowStore}.
 *
 * @example
 * const options: PostgresFlowStoreOptions = { connection: pool, schema: 'shop', stateTtlMs: 3_600_000 };
 */
export interface PostgresFlowStoreOptions extends PostgresStoreOptions {
  /** How long a dependency's flow state outlives its last write, in ms. Default 24 hours. */
  stateTtlMs?: number;
  /**
   * TEST ONLY: use this clock's time instead of the server's `clock_timestamp()`. In production leave it
   * unset: the database server is the fleet's one clock. Default unset.
   */
  clock?: Clock;
}

const DEFAULT_STATE_TTL_MS = 24 * 3_600_000;

/** What `flow_mark` returns (see sql/008-flow-control.sql). */
interface MarkReply {
  down: boolean;
  recoveredAtMs: number | null;
  nowMs: number;
  off: boolean;
}

const OPTION_NAMES = {
  stateTtlMs: true,
  clock: true,
  connection: true,
  schema: true,
  prefix: true,
  migrate: true,
} as const satisfies OptionNames<PostgresFlowStoreOptions>;

/**
 * The fleet-wide {@link FlowStore} on PostgreSQL, for fleets without Redis (BullMQ 6 on its PostgreSQL
 * backend). Every operation is one round trip, one call of a plpgsql function (`sql/008-flow-control.sql`)
 * that locks what it changes: a dependency's row (down mark, recovery time, the pacer's state) for
 * `markUp` and `admit`, so the ramp starts once and each slot is granted once fleet-wide; a park list's
 * row for `park` and `release`, so a parked job is released once, oldest first. Time is the server's
 * `clock_timestamp()`; `read` and `markUp` report the kill switch in the same call. Paused workers are
 * rows of `flow_paused` (`sql/010-flow-paused.sql`), one per worker and queue, each with its own expiry. Rows read as absent
 * `stateTtlMs` after their last write (a park list: twice the park horizon after its last park), as the
 * Redis store's keys expire. Limits (`sql/012-limits.sql`): a `limit_state` row per dependency (the pacer,
 * the hold, the override), locked by every write, beside its processes' declarations and its leases; an
 * exchange is one call of `limits_exchange`.
 *
 * Defaults: schema `stormguard`, prefix `stormguard`, migrations on first use, state kept 24 hours.
 *
 * @example
 * import pg from 'pg';
 * import { createWorker } from 'stormguard/bullmq';
 * import { PostgresFlowStore } from 'stormguard/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const worker = createWorker('index', processor, {
 *   connection,
 *   backend,
 *   policy,
 *   flowControl: { store: new PostgresFlowStore({ connection: pool }), queueDependency: 'search' },
 * });
 */
export class PostgresFlowStore implements FlowStore {
  readonly #db: PostgresDatabase;
  readonly #clock: Clock | undefined;
  readonly #ttlMs: number;

  constructor(options: PostgresFlowStoreOptions) {
    checkOptionNames('PostgresFlowStore', options, OPTION_NAMES);
    this.#db = new PostgresDatabase(options, 'PostgreSQL flow store');
    this.#clock = options.clock;
    const ttlMs = options.stateTtlMs ?? DEFAULT_STATE_TTL_MS;
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1)
      throw new InvalidInputError(
        `PostgreSQL flow store: stateTtlMs ${ttlMs} is invalid: use a whole number of ms >= 1 (default 86400000)`,
      );
    this.#ttlMs = ttlMs;
  }

  /** The schema holding the flow-control tables. */
  get schema(): string {
    return this.#db.schema;
  }

  /** The namespace of this store's rows in the schema. */
  get prefix(): string {
    return this.#db.prefix;
  }

  async read(dependency: string): Promise<FlowSnapshot> {
    return this.#mark(dependency, 'read');
  }

  async markDown(dependency: string): Promise<void> {
    await this.#mark(dependency, 'down');
  }

  async markUp(dependency: string): Promise<FlowSnapshot> {
    return this.#mark(dependency, 'up');
  }

  async admit(dependency: string, ramp: SlowStartRamp, maxWaitMs: number): Promise<PaceVerdict> {
    const [row] = await this.#db.query<{ r: PaceVerdict }>(
      `SELECT ${this.#db.q}.flow_admit($1, $2, $3, $4, $5, $6, $7, $8) AS r`,
      [this.#db.prefix, dependency, ...rampArgs(ramp), maxWaitMs, this.#ttlMs, this.#now()],
    );
    return row!.r;
  }

  async park(dependency: string, queue: string, jobId: string, ttlMs: number): Promise<number> {
    const [row] = await this.#db.query<{ n: string }>(
      `SELECT ${this.#db.q}.flow_park($1, $2, $3, $4, $5, $6) AS n`,
      [this.#db.prefix, dependency, queue, jobId, Math.max(1, Math.ceil(ttlMs)), this.#now()],
    );
    return Number(row!.n);
  }

  async release(
    dependency: string,
    queue: string,
    ramp: SlowStartRamp,
    max: number,
    horizonMs: number,
  ): Promise<string[]> {
    const [row] = await this.#db.query<{ ids: string[] }>(
      `SELECT ${this.#db.q}.flow_release($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS ids`,
      [
        this.#db.prefix,
        dependency,
        queue,
        ...rampArgs(ramp),
        Math.max(0, Math.floor(max)),
        horizonMs,
        this.#ttlMs,
        this.#now(),
      ],
    );
    return row!.ids;
  }

  async claimReleased(dependency: string, queue: string, jobId: string): Promise<boolean> {
    const q = this.#db.q;
    const rows = await this.#db.query(
      `DELETE FROM ${q}.flow_released
        WHERE prefix = $1 AND dependency = $2 AND queue = $3 AND job_id = $4
          AND expires_at_ms > ${q}.now_ms($5)
        RETURNING 1`,
      [this.#db.prefix, dependency, queue, jobId, this.#now()],
    );
    return rows.length === 1;
  }

  async parked(dependency: string, queue: string): Promise<number> {
    const q = this.#db.q;
    const [row] = await this.#db.query<{ length: string }>(
      `SELECT length FROM ${q}.flow_park_lists
        WHERE prefix = $1 AND dependency = $2 AND queue = $3 AND expires_at_ms > ${q}.now_ms($4)`,
      [this.#db.prefix, dependency, queue, this.#now()],
    );
    return row ? Number(row.length) : 0;
  }

  async notePaused(
    dependency: string,
    queue: string,
    worker: string,
    forMs: number,
    ttlMs: number,
  ): Promise<void> {
    await this.#db.query(`SELECT ${this.#db.q}.flow_note_paused($1, $2, $3, $4, $5, $6, $7)`, [
      this.#db.prefix,
      dependency,
      queue,
      worker,
      Math.max(0, Math.ceil(forMs)),
      Math.max(1, Math.ceil(ttlMs)),
      this.#now(),
    ]);
  }

  async clearPaused(dependency: string, queue: string, worker: string): Promise<void> {
    await this.#db.query(
      `DELETE FROM ${this.#db.q}.flow_paused WHERE prefix = $1 AND dependency = $2 AND queue = $3 AND worker = $4`,
      [this.#db.prefix, dependency, queue, worker],
    );
  }

  async pausedWorkers(dependency: string): Promise<PausedWorkerEntry[]> {
    const q = this.#db.q;
    const rows = await this.#db.query<{
      queue: string;
      worker: string;
      since_ms: string;
      until_ms: string;
      expires_at_ms: string;
    }>(
      `SELECT queue, worker, since_ms, until_ms, expires_at_ms FROM ${q}.flow_paused
        WHERE prefix = $1 AND dependency = $2 AND expires_at_ms > ${q}.now_ms($3)`,
      [this.#db.prefix, dependency, this.#now()],
    );
    return rows
      .map((row) => ({
        queue: row.queue,
        worker: row.worker,
        sinceMs: Number(row.since_ms),
        untilMs: Number(row.until_ms),
        expiresAtMs: Number(row.expires_at_ms),
      }))
      .sort(byQueueThenWorker);
  }

  async exchangeLimits(dependency: string, request: LimitExchange): Promise<LimitExchangeResult> {
    checkLimitExchange(request);
    const [row] = await this.#db.query<{ r: LimitExchangeResult & { state: LiveLimitState } }>(
      `SELECT ${this.#db.q}.limits_exchange($1, $2, $3, $4, $5) AS r`,
      [this.#db.prefix, dependency, JSON.stringify(request), this.#ttlMs, this.#now()],
    );
    const { state, ...result } = row!.r;
    return { ...result, state: limitStateOf(state) };
  }

  async holdLimits(dependency: string, forMs: number, reason: LimitHold['reason']): Promise<LimitState> {
    checkHoldMs(forMs);
    return this.#setLimits(dependency, 'hold', forMs, reason, null, null, false);
  }

  async overrideLimits(
    dependency: string,
    override: Parameters<LimitStore['overrideLimits']>[1],
    options: { clearHold?: boolean } = {},
  ): Promise<LimitState> {
    const fields = override && normalOverride(override);
    return this.#setLimits(
      dependency,
      'override',
      null,
      null,
      fields ? JSON.stringify(fields) : null,
      override?.expiresInMs ?? null,
      options.clearHold === true,
    );
  }

  async limitState(dependency: string): Promise<LimitState> {
    const q = this.#db.q;
    const [row] = await this.#db.query<{ s: LiveLimitState }>(
      `SELECT ${q}.limits_state($1, $2, ${q}.now_ms($3)) AS s`,
      [this.#db.prefix, dependency, this.#now()],
    );
    return limitStateOf(row!.s);
  }

  async limitedDependencies(): Promise<string[]> {
    const q = this.#db.q;
    const rows = await this.#db.query<{ dependency: string }>(
      `WITH t AS (SELECT ${q}.now_ms($2) AS now)
       SELECT d.dependency FROM ${q}.limit_declarations d, t WHERE d.prefix = $1 AND d.expires_at_ms > t.now
       UNION
       SELECT l.dependency FROM ${q}.limit_leases l, t WHERE l.prefix = $1 AND l.expires_at_ms > t.now
       UNION
       SELECT s.dependency FROM ${q}.limit_state s, t
        WHERE s.prefix = $1 AND (s.expires_at_ms IS NULL OR s.expires_at_ms > t.now)
          AND ((s.override IS NOT NULL AND (s.override_expires_at_ms IS NULL OR s.override_expires_at_ms > t.now))
               OR s.hold_until_ms > t.now)`,
      [this.#db.prefix, this.#now()],
    );
    return rows.map((row) => row.dependency).sort();
  }

  async #setLimits(
    dependency: string,
    op: 'hold' | 'override',
    forMs: number | null,
    reason: string | null,
    override: string | null,
    expiresInMs: number | null,
    clearHold: boolean,
  ): Promise<LimitState> {
    const [row] = await this.#db.query<{ s: LiveLimitState }>(
      `SELECT ${this.#db.q}.limits_set($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS s`,
      [
        this.#db.prefix,
        dependency,
        op,
        forMs,
        reason,
        override,
        expiresInMs,
        clearHold,
        this.#ttlMs,
        this.#now(),
      ],
    );
    return limitStateOf(row!.s);
  }

  async switchedOff(): Promise<boolean> {
    const rows = await this.#db.query(`SELECT 1 FROM ${this.#db.q}.flow_off WHERE prefix = $1`, [
      this.#db.prefix,
    ]);
    return rows.length === 1;
  }

  async setOff(off: boolean): Promise<void> {
    const q = this.#db.q;
    await this.#db.query(
      off
        ? `INSERT INTO ${q}.flow_off (prefix) VALUES ($1) ON CONFLICT (prefix) DO NOTHING`
        : `DELETE FROM ${q}.flow_off WHERE prefix = $1`,
      [this.#db.prefix],
    );
  }

  /** Ends the pool when the store opened it from a connection string; leaves your pool alone. */
  close(): Promise<void> {
    return this.#db.close();
  }

  async #mark(dependency: string, op: 'down' | 'up' | 'read'): Promise<FlowSnapshot> {
    const [row] = await this.#db.query<{ r: MarkReply }>(
      `SELECT ${this.#db.q}.flow_mark($1, $2, $3, $4, $5) AS r`,
      [this.#db.prefix, dependency, op, this.#ttlMs, this.#now()],
    );
    const { down, recoveredAtMs, nowMs, off } = row!.r;
    const snapshot: FlowSnapshot = { down, nowMs, off };
    if (recoveredAtMs !== null) snapshot.recoveredAtMs = recoveredAtMs;
    return snapshot;
  }

  #now(): number | null {
    return this.#clock ? this.#clock.now() : null;
  }
}

function rampArgs(ramp: SlowStartRamp): [number, number, number | null] {
  return [ramp.slowStartMs, ramp.floorPerSecond, ramp.maxRatePerSecond ?? null];
}

/** What limits_state returns (sql/functions/limits_state.sql): the state and whether anything lives. */
type LiveLimitState = LimitState & { live: boolean };

function limitStateOf({ live: _, ...state }: LiveLimitState): LimitState {
  return state;
}
