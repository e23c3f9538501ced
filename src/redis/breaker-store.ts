import type { BreakerOp } from '../breaker/machine.js';
import type { ResolvedBreakerOptions } from '../breaker/options.js';
import {
  type BreakerServerStep,
  SharedBreakerStore,
  type SharedBreakerStoreSettings,
} from '../breaker/shared-store.js';
import type {
  BreakerListing,
  BreakerOverrideRequest,
  BreakerSnapshot,
  BreakerTransition,
  ListedBreaker,
} from '../breaker/types.js';
import type { Clock } from '../common/clock.js';
import { dependencyOfKey, dependencyTag } from '../common/keys.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { assertPrefix, DEFAULT_PREFIX, dependencyKeyPattern } from './budget-keys.js';
import { type RedisConnection, redisClientOf } from './connection.js';
import { DependencyRegistry } from './dependency-registry.js';
import { defineScript, type RedisClient } from './scripts.js';

const SCRIPT = {
  command: 'stormguardBreakerUpdateV3',
  file: 'breaker-update-1.lua',
  numberOfKeys: 1,
} as const;
const KEY_TAIL = ':breaker';

// The fallback's types are every shared store's; re-exported here, where they were first defined.
export type { BreakerStoreEvents, BreakerStoreFallback } from '../breaker/shared-store.js';

/**
 * Options of {@link RedisBreakerStore}.
 *
 * @example
 * new RedisBreakerStore({ redis, prefix: 'shop', timeoutMs: 200, whenUnavailable: 'local' });
 */
export interface RedisBreakerStoreOptions extends SharedBreakerStoreSettings {
  /**
   * Your ioredis client (a `Redis` or a `Cluster`), on which the store defines one script command and which
   * it never closes; or ioredis options (`{ host, port }`) or a `redis://` URL, from which it opens a
   * client of its own, closed by `close()`.
   */
  redis: RedisConnection;
  /**
   * Key prefix: a dependency's state lives at `{<prefix>:d:<dependency>}:breaker`, both encoded (so any
   * 1-64 characters; `shop:eu` never shares a key with `shop`). Default `stormguard`.
   */
  prefix?: string;
  /**
   * TEST ONLY: send this clock's time to the script instead of letting it read Redis `TIME`. In
   * production leave it unset: the Redis server is the fleet's one clock. Default unset.
   */
  timeOverride?: Clock;
  /**
   * A store for reading only (status tools): its listing writes nothing, not even the dependency
   * registry's upkeep (see src/redis/dependency-registry.ts). Default false; workers leave it unset.
   */
  readOnly?: boolean;
}

const OPTION_NAMES = {
  redis: true,
  prefix: true,
  timeOverride: true,
  readOnly: true,
  whenUnavailable: true,
  timeoutMs: true,
  retryIntervalMs: true,
  clock: true,
} as const satisfies OptionNames<RedisBreakerStoreOptions>;

// Listed breakers are every store's type; re-exported here, where it was first defined.
export type { ListedBreaker } from '../breaker/types.js';

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
 * Never crashes or hangs its caller (see `SharedBreakerStore`, src/breaker/shared-store.ts): a round trip
 * that fails or takes longer than `timeoutMs` is answered by the `whenUnavailable` fallback (snapshots say
 * `degraded: true`), and Redis is tried again after `retryIntervalMs`; a client that is reconnecting is
 * not tried at all.
 *
 * @example
 * import { Redis } from 'ioredis';
 * const store = new RedisBreakerStore({ redis: new Redis(process.env.REDIS_URL), prefix: 'shop' });
 * const breaker = new CircuitBreaker({ store, consecutiveFailures: 5 });
 */
export class RedisBreakerStore extends SharedBreakerStore implements BreakerListing {
  readonly #redis: RedisClient;
  readonly #closeClient: () => Promise<void>;
  readonly #script: (keys: readonly string[], args: readonly (string | number)[]) => Promise<unknown>;
  readonly #prefix: string;
  readonly #timeOverride: Clock | undefined;
  readonly #registry: DependencyRegistry;

