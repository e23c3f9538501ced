/**
 * A one-round-trip Lua reference for the retry budget: the naive fixed-bucket design
 * (bench/baselines/naive-budget.ts) folded into one script, as a careful hand-written Redis budget would
 * be: one EVALSHA per decision that reads the success counter, compares, and counts the retry only when it
 * fits (so a denial is not spent), atomically. No sliding window, no settings, no batching of concurrent
 * requests: what stormguard's decision path is measured against as "one script call per decision, doing
 * the least a correct budget must".
 *
 * Fixed one-minute buckets keyed by the client's `now()` like the naive design (the bucket's two counters
 * share a hash tag, so the script runs on Redis Cluster too); successes are INCR + EXPIRE in one pipeline.
 */
import type { Redis } from 'ioredis';

/**
 * KEYS[1] the bucket's success counter, KEYS[2] its retry counter.
 * ARGV[1] ratio in parts per million, ARGV[2] minAllowance, ARGV[3] the counters' time to live in seconds.
 * Returns 1 when the retry is granted (and counted), 0 when it is denied (and not counted).
 */
const SPEND = `
local ok = tonumber(redis.call('GET', KEYS[1]) or '0')
local allowance = math.max(tonumber(ARGV[2]), math.floor(ok * tonumber(ARGV[1]) / 1000000))
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
if used >= allowance then return 0 end
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
`;

export interface LuaBudgetOptions {
  windowS?: number;
  ratio?: number;
  minAllowance?: number;
  /** Seconds since the epoch. Default: the wall clock. */
  now?: () => number;
}

/** `recordSuccess` / `trySpendRetry` with one script call per decision. */
export class LuaBudget {
  readonly #r: Redis & { luaBudgetSpend?: (k1: string, k2: string, ...argv: string[]) => Promise<number> };
  readonly #windowS: number;
  readonly #ratioPpm: string;
  readonly #minAllowance: string;
  readonly #now: () => number;

  constructor(redis: Redis, options: LuaBudgetOptions = {}) {
    this.#r = redis;
    this.#windowS = options.windowS ?? 60;
    this.#ratioPpm = String(Math.round((options.ratio ?? 0.2) * 1_000_000));
    this.#minAllowance = String(options.minAllowance ?? 10);
    this.#now = options.now ?? (() => Date.now() / 1_000);
    if (!this.#r.luaBudgetSpend) this.#r.defineCommand('luaBudgetSpend', { numberOfKeys: 2, lua: SPEND });
  }

  bucket(name: string): string {
    return `{lua:${name}}:${Math.floor(this.#now() / this.#windowS)}`;
  }

  async recordSuccess(name: string): Promise<void> {
    const key = `${this.bucket(name)}:ok`;
    await this.#r
      .pipeline()
      .incr(key)
      .expire(key, this.#windowS * 2)
      .exec();
  }

  /** One EVALSHA: true if the retry fits. */
  async trySpendRetry(name: string): Promise<boolean> {
    const bucket = this.bucket(name);
    const spend = this.#r.luaBudgetSpend as (k1: string, k2: string, ...argv: string[]) => Promise<number>;
    const granted = await spend.call(
      this.#r,
      `${bucket}:ok`,
      `${bucket}:retry`,
      this.#ratioPpm,
      this.#minAllowance,
      String(this.#windowS * 2),
    );
    return granted === 1;
  }
}
