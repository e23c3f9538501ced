/**
 * One multi-key command for many requests: requests for keys of one hash tag made while that tag's command
 * is in flight wait for it, then go together in the next (one command, one Redis Cluster slot). An idle
 * caller waits for nothing; a busy one sends far fewer commands. The retry path's attempt-state reads
 * (`MGET`) and clears (`DEL`) go this way.
 *
 * @example
 * const reads = new KeyBatches<string | null>((keys) => redis.mget(...keys));
 * const value = await reads.request('{stormguard:q:index}', '{stormguard:q:index}:att:7:1700000000000');
 */
export class KeyBatches<Result> {
  readonly #batches = new Map<string, Batch<Result>>();

  /** `send` runs one command for `keys` (distinct, all of one tag) and answers one result per key, in order. */
  constructor(private readonly send: (keys: string[]) => Promise<Result[]>) {}

  /** The result for `key` (of hash tag `tag`), from the next command sent for the tag. */
  request(tag: string, key: string): Promise<Result> {
    let batch = this.#batches.get(tag);
    if (!batch) {
      batch = { inFlight: false, waiting: [] };
      this.#batches.set(tag, batch);
    }
    const queued = batch;
    const result = new Promise<Result>((resolve, reject) => queued.waiting.push({ key, resolve, reject }));
    if (!batch.inFlight) void this.#flush(tag, batch);
    return result;
  }

  async #flush(tag: string, batch: Batch<Result>): Promise<void> {
    const waiting = batch.waiting;
    batch.waiting = [];
    batch.inFlight = true;
    try {
      const keys = [...new Set(waiting.map((w) => w.key))];
      const results = await this.send(keys);
      const byKey = new Map(keys.map((key, i) => [key, results[i] as Result]));
      for (const w of waiting) w.resolve(byKey.get(w.key) as Result);
    } catch (error) {
      for (const w of waiting) w.reject(error);
    } finally {
      batch.inFlight = false;
      if (batch.waiting.length > 0) void this.#flush(tag, batch);
      else this.#batches.delete(tag);
    }
  }
}

interface Batch<Result> {
  inFlight: boolean;
  waiting: { key: string; resolve: (result: Result) => void; reject: (error: unknown) => void }[];
}
