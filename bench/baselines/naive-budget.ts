/**
 * The retry budget as the widely copied fixed-bucket sketch has it, ported to TypeScript as faithfully as possible so the
 * benchmark can measure stormguard against it on the same Redis. Its known defects are kept on purpose:
 *
 * - a decision takes three sequential round trips (GET the success counter, INCR the retry counter,
 *   EXPIRE it);
 * - a denied retry is counted as spent (INCR happens before the comparison), so once a storm of denials
 *   has pushed the counter past the allowance, new successes free no retries until the bucket rolls over;
 * - fixed one-minute buckets keyed by `floor(now / 60 s)`, so the allowance collapses to the floor at the
 *   start of every minute;
 * - the allowance is `int(ok × RATIO)` in floating point.
 *
 * The one liberty taken: time comes from an injectable `now()` (seconds, like Python's `time.time()`), so
 * the benchmark can place calls on either side of a bucket edge.
 */
import type { Redis } from 'ioredis';

export interface NaiveBudgetOptions {
  windowS?: number;
  ratio?: number;
  minAllowance?: number;
  /** Seconds since the epoch, like `time.time()`. Default: the wall clock. */
  now?: () => number;
}

/** The naive design's `record_success` / `try_spend_retry` pair over ioredis. */
export class NaiveBudget {
  readonly #r: Redis;
  readonly #windowS: number;
  readonly #ratio: number;
  readonly #minAllowance: number;
  readonly #now: () => number;

  constructor(redis: Redis, options: NaiveBudgetOptions = {}) {
    this.#r = redis;
    this.#windowS = options.windowS ?? 60;
    this.#ratio = options.ratio ?? 0.2;
    this.#minAllowance = options.minAllowance ?? 10;
    this.#now = options.now ?? (() => Date.now() / 1_000);
  }

  /** `_bucket(name)`: the current fixed bucket's key prefix. */
  bucket(name: string): string {
    return `budget:${name}:${Math.floor(this.#now() / this.#windowS)}`;
  }

  /** `record_success`: INCR and EXPIRE in one pipeline (one round trip, two commands) per success. */
  async recordSuccess(name: string): Promise<void> {
    const key = `${this.bucket(name)}:ok`;
    await this.#r
      .pipeline()
      .incr(key)
      .expire(key, this.#windowS * 2)
      .exec();
  }

  /** The allowance `try_spend_retry` computes, without spending (for the benchmark's edge readings). */
  async allowance(name: string): Promise<number> {
    const ok = Number((await this.#r.get(`${this.bucket(name)}:ok`)) ?? 0);
    return Math.max(this.#minAllowance, Math.trunc(ok * this.#ratio));
  }

  /** `try_spend_retry`: GET, INCR, EXPIRE as three round trips; true if the retry fits. */
  async trySpendRetry(name: string): Promise<boolean> {
    const ok = Number((await this.#r.get(`${this.bucket(name)}:ok`)) ?? 0);
    const allowance = Math.max(this.#minAllowance, Math.trunc(ok * this.#ratio));
    const used = await this.#r.incr(`${this.bucket(name)}:retry`);
    await this.#r.expire(`${this.bucket(name)}:retry`, this.#windowS * 2);
    return used <= allowance;
  }
}
