import { z } from 'zod';
import type { BreakerOp } from '../breaker/machine.js';
import { MemoryBreakerStore } from '../breaker/memory-store.js';
import type { ResolvedBreakerOptions } from '../breaker/options.js';
import type {
  BreakerAdmission,
  BreakerBatch,
  BreakerRecordResult,
  BreakerSnapshot,
  BreakerStore,
  BreakerTransition,
} from '../breaker/types.js';
import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { withTimeout } from '../common/timeout.js';
import { parseWith } from '../common/validation.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';

const StoreSettingsSchema = z.object({
  whenUnavailable: z.enum(['local', 'allow', 'reject'], { error: "must be 'local', 'allow' or 'reject'" }),
  timeoutMs: z.number().int('must be a whole number >= 1').min(1, 'must be a whole number >= 1'),
  retryIntervalMs: z.number().int('must be a whole number >= 0').min(0, 'must be a whole number >= 0'),
});

/**
 * What the breaker does while PostgreSQL cannot be reached:
 * - `local` (default): each worker runs its own in-process breaker (same options), flagged `degraded`.
 * - `allow` (fail open): every call goes through, as if the breaker were closed.
 * - `reject` (fail closed): every call is refused, as if the breaker were open, until PostgreSQL answers.
 *
 * @example
 * new PostgresBreakerStore({ connection: pool, whenUnavailable: 'reject' }); // fail closed
 */
export type PostgresBreakerFallback = 'local' | 'allow' | 'reject';

/**
 * Options of {@link PostgresBreakerStore}.
 *
 * @example
 * new PostgresBreakerStore({ connection: pool, schema: 'shop', timeoutMs: 200 });
 */
export interface PostgresBreakerStoreOptions extends PostgresStoreOptions {
  /** What to do while PostgreSQL is unreachable. Default `local`. */
  whenUnavailable?: PostgresBreakerFallback;
  /** Longest wait for one round trip before the fallback answers, in ms. Default 500. */
  timeoutMs?: number;
  /** After a failure, how long the fallback answers before PostgreSQL is tried again, in ms. Default 1 000. */
  retryIntervalMs?: number;
  /** The clock of the fallback and of the retry interval. Default: the system clock. */
  clock?: Clock;
  /**
   * TEST ONLY: use this clock's time instead of the server's `clock_timestamp()`. In production leave it
   * unset: the database server is the fleet's one clock. Default unset.
   */
  timeOverride?: Clock;
}

/**
 * Events of a {@link PostgresBreakerStore}: for logs.
 *
 * @example
 * store.events.on('unavailable', (e) => log.error('breaker store down, using the fallback', e.error));
 */
export interface PostgresBreakerStoreEvents {
  /** PostgreSQL could not be reached; the fallback answers. */
  unavailable: { error: unknown; fallback: PostgresBreakerFallback };
  /** PostgreSQL answers again after `downForMs`. */
  available: { downForMs: number };
}

/**
 * A breaker snapshot as the CLI lists it: with the options the breaker last wrote.
 *
 * @example
 * const open = (await store.list()).filter((b) => b.state === 'open');
 */
export interface ListedPostgresBreaker extends BreakerSnapshot {
  options?: ResolvedBreakerOptions;
}

interface StepResult {
  allowed: boolean;
  probe: boolean;
  ticket?: string;
  transitions: BreakerTransition[];
  view: Omit<BreakerSnapshot, 'dependency' | 'degraded'>;
  options: ResolvedBreakerOptions | null;
}

