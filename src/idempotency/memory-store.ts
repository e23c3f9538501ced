import { type Clock, systemClock } from '../common/clock.js';
import type { IdempotencyClaim, IdempotencyStore } from './store.js';

type Entry =
  | { state: 'running'; token: string; expiresAt: number }
  | { state: 'done'; token: string; value: string; expiresAt: number };

/**
 * The idempotency store in one process, on an injectable clock: for tests of your own jobs and for the
 * simulator. It keeps the Redis store's contract (same claims, same expiry rules), checked by one shared
 * suite.
 *
 * @example
 * const clock = new FakeClock(0);
 * const guard = idempotencyGuard({ store: new MemoryIdempotencyStore({ clock }), ttlMs: 60_000 });
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  readonly #clock: Clock;

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  async begin(key: string, token: string, inFlightTtlMs: number): Promise<IdempotencyClaim> {
    const entry = this.#live(key);
    if (entry?.state === 'done') return { state: 'done', value: entry.value };
    if (entry?.state === 'running')
      return { state: 'wait', expiresInMs: entry.expiresAt - this.#clock.now() };
    this.#entries.set(key, { state: 'running', token, expiresAt: this.#clock.now() + inFlightTtlMs });
    return { state: 'run' };
  }

  async finish(key: string, token: string, value: string, ttlMs: number): Promise<boolean> {
    const entry = this.#live(key);
    // The holder repeating a finish that landed (its reply was lost) is answered as stored.
    if (entry?.state === 'done') return entry.token === token && entry.value === value;
    if (entry?.state === 'running' && entry.token !== token) return false;
    this.#entries.set(key, { state: 'done', token, value, expiresAt: this.#clock.now() + ttlMs });
    return true;
  }

  async release(key: string, token: string): Promise<boolean> {
    const entry = this.#live(key);
    if (entry?.state !== 'running' || entry.token !== token) return false;
    this.#entries.delete(key);
    return true;
  }

  async renew(key: string, token: string, inFlightTtlMs: number): Promise<boolean> {
    const entry = this.#live(key);
    if (entry?.state !== 'running' || entry.token !== token) return false;
    entry.expiresAt = this.#clock.now() + inFlightTtlMs;
    return true;
  }

  /** The entry unless it expired (then it is dropped, as Redis drops an expired key). */
  #live(key: string): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry && entry.expiresAt <= this.#clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }
}
