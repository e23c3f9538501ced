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
import {
  assertPrefix,
  budgetKey,
  budgetKeyPattern,
  DEFAULT_PREFIX,
  dependencyOfBudgetKey,
} from './budget-keys.js';
import { type RedisConnection, redisClientOf } from './connection.js';
import { DependencyRegistry } from './dependency-registry.js';
import { defineScript, type RedisClient } from './scripts.js';

/**
 * Options of {@link RedisBudgetStore}.
 *
 * @example
 * const options: RedisBudgetStoreOptions = { redis: new Redis(url), prefix: 'shop' };
 */
export interface RedisBudgetStoreOptions {
  /**
   * Your ioredis client (a `Redis` or a `Cluster`), which the store never closes; or ioredis options
   * (`{ host, port }`) or a `redis://` URL, from which it opens a client of its own, closed by `close()`.
   */
  redis: RedisConnection;
  /** Key prefix, any 1-64 characters (encoded into keys). Default `stormguard`. */
  prefix?: string;
  /**
   * TEST ONLY: take time from this clock instead of the Redis server's `TIME`, so a conformance suite can run
   * window cases on a fake clock. In production leave it unset: workers' clocks disagree, Redis's does not.
   */
  clock?: Clock;
  /**
   * A store for reading only (status tools): its listing writes nothing, not even the dependency
   * registry's upkeep (see src/redis/dependency-registry.ts). Default false; workers leave it unset.
   */
  readOnly?: boolean;
}

/** Dependency keys kept encoded at most; past it the cache starts over. */
const KEY_CACHE_LIMIT = 10_000;

const OPTION_NAMES = {
  redis: true,
  prefix: true,
  clock: true,
  readOnly: true,
} as const satisfies OptionNames<RedisBudgetStoreOptions>;

/**
 * The fleet-wide budget store on Redis (ioredis). Each `trySpend` is one Lua script, one round trip:
 * batched successes are added, the sliding window is summed and the retry granted or denied atomically,
 * with time from the Redis server. A dependency is one key, `{<prefix>:d:<dependency>}:budget` (both
 * encoded, see src/common/keys.ts): a MessagePack map of the governing settings and their ring of
 * sub-buckets, in a single Redis Cluster slot, expiring two windows after its last write. Each flushed
 * success batch is one round trip per dependency; each success group carries its age, which the script
 * subtracts from the server's time.
 *
 * The settings stored with a dependency govern every worker that uses it; a worker with a higher
 * `settingsVersion` takes over once its settings hold a whole window of counts (src/budget/window.ts).
 * A key that cannot be read affects its own dependency only: a write replaces it (and says so in
 * `reset`), a read rejects with a `CorruptBudgetStateError`.
 *
 * Defaults: prefix `stormguard`.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RetryBudget } from 'stormguard';
 * import { RedisBudgetStore } from 'stormguard/redis';
 *
 * const redis = new Redis(process.env.REDIS_URL);
 * const budget = new RetryBudget({ store: new RedisBudgetStore({ redis }), ratio: 0.2 });
 */
export class RedisBudgetStore implements BudgetStore {
  readonly #closeClient: () => Promise<void>;
  readonly remote = true;
  readonly prefix: string;
  readonly #redis: RedisClient;
  readonly #clock: Clock | undefined;
  readonly #spend;
  readonly #read;
  readonly #registry: DependencyRegistry;
  readonly #keys = new Map<string, string>();

