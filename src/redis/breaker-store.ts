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
import { dependencyOfKey, dependencyTag } from '../common/keys.js';
import { parseWith } from '../common/validation.js';
import { assertPrefix, DEFAULT_PREFIX, dependencyKeyPattern } from './budget-keys.js';
import { scanKeys } from './scan.js';
import { defineScript, type RedisClient } from './scripts.js';

const SCRIPT = {
  command: 'stormguardBreakerUpdateV2',
  file: 'breaker-update-1.lua',
  numberOfKeys: 1,
} as const;
const KEY_TAIL = ':breaker';

const StoreSettingsSchema = z.object({
  whenUnavailable: z.enum(['local', 'allow', 'reject'], { error: "must be 'local', 'allow' or 'reject'" }),
  timeoutMs: z.number().int('must be a whole number >= 1').min(1, 'must be a whole number >= 1'),
  retryIntervalMs: z.number().int('must be a whole number >= 0').min(0, 'must be a whole number >= 0'),
});

/**
 * What the breaker does while Redis cannot be reached:
 * - `local` (default): each worker runs its own in-process breaker (same options), flagged `degraded`.
 *   Protection continues, but each worker trips on its own share of the traffic.
 * - `allow` (fail open): every call goes through, as if the breaker were closed.
 * - `reject` (fail closed): every call is refused, as if the breaker were open, until Redis answers again.
 *
 * @example
 * new RedisBreakerStore({ redis, whenUnavailable: 'reject' }); // fail closed
 */
export type BreakerStoreFallback = 'local' | 'allow' | 'reject';

/**
 * Options of {@link RedisBreakerStore}.
 *
 * @example
 * new RedisBreakerStore({ redis, prefix: 'shop', timeoutMs: 200, whenUnavailable: 'local' });
 */
export interface RedisBreakerStoreOptions {
  /** An ioredis client or cluster. The store defines one script command on it and never closes it. */
  redis: RedisClient;
  /**
   * Key prefix: a dependency's state lives at `{<prefix>:d:<dependency>}:breaker`, both encoded (so any
   * 1-64 characters; `shop:eu` never shares a key with `shop`). Default `stormguard`.
   */
  prefix?: string;
  /** What to do while Redis is unreachable. Default `local`. */
  whenUnavailable?: BreakerStoreFallback;
  /** Longest wait for one Redis round trip before the fallback answers, in ms. Default 500. */
  timeoutMs?: number;
  /** After a failure, how long the fallback answers before Redis is tried again, in ms. Default 1 000. */
  retryIntervalMs?: number;
  /** The clock of the fallback and of the retry interval. Default: the system clock. */
  clock?: Clock;
  /**
   * TEST ONLY: send this clock's time to the script instead of letting it read Redis `TIME`. In
   * production leave it unset: the Redis server is the fleet's one clock. Default unset.
   */
  timeOverride?: Clock;
}

/**
 * Events of a {@link RedisBreakerStore}: for logs.
 *
 * @example
 * store.events.on('unavailable', (e) => log.error('breaker store down, using the local fallback', e.error));
 */
export interface BreakerStoreEvents {
  /** Redis could not be reached; the fallback answers. */
  unavailable: { error: unknown; fallback: BreakerStoreFallback };
  /** Redis answers again after `downForMs`. */
  available: { downForMs: number };
}

/**
 * A breaker snapshot as the CLI lists it: with the options the breaker last wrote.
 *
 * @example
 * const open = (await store.list()).filter((b) => b.state === 'open');
 */
export interface ListedBreaker extends BreakerSnapshot {
  options?: ResolvedBreakerOptions;
}

interface ScriptResult {
  allowed: boolean;
  probe: boolean;
  ticket?: string;
  transitions: BreakerTransition[] | Record<string, never>;
  view: Omit<BreakerSnapshot, 'dependency' | 'degraded'>;
  options?: ResolvedBreakerOptions;
}

/**
 * Circuit-breaker state shared by the whole fleet through Redis. Each operation is one round trip (one
 * Lua script, `lua/breaker-update-1.lua`; a CircuitBreaker saves most of them by caching a closed state
 * and batching successes, see its `stateCacheMs`), so admitting a half-open probe is atomic fleet-wide; time is
 * the Redis server's; a dependency's state is one hash in one hash slot (Redis Cluster works) that
 * expires on its own when idle.
 *
 * Never crashes or hangs its caller: a round trip that fails or takes longer than `timeoutMs` is answered
 * by the `whenUnavailable` fallback (snapshots say `degraded: true`), and Redis is tried again after
 * `retryIntervalMs`. A command abandoned by the timeout may still reach Redis later; at worst one outcome
 * counts twice (locally and in Redis), which errs towards opening.
 *
 * @example
 * import { Redis } from 'ioredis';
 * const store = new RedisBreakerStore({ redis: new Redis(process.env.REDIS_URL), prefix: 'shop' });
 * const breaker = new CircuitBreaker({ store, consecutiveFailures: 5 });
 */
