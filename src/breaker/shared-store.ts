import { z } from 'zod';
import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { withTimeout } from '../common/timeout.js';
import { parseWith } from '../common/validation.js';
import type { BreakerOp } from './machine.js';
import { MemoryBreakerStore } from './memory-store.js';
import type { ResolvedBreakerOptions } from './options.js';
import { checkOverride } from './override.js';
import type {
  BreakerAdmission,
  BreakerBatch,
  BreakerOverrideOp,
  BreakerOverrideRequest,
  BreakerRecordResult,
  BreakerSnapshot,
  BreakerStore,
  BreakerTransition,
} from './types.js';

const StoreSettingsSchema = z.object({
  whenUnavailable: z.enum(['local', 'allow', 'reject'], { error: "must be 'local', 'allow' or 'reject'" }),
  timeoutMs: z.number().int('must be a whole number >= 1').min(1, 'must be a whole number >= 1'),
  retryIntervalMs: z.number().int('must be a whole number >= 0').min(0, 'must be a whole number >= 0'),
});

/**
 * What a shared breaker store does while its server cannot be reached:
 * - `local` (default): each worker runs its own in-process breaker (same options), flagged `degraded`.
 *   Protection continues, but each worker trips on its own share of the traffic.
 * - `allow` (fail open): every call goes through, as if the breaker were closed.
 * - `reject` (fail closed): every call is refused, as if the breaker were open, until the server answers.
 *
 * @example
 * new RedisBreakerStore({ redis, whenUnavailable: 'reject' }); // fail closed
 */
export type BreakerStoreFallback = 'local' | 'allow' | 'reject';

/**
 * How a shared breaker store behaves while its server cannot be reached (every shared store takes these).
 *
 * @example
 * const settings: SharedBreakerStoreSettings = { whenUnavailable: 'local', timeoutMs: 200 };
 */
export interface SharedBreakerStoreSettings {
  /** What to do while the server is unreachable. Default `local`. */
  whenUnavailable?: BreakerStoreFallback;
  /** Longest wait for one round trip before the fallback answers, in ms. Default 500. */
  timeoutMs?: number;
  /** After a failure, how long the fallback answers before the server is tried again, in ms. Default 1 000. */
  retryIntervalMs?: number;
  /** The clock of the fallback and of the retry interval. Default: the system clock. */
  clock?: Clock;
}

/**
 * Events of a shared breaker store: for logs.
 *
 * @example
 * store.events.on('unavailable', (e) => log.error('breaker store down, using the fallback', e.error));
 */
export interface BreakerStoreEvents {
  /** The server could not be reached; the fallback answers. */
  unavailable: { error: unknown; fallback: BreakerStoreFallback };
  /** The server answers again after `downForMs`. */
  available: { downForMs: number };
}

/**
 * What one server-side step of the breaker machine returns (a Lua script, a plpgsql function).
 *
 * @example
 * // { allowed: true, probe: false, transitions: [], view: { state: 'closed', ... } }
 */
export interface BreakerServerStep {
  allowed: boolean;
  probe: boolean;
  ticket?: string;
  transitions: BreakerTransition[];
  view: Omit<BreakerSnapshot, 'dependency' | 'degraded'>;
}

/**
 * The part every breaker store whose state lives on a server shares (Redis, PostgreSQL): each operation is
 * one server step, bounded by `timeoutMs`; when the server cannot answer, the `whenUnavailable` fallback
 * does (snapshots say `degraded: true`) and the server is tried again after `retryIntervalMs`, with an
 * `unavailable` and an `available` event around the outage. It never throws and never hangs its caller.
 * A step abandoned by the timeout may still reach the server later; at worst one outcome counts twice
 * (locally and on the server), which errs towards opening.
 *
 * A subclass implements {@link SharedBreakerStore.step} (one round trip) and may say through
 * {@link SharedBreakerStore.unreachable} that its client is known to be down, so no attempt is made.
 *
 * @example
 * class MyBreakerStore extends SharedBreakerStore {
 *   protected async step(dependency, op, options, batched, ticket) { return callServer(...); }
 * }
 */