  constructor(options: RedisBudgetStoreOptions) {
    checkOptionNames('RedisBudgetStore', options, OPTION_NAMES);
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    const { redis, close } = redisClientOf('RedisBudgetStore', options.redis);
    this.#closeClient = close;
    this.prefix = prefix;
    this.#redis = redis;
    this.#clock = options.clock;
    this.#spend = defineScript(redis, {
      command: 'stormguardBudgetSpendV3',
      file: 'budget-spend-1.lua',
      numberOfKeys: 1,
    });
    this.#read = defineScript(redis, {
      command: 'stormguardBudgetReadV2',
      file: 'budget-read-1.lua',
      numberOfKeys: 1,
      readOnly: true,
    });
    this.#registry = new DependencyRegistry({
      redis,
      prefix,
      kind: 'budget',
      legacy: {
        pattern: budgetKeyPattern(prefix),
        dependencyOf: (key) => dependencyOfBudgetKey(prefix, key),
      },
      ...(options.clock ? { clock: options.clock } : {}),
      readOnly: options.readOnly === true,
    });
  }

  /** Closes the client the store opened from options or a URL; a client you passed stays open. */
  async close(): Promise<void> {
    await this.#closeClient();
  }

  async trySpend(
    dependency: string,
    window: BudgetWindow,
    successes: readonly AgedSuccesses[],
    count: number,
  ): Promise<StoreSpend> {
    // The registry note (one command, about once a minute per dependency) travels with the script.
    const note = this.#registry.note(dependency);
    const spend = this.#spend([this.#key(dependency)], spendArgs(window, successes, count, this.#now()));
    const reply = (note === undefined ? await spend : (await Promise.all([note, spend]))[1]) as (
      | number
      | string
    )[];
    return spendOf(reply, window);
  }

  async addSuccesses(
    dependency: string,
    successes: readonly AgedSuccesses[],
    window: BudgetWindow,
  ): Promise<StoreWrite> {
    return settingsOf(await this.trySpend(dependency, window, successes, 0));
  }

  async read(dependency: string): Promise<StoreRead | undefined> {
    const reply = (await this.#read([this.#key(dependency)], [this.#now()])) as (number | string)[];
    if (reply[0] === 0) return undefined;
    if (reply[0] === -1) throw new CorruptBudgetStateError(dependency, String(reply[1]));
    return readOf(reply);
  }

  /**
   * Every dependency with a budget key under this prefix: the names in the store's dependency registry
   * (src/redis/dependency-registry.ts) whose key still exists, a few commands whatever the size of the
   * keyspace. The first listing under a prefix that has never been listed also scans once for keys written
   * before the registry existed; an aborted `signal` stops that scan between two steps.
   */
  async dependencies(options: ListOptions = {}): Promise<string[]> {
    const names = await this.#registry.names(options);
    const live = await Promise.all(names.map((name) => this.#redis.exists(budgetKey(this.prefix, name))));
    await this.#registry.forget(names.filter((_, i) => live[i] === 0));
    return names.filter((_, i) => live[i] === 1);
  }

  async ping(): Promise<void> {
    await this.#redis.ping();
  }

  /** The dependency's key, encoded once per dependency (a decision's hot path asks for it every time). */
  #key(dependency: string): string {
    let key = this.#keys.get(dependency);
    if (key === undefined) {
      // A cache, not state: bounded by starting over.
      if (this.#keys.size >= KEY_CACHE_LIMIT) this.#keys.clear();
      key = budgetKey(this.prefix, dependency);
      this.#keys.set(dependency, key);
    }
    return key;
  }

  #now(): string {
    return this.#clock ? String(this.#clock.now()) : '';
  }
}

/** ARGV of budget-spend-1.lua (see its contract header). */
export function spendArgs(
  window: BudgetWindow,
  successes: readonly AgedSuccesses[],
  count: number,
  nowMs: string,
): (string | number)[] {
  const args: (string | number)[] = [
    window.bucketMs,
    window.buckets,
    window.ratioPpm,
    window.minAllowance,
    window.version,
    count,
    nowMs,
  ];
  for (const { ageMs, count: n } of successes) args.push(ageMs, n);
  return args;
}

/** Entries 1 to 15 of either script's reply (the same layout): the counts and the settings applied. */
function readOf(reply: (number | string)[]): StoreRead {
  const n = reply as number[];
  const read: StoreRead = {
    allowance: Number(reply[1]),
    spent: Number(reply[2]),
    denied: Number(reply[3]),
    successes: Number(reply[4]),
    window: windowAt(n, 5),
  };
  if (n[10] === 1) read.pending = windowAt(n, 11);
  return read;
}

/**
 * The reply of budget-spend-1.lua as a `StoreSpend`: five entries alone mean the caller's settings
 * (`window`) govern, with none pending and nothing reset.
 */
function spendOf(reply: (number | string)[], window: BudgetWindow): StoreSpend {
  if (reply.length === 5)
    return {
      granted: Number(reply[0]),
      allowance: Number(reply[1]),
      spent: Number(reply[2]),
      denied: Number(reply[3]),
      successes: Number(reply[4]),
      window,
    };
  const spend: StoreSpend = { granted: Number(reply[0]), ...readOf(reply) };
  if (reply[16] !== '' && reply[16] !== undefined) spend.reset = String(reply[16]);
  return spend;
}

/** The settings {bucketMs, buckets, ratioPpm, minAllowance, version} at `reply[at …]`. */
function windowAt(reply: number[], at: number): BudgetWindow {
  const [bucketMs, buckets, ratioPpm, minAllowance, version] = reply.slice(at, at + 5) as number[];
  return {
    bucketMs: bucketMs!,
    buckets: buckets!,
    windowMs: bucketMs! * buckets!,
    ratioPpm: ratioPpm!,
    minAllowance: minAllowance!,
    version: version!,
  };
}
