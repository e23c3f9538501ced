import type { BudgetStore, ListOptions, StoreRead, StoreSpend } from '../budget/store.js';
import type { BudgetWindow } from '../budget/window.js';
import type { Clock } from '../common/clock.js';
import {
  assertPrefix,
  budgetKey,
  budgetKeyPattern,
  DEFAULT_PREFIX,
  dependencyOfBudgetKey,
} from './budget-keys.js';
import { scanKeys } from './scan.js';
import { defineScript, type RedisClient } from './scripts.js';

/**
 * Options of {@link RedisBudgetStore}.
 *
 * @example
 * const options: RedisBudgetStoreOptions = { redis: new Redis(url), prefix: 'shop' };
 */
export interface RedisBudgetStoreOptions {
  /** Your ioredis client (a `Redis` or a `Cluster`); the store never closes it. */
  redis: RedisClient;
  /** Key prefix, any 1-64 characters (encoded into keys). Default `stormguard`. */
  prefix?: string;
  /**
   * TEST ONLY: take time from this clock instead of the Redis server's `TIME`, so a conformance suite can run
   * window cases on a fake clock. In production leave it unset: workers' clocks disagree, Redis's does not.
   */
  clock?: Clock;
}

/**
 * The fleet-wide budget store on Redis (ioredis). Each `trySpend` is one Lua script, one round trip:
 * batched successes are added, the sliding window is summed and the retry granted or denied atomically,
 * with time from the Redis server. A dependency is one key, `{<prefix>:d:<dependency>}:budget` (both encoded, see src/common/keys.ts) (a MessagePack
 * ring of sub-buckets), in a single Redis Cluster slot, expiring two windows after its last write. Each
 * flushed success batch is one round trip per dependency.
 *
 * All workers sharing a dependency must agree on `windowMs` and `buckets` (a writer with other bucket
 * geometry starts the dependency's counts afresh); `ratio` and `minAllowance` are per caller.
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
  readonly remote = true;
  readonly prefix: string;
  readonly #redis: RedisClient;
  readonly #clock: Clock | undefined;
  readonly #spend;
  readonly #record;
  readonly #read;

  constructor(options: RedisBudgetStoreOptions) {
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    this.prefix = prefix;
    this.#redis = options.redis;
    this.#clock = options.clock;
    this.#spend = defineScript(options.redis, {
      command: 'stormguardBudgetSpendV1',
      file: 'budget-spend-1.lua',
      numberOfKeys: 1,
    });
    this.#record = defineScript(options.redis, {
      command: 'stormguardBudgetRecordV1',
      file: 'budget-record-1.lua',
      numberOfKeys: 1,
    });
    this.#read = defineScript(options.redis, {
      command: 'stormguardBudgetReadV1',
      file: 'budget-read-1.lua',
      numberOfKeys: 1,
      readOnly: true,
    });
  }

  async trySpend(
    dependency: string,
    window: BudgetWindow,
    pendingSuccesses: number,
    count: number,
  ): Promise<StoreSpend> {
    const reply = (await this.#spend(
      [budgetKey(this.prefix, dependency)],
      spendArgs(window, pendingSuccesses, count, this.#now()),
    )) as number[];
    const [granted, allowance, spent, denied, successes] = reply as [number, number, number, number, number];
    return { granted, allowance, spent, denied, successes };
  }

  async addSuccesses(dependency: string, count: number, window: BudgetWindow): Promise<void> {
    await this.#record([budgetKey(this.prefix, dependency)], recordArgs(window, count, this.#now()));
  }

  async read(dependency: string, window?: BudgetWindow): Promise<StoreRead | undefined> {
    const reply = (await this.#read(
      [budgetKey(this.prefix, dependency)],
      readArgs(window, this.#now()),
    )) as number[];
    if (reply[0] !== 1) return undefined;
    const [, allowance, spent, denied, successes, bucketMs, buckets, ratioPpm, minAllowance] =
      reply as number[];
    return {
      allowance: allowance!,
      spent: spent!,
      denied: denied!,
      successes: successes!,
      window: window ?? {
        bucketMs: bucketMs!,
        buckets: buckets!,
        windowMs: bucketMs! * buckets!,
        ratioPpm: ratioPpm!,
        minAllowance: minAllowance!,
      },
    };
  }

  /**
   * Every dependency with a budget key under this prefix: a SCAN with a MATCH on the budget keys (on a
   * cluster, every master). It walks the whole keyspace, so on a Redis that also holds many BullMQ jobs it
   * takes many round trips; an aborted `signal` stops it between two steps.
   */
  async dependencies(options: ListOptions = {}): Promise<string[]> {
    const names: string[] = [];
    for (const key of await scanKeys(this.#redis, budgetKeyPattern(this.prefix), options)) {
      const name = dependencyOfBudgetKey(this.prefix, key);
      if (name !== undefined) names.push(name);
    }
    return names.sort();
  }

  async ping(): Promise<void> {
    await this.#redis.ping();
  }

  #now(): string {
    return this.#clock ? String(this.#clock.now()) : '';
  }
}

/** Time to live of a dependency's key: two windows, so the oldest sub-bucket outlives its last use. */
function ttlMs(window: BudgetWindow): number {
  return 2 * window.windowMs;
}

/** ARGV of budget-spend-1.lua (see its contract header). */
export function spendArgs(
  window: BudgetWindow,
  successes: number,
  count: number,
  nowMs: string,
): (string | number)[] {
  return [
    window.bucketMs,
    window.buckets,
    window.ratioPpm,
    window.minAllowance,
    successes,
    count,
    ttlMs(window),
    nowMs,
  ];
}

/** ARGV of budget-record-1.lua (see its contract header). */
export function recordArgs(window: BudgetWindow, count: number, nowMs: string): (string | number)[] {
  return [count, window.bucketMs, window.buckets, window.ratioPpm, window.minAllowance, ttlMs(window), nowMs];
}

/** ARGV of budget-read-1.lua (see its contract header). */
export function readArgs(window: BudgetWindow | undefined, nowMs: string): (string | number)[] {
  return window ? [nowMs, window.bucketMs, window.buckets, window.ratioPpm, window.minAllowance] : [nowMs];
}