export abstract class SharedBreakerStore implements BreakerStore {
  readonly events = new EventBus<BreakerStoreEvents>();
  /** State lives on a server: a CircuitBreaker caches it for `stateCacheMs` and batches successes. */
  readonly shared = true;
  readonly #server: string;
  readonly #fallback: BreakerStoreFallback;
  readonly #timeoutMs: number;
  readonly #retryIntervalMs: number;
  readonly #clock: Clock;
  readonly #local: MemoryBreakerStore;
  #downSinceMs: number | undefined;
  #retryAtMs = 0;

  /** `server` names it in messages (`Redis`, `PostgreSQL`). */
  constructor(settings: SharedBreakerStoreSettings, server: string) {
    const valid = parseWith(
      StoreSettingsSchema,
      {
        whenUnavailable: settings.whenUnavailable ?? 'local',
        timeoutMs: settings.timeoutMs ?? 500,
        retryIntervalMs: settings.retryIntervalMs ?? 1_000,
      },
      `${server} breaker store options`,
    );
    this.#server = server;
    this.#fallback = valid.whenUnavailable;
    this.#timeoutMs = valid.timeoutMs;
    this.#retryIntervalMs = valid.retryIntervalMs;
    this.#clock = settings.clock ?? systemClock;
    this.#local = new MemoryBreakerStore({ clock: this.#clock, degraded: true });
  }

  /** One operation on the server, one round trip; rejects when the server cannot answer. */
  protected abstract step(
    dependency: string,
    op: BreakerOp,
    options: ResolvedBreakerOptions,
    batchedSuccesses: number,
    ticket: string | undefined,
    override?: BreakerOverrideRequest,
  ): Promise<BreakerServerStep>;

  /** Why the server cannot be reached right now without trying (a client known to be down), or undefined. */
  protected unreachable(): Error | undefined {
    return undefined;
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

  async override(
    dependency: string,
    op: BreakerOverrideOp,
    request: BreakerOverrideRequest,
    options: ResolvedBreakerOptions,
  ): Promise<BreakerRecordResult> {
    const checked = checkOverride(op, request);
    // No fallback: an operator's action must reach the fleet or say it did not.
    const down = this.unreachable();
    if (down) throw down;
    const pending = this.step(dependency, op, options, 0, undefined, checked);
    const result = await withTimeout(pending, this.#timeoutMs, this.#server);
    return { transitions: result.transitions, snapshot: { dependency, ...result.view, degraded: false } };
  }

  async read(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerSnapshot> {
    const result = await this.#run(dependency, 'peek', options);
    if (result) return { dependency, ...result.view, degraded: false };
    if (this.#fallback === 'local') return this.#local.read(dependency, options);
    return this.#fallbackSnapshot(dependency);
  }

  /** One server step, or undefined when the server cannot answer (then the fallback does). */
  async #run(
    dependency: string,
    op: BreakerOp,
    options: ResolvedBreakerOptions,
    batchedSuccesses = 0,
    ticket?: string,
  ): Promise<BreakerServerStep | undefined> {
    const nowMs = this.#clock.now();
    if (nowMs < this.#retryAtMs) return undefined;
    const down = this.unreachable();
    if (down) {
      this.#markDown(nowMs, down);
      return undefined;
    }
    try {
      const pending = this.step(dependency, op, options, batchedSuccesses, ticket);
      const result = await withTimeout(pending, this.#timeoutMs, this.#server);
      if (this.#downSinceMs !== undefined) {
        this.events.emit('available', { downForMs: nowMs - this.#downSinceMs });
        this.#downSinceMs = undefined;
      }
      return result;
    } catch (error) {
      this.#markDown(nowMs, error);
      this.#retryAtMs = nowMs + this.#retryIntervalMs;
      return undefined;
    }
  }

  #markDown(nowMs: number, error: unknown): void {
    if (this.#downSinceMs !== undefined) return;
    this.#downSinceMs = nowMs;
    this.events.emit('unavailable', { error, fallback: this.#fallback });
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
    // Fail closed: the earliest a refused job is worth trying again is when the server may be back.
    if (this.#fallback === 'reject')
      snapshot.halfOpenAtMs = Math.max(this.#retryAtMs, nowMs + this.#retryIntervalMs);
    return snapshot;
  }
}