  constructor(options: RedisBreakerStoreOptions) {
    checkOptionNames('RedisBreakerStore', options, OPTION_NAMES);
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    super(options, 'Redis');
    const { redis, close } = redisClientOf('RedisBreakerStore', options.redis);
    this.#closeClient = close;
    this.#redis = redis;
    this.#script = defineScript(redis, SCRIPT);
    this.#prefix = prefix;
    this.#timeOverride = options.timeOverride;
    this.#registry = new DependencyRegistry({
      redis,
      prefix,
      kind: 'breaker',
      legacy: {
        pattern: dependencyKeyPattern(prefix, KEY_TAIL),
        dependencyOf: (key) => dependencyOfKey(prefix, KEY_TAIL, key),
      },
      ...(options.timeOverride ? { clock: options.timeOverride } : {}),
      readOnly: options.readOnly === true,
    });
  }

  /** Closes the client the store opened from options or a URL; a client you passed stays open. */
  async close(): Promise<void> {
    await this.#closeClient();
  }

  /** The Redis key holding `dependency`'s state. */
  keyOf(dependency: string): string {
    return `${dependencyTag(this.#prefix, dependency)}${KEY_TAIL}`;
  }

  /**
   * Every dependency with breaker state under this prefix, sorted, each read with the options its
   * breaker last wrote. For the CLI and dashboards: the names come from the store's dependency registry
   * (src/redis/dependency-registry.ts), then one read per dependency, so its cost follows the number of
   * dependencies, not the keyspace (the first listing under a prefix also scans once for state written
   * before the registry existed). Unlike the other methods it rejects when Redis is unreachable (a
   * status report must not invent a fallback).
   *
   * @example
   * for (const b of await store.list()) console.log(b.dependency, b.state);
   */
  async list(): Promise<ListedBreaker[]> {
    const names = await this.#registry.names();
    const peeks = await Promise.all(
      names.map(async (dependency) => {
        const raw = await this.#script([this.keyOf(dependency)], ['peek', this.#now(), '']);
        return JSON.parse(String(raw)) as ScriptResult;
      }),
    );
    const listed: ListedBreaker[] = [];
    const gone: string[] = [];
    names.forEach((dependency, i) => {
      const result = peeks[i]!;
      // A peek reports no options only for a breaker with no state: expired, or reset.
      if (!result.options) gone.push(dependency);
      else listed.push({ dependency, ...result.view, degraded: false, options: result.options });
    });
    await this.#registry.forget(gone);
    return listed;
  }

  /** One script round trip (`lua/breaker-update-1.lua`). */
  protected async step(
    dependency: string,
    op: BreakerOp,
    options: ResolvedBreakerOptions,
    batchedSuccesses: number,
    ticket: string | undefined,
    override?: BreakerOverrideRequest,
  ): Promise<BreakerServerStep> {
    const args = [
      op,
      this.#now(),
      JSON.stringify(options),
      batchedSuccesses,
      ticket ?? '',
      override ? JSON.stringify(override) : '',
    ];
    // A peek writes nothing, so it registers nothing; every other step may write the state.
    const [, raw] = await Promise.all([
      op === 'peek' ? undefined : this.#registry.note(dependency),
      this.#script([this.keyOf(dependency)], args),
    ]);
    const result = JSON.parse(String(raw)) as ScriptResult;
    return { ...result, transitions: transitionsOf(result) };
  }

  /** A client that is reconnecting or closed is not tried: the fallback answers at once. */
  protected override unreachable(): Error | undefined {
    return isDisconnected(this.#redis) ? new Error(`Redis connection is ${this.#redis.status}`) : undefined;
  }

  #now(): string {
    return this.#timeOverride ? String(this.#timeOverride.now()) : '';
  }
}

function transitionsOf(result: ScriptResult): BreakerTransition[] {
  // cjson encodes an empty Lua table as an object.
  return Array.isArray(result.transitions) ? result.transitions : [];
}

function isDisconnected(redis: RedisClient): boolean {
  return redis.status === 'reconnecting' || redis.status === 'close' || redis.status === 'end';
}