export class RedisBreakerStore implements BreakerStore {
  readonly events = new EventBus<BreakerStoreEvents>();
  /** State lives in Redis: a CircuitBreaker caches it for `stateCacheMs` and batches successes. */
  readonly shared = true;
  readonly #redis: RedisClient;
  readonly #script: (keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;
  readonly #prefix: string;
  readonly #fallback: BreakerStoreFallback;
  readonly #timeoutMs: number;
  readonly #retryIntervalMs: number;
  readonly #clock: Clock;
  readonly #timeOverride: Clock | undefined;
  readonly #local: MemoryBreakerStore;
  #downSinceMs: number | undefined;
  #retryAtMs = 0;

  constructor(options: RedisBreakerStoreOptions) {
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    const settings = parseWith(
      StoreSettingsSchema,
      {
        whenUnavailable: options.whenUnavailable ?? 'local',
        timeoutMs: options.timeoutMs ?? 500,
        retryIntervalMs: options.retryIntervalMs ?? 1_000,
      },
      'Redis breaker store options',
    );
    this.#redis = options.redis;
    this.#script = defineScript(options.redis, SCRIPT);
    this.#prefix = prefix;
    this.#fallback = settings.whenUnavailable;
    this.#timeoutMs = settings.timeoutMs;
    this.#retryIntervalMs = settings.retryIntervalMs;
    this.#clock = options.clock ?? systemClock;
    this.#timeOverride = options.timeOverride;
    this.#local = new MemoryBreakerStore({ clock: this.#clock, degraded: true });
  }

  /** The Redis key holding `dependency`'s state. */
  keyOf(dependency: string): string {
    return `${dependencyTag(this.#prefix, dependency)}${KEY_TAIL}`;
  }

  async acquire(dependency: string, options: ResolvedBreakerOptions): Promise<BreakerAdmission> {
    const result = await this.#run(dependency, 'acquire', options);
    if (result) {
      return {
        allowed: result.allowed,
        probe: result.probe,
        ...(result.ticket === undefined ? {} : { ticket: result.ticket }),
        transitions: transitionsOf(result),
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
      return {
        transitions: transitionsOf(result),
        snapshot: { dependency, ...result.view, degraded: false },
      };
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
      return {
        transitions: transitionsOf(result),
        snapshot: { dependency, ...result.view, degraded: false },
      };
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
   * Every dependency with breaker state under this prefix, sorted, each read with the options its
   * breaker last wrote. For the CLI and dashboards; it scans keys, so keep it off hot paths. Unlike the
   * other methods it rejects when Redis is unreachable (a status report must not invent a fallback).
   *
   * @example
   * for (const b of await store.list()) console.log(b.dependency, b.state);
   */
  async list(): Promise<ListedBreaker[]> {
    const keys = await scanKeys(this.#redis, dependencyKeyPattern(this.#prefix, KEY_TAIL));
    const dependencies: string[] = [];
    for (const key of keys) {
      const dependency = dependencyOfKey(this.#prefix, KEY_TAIL, key);
      if (dependency !== undefined) dependencies.push(dependency);
    }
    const listed: ListedBreaker[] = [];
    for (const dependency of dependencies.sort()) {
      const raw = await this.#script([this.keyOf(dependency)], ['peek', this.#now(), '']);
      const result = JSON.parse(String(raw)) as ScriptResult;
      const entry: ListedBreaker = { dependency, ...result.view, degraded: false };
      if (result.options) entry.options = result.options;
      listed.push(entry);
    }
    return listed;
  }

  /** One script round trip, or undefined when Redis cannot answer (then the fallback does). */
  async #run(
    dependency: string,
    op: BreakerOp,
    options: ResolvedBreakerOptions,
    batchedSuccesses = 0,
    ticket = '',
  ): Promise<ScriptResult | undefined> {
    const nowMs = this.#clock.now();
    if (nowMs < this.#retryAtMs || isDisconnected(this.#redis)) {
      this.#markDown(nowMs, new Error(`Redis connection is ${this.#redis.status}`));
      return undefined;
    }
    try {
      const args = [op, this.#now(), JSON.stringify(options), batchedSuccesses, ticket];
      const pending = this.#script([this.keyOf(dependency)], args);
      const raw = await withTimeout(pending, this.#timeoutMs);
      const result = JSON.parse(String(raw)) as ScriptResult;
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

  #now(): string {
    return this.#timeOverride ? String(this.#timeOverride.now()) : '';
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
    // Fail closed: the earliest a refused job is worth trying again is when Redis may be back.
    if (this.#fallback === 'reject')
      snapshot.halfOpenAtMs = Math.max(this.#retryAtMs, nowMs + this.#retryIntervalMs);
    return snapshot;
  }
}

function transitionsOf(result: ScriptResult): BreakerTransition[] {
  // cjson encodes an empty Lua table as an object.
  return Array.isArray(result.transitions) ? result.transitions : [];
}

function isDisconnected(redis: RedisClient): boolean {
  return redis.status === 'reconnecting' || redis.status === 'close' || redis.status === 'end';
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  // The abandoned promise may still reject later; it must not become an unhandled rejection.
  promise.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms}ms`)), ms);
    // The caller waits on the race, not on the timer: the timer alone must not keep a process alive.
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
