import { DEFAULT_PREFIX, idempotencyKeyOf } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import type { IdempotencyClaim, IdempotencyStore } from '../idempotency/store.js';
import {
  type DurableWrites,
  type DurableWritesOption,
  resolveDurableWrites,
  runDurably,
} from './durable-writes.js';
import { defineScript, type RedisClient, type ScriptSpec } from './scripts.js';

/**
 * Options of {@link RedisIdempotencyStore}.
 *
 * @example
 * new RedisIdempotencyStore(redis, { prefix: 'tenant-a' });
 */
export interface RedisIdempotencyStoreOptions {
  /**
   * Key prefix: keys are `<prefix>:idempotency:<key>`, the prefix encoded (`:`, `%`, braces, whitespace and
   * control characters percent-encoded; in the key only `%`), so no two (prefix, key) pairs share one.
   * 1-64 characters. Default: `stormguard`.
   */
  prefix?: string;
  /**
   * Whether `finish` waits until a replica has the outcome (`WAIT`), so a failover cannot lose it: `true`
   * (one replica, up to 1 s), `{ replicas, timeoutMs }`, or `false`. A `finish` whose outcome no replica
   * acknowledged in time rejects. Default: `true` on a Redis Cluster client, `false` on a single Redis.
   */
  durableWrites?: DurableWritesOption;
}

const SCRIPTS = {
  begin: { command: 'stormguardIdempotencyBeginV1', file: 'idempotency-begin-1.lua', numberOfKeys: 1 },
  finish: { command: 'stormguardIdempotencyFinishV2', file: 'idempotency-finish-1.lua', numberOfKeys: 1 },
  release: { command: 'stormguardIdempotencyReleaseV1', file: 'idempotency-release-1.lua', numberOfKeys: 1 },
  renew: { command: 'stormguardIdempotencyRenewV1', file: 'idempotency-renew-1.lua', numberOfKeys: 1 },
} as const satisfies Record<string, ScriptSpec>;

type Script = ReturnType<typeof defineScript>;

/**
 * The idempotency store in Redis: one hash per key, one Lua script (one round trip) per step, keys that
 * expire on their own (a claim after `inFlightTtlMs`, an outcome after `ttlMs`). A key touches one hash
 * slot, so Redis Cluster works.
 *
 * @example
 * const store = new RedisIdempotencyStore(new Redis(url), { prefix: 'stormguard' });
 * const guard = idempotencyGuard({ store, ttlMs: 86_400_000 });
 */
export class RedisIdempotencyStore implements IdempotencyStore {
  readonly #prefix: string;
  readonly #begin: Script;
  readonly #finish: Script;
  readonly #release: Script;
  readonly #renew: Script;
  readonly #redis: RedisClient;
  readonly #durable: DurableWrites | undefined;

  constructor(redis: RedisClient, options: RedisIdempotencyStoreOptions = {}) {
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    this.#prefix = prefix;
    this.#redis = redis;
    this.#durable = resolveDurableWrites(redis, options.durableWrites);
    this.#begin = defineScript(redis, SCRIPTS.begin);
    this.#finish = defineScript(redis, SCRIPTS.finish);
    this.#release = defineScript(redis, SCRIPTS.release);
    this.#renew = defineScript(redis, SCRIPTS.renew);
  }

  /** The Redis key that holds `key`'s state. */
  keyOf(key: string): string {
    return idempotencyKeyOf(this.#prefix, key);
  }

  async begin(key: string, token: string, inFlightTtlMs: number): Promise<IdempotencyClaim> {
    const reply = await this.#begin([this.keyOf(key)], [token, inFlightTtlMs]);
    const [state, detail] = reply as [string, string | number];
    if (state === 'done') return { state, value: String(detail) };
    if (state === 'wait') return { state, expiresInMs: Math.max(0, Number(detail)) };
    return { state: 'run' };
  }

  async finish(key: string, token: string, value: string, ttlMs: number): Promise<boolean> {
    const keys = [this.keyOf(key)];
    const args = [token, value, ttlMs];
    const reply = this.#durable
      ? await runDurably(this.#redis, SCRIPTS.finish, keys, args, this.#durable)
      : await this.#finish(keys, args);
    return reply === 1;
  }

  async release(key: string, token: string): Promise<boolean> {
    return (await this.#release([this.keyOf(key)], [token])) === 1;
  }

  async renew(key: string, token: string, inFlightTtlMs: number): Promise<boolean> {
    return (await this.#renew([this.keyOf(key)], [token, inFlightTtlMs])) === 1;
  }
}