/**
 * Circuit-breaker state shared by the whole fleet through PostgreSQL, for fleets that run without Redis
 * (BullMQ 6 on its PostgreSQL backend). Each operation is one round trip: one call of the plpgsql function
 * `breaker_step` (`sql/001-breaker.sql`; the same machine as the memory and Redis stores), which locks
 * the dependency's row for any write, so admitting a half-open probe is atomic fleet-wide; time is the
 * server's `clock_timestamp()`. Acquire on a closed breaker, the hot path, takes no lock and writes
 * nothing. A dependency's row is read as absent once idle for 2 × (windowMs + coolDownMs).
 *
 * Never crashes or hangs its caller: a round trip that fails or takes longer than `timeoutMs` is answered
 * by the `whenUnavailable` fallback (snapshots say `degraded: true`), and PostgreSQL is tried again after
 * `retryIntervalMs`.
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
export class PostgresBreakerStore implements BreakerStore {
  readonly events = new EventBus<PostgresBreakerStoreEvents>();
  /** State lives in PostgreSQL: a CircuitBreaker caches it for `stateCacheMs` and batches successes. */
  readonly shared = true;
  readonly #db: PostgresDatabase;
  readonly #fallback: PostgresBreakerFallback;
  readonly #timeoutMs: number;
  readonly #retryIntervalMs: number;
  readonly #clock: Clock;
  readonly #timeOverride: Clock | undefined;
  readonly #local: MemoryBreakerStore;
  #downSinceMs: number | undefined;
  #retryAtMs = 0;

  constructor(options: PostgresBreakerStoreOptions) {
    const settings = parseWith(
      StoreSettingsSchema,
      {
        whenUnavailable: options.whenUnavailable ?? 'local',
        timeoutMs: options.timeoutMs ?? 500,
        retryIntervalMs: options.retryIntervalMs ?? 1_000,
      },
      'PostgreSQL breaker store options',
    );
    this.#db = new PostgresDatabase(options, 'PostgreSQL breaker store');
    this.#fallback = settings.whenUnavailable;
    this.#timeoutMs = settings.timeoutMs;
    this.#retryIntervalMs = settings.retryIntervalMs;
    this.#clock = options.clock ?? systemClock;
    this.#timeOverride = options.timeOverride;
    this.#local = new MemoryBreakerStore({ clock: this.#clock, degraded: true });
  }

  /** The schema holding the breaker table. */
  get schema(): string {
    return this.#db.schema;
  }

  /** The namespace of this store's rows in the schema. */
  get prefix(): string {
    return this.#db.prefix;
  }

  async acquire(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerAdmission> {
    const result = await this.#run(dependency, 'acquire', options);
    if (result) {
      return {
        allowed: result.allowed,
        probe: result.probe,
        ...(result.ticket === undefined ? {} : { ticket: result.ticket }),
        transitions: result.transitions,
        snapshot: { dependency, ...result.view, degraded: false },
      };
    }
    if (this.#fallback === 'local') return this.#local.acquire(dependency, options);
    const snapshot = this.#fallbackSnapshot(dependency);
    return { allowed: snapshot.state === 'closed', probe: false, transitions: [], snapshot };
  }

  async record(
    dependency: string,
    outcome: 'success' | 'failure',
    options: ResolvedBreakerOptions,
    ticket?: string,
  ): Promise<BreakerRecordResult> {
    const result = await this.#run(dependency, outcome, options, 0, ticket);
    if (result)
      return { transitions: result.transitions, snapshot: { dependency, ...result.view, degraded: false } };
    // A ticket names the half-open period of the store that issued it: the other one never counts it.
    if (this.#fallback === 'local') return this.#local.record(dependency, outcome, options, ticket);
    return { transitions: [], snapshot: this.#fallbackSnapshot(dependency) };
  }

  async recordBatch(
    dependency: string,
    batch: BreakerBatch,
    options: ResolvedBreakerOptions,
  ): Promise<BreakerRecordResult> {
    const op = batch.outcome ?? 'successes';
    const result = await this.#run(dependency, op, options, batch.successes, batch.ticket);
    if (result)
      return { transitions: result.transitions, snapshot: { dependency, ...result.view, degraded: false } };
    if (this.#fallback === 'local') return this.#local.recordBatch(dependency, batch, options);
    return { transitions: [], snapshot: this.#fallbackSnapshot(dependency) };
  }

  async read(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerSnapshot> {
    const result = await this.#run(dependency, 'peek', options);
    if (result) return { dependency, ...result.view, degraded: false };
    if (this.#fallback === 'local') return this.#local.read(dependency, options);
    return this.#fallbackSnapshot(dependency);
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
      `SELECT b.dependency, ${q}.breaker_step(b.prefix, b.dependency, 'peek', NULL, 0, $2, NULL) AS step
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

  /** One round trip, or undefined when PostgreSQL cannot answer (then the fallback does). */
  async #run(
    dependency: string,
    op: BreakerOp,
    options: ResolvedBreakerOptions,
    batchedSuccesses = 0,
    ticket?: string,
  ): Promise<StepResult | undefined> {
    const nowMs = this.#clock.now();
    if (nowMs < this.#retryAtMs) return undefined;
    try {
      const pending = this.#db.query<{ step: StepResult }>(
        `SELECT ${this.#db.q}.breaker_step($1, $2, $3, $4, $5, $6, $7) AS step`,
        [
          this.#db.prefix,
          dependency,
          op,
          JSON.stringify(options),
          batchedSuccesses,
          this.#timeOverride?.now() ?? null,
          ticket ?? null,
        ],
      );
      const [row] = await withTimeout(pending, this.#timeoutMs, 'PostgreSQL');
      if (this.#downSinceMs !== undefined) {
        this.events.emit('available', { downForMs: nowMs - this.#downSinceMs });
        this.#downSinceMs = undefined;
      }
      return row!.step;
    } catch (error) {
      if (this.#downSinceMs === undefined) {
        this.#downSinceMs = nowMs;
        this.events.emit('unavailable', { error, fallback: this.#fallback });
      }
      this.#retryAtMs = nowMs + this.#retryIntervalMs;
      return undefined;
    }
  }

  #fallbackSnapshot(dependency: string): BreakerSnapshot {
    const nowMs = this.#clock.now();
    const snapshot: BreakerSnapshot = {
      dependency,
      state: this.#fallback === 'allow' ? 'closed' : 'open',
      failures: 0,
      successes: 0,
      volume: 0,
      consecutiveFailures: 0,
      probesAdmitted: 0,
      probeSuccesses: 0,
      probesInFlight: 0,
      nowMs,
      degraded: true,
    };
    // Fail closed: the earliest a refused job is worth trying again is when PostgreSQL may be back.
    if (this.#fallback === 'reject')
      snapshot.halfOpenAtMs = Math.max(this.#retryAtMs, nowMs + this.#retryIntervalMs);
    return snapshot;
  }
}
