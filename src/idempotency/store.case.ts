import { afterEach, describe, expect, it } from 'vitest';
import type { IdempotencyStore } from './store.js';

/** One store under test, and a way to let time pass for it. */
export interface IdempotencyStoreHarness {
  store: IdempotencyStore;
  /** Lets `ms` pass for the store: a fake clock moves, or (Redis) real time passes until the key is gone. */
  elapse(key: string, ms: number): Promise<void>;
  close(): Promise<void>;
}

/** Claims in the cases live this long; short, because the Redis harness lets it pass for real. */
const CLAIM_MS = 150;
const OUTCOME_MS = 60_000;

/**
 * The idempotency store contract, written once and run against every implementation (memory, Redis, PostgreSQL).
 *
 * @example
 * idempotencyStoreCases('MemoryIdempotencyStore', async () => {
 *   const clock = new FakeClock(0);
 *   return { store: new MemoryIdempotencyStore({ clock }), elapse: async (_k, ms) => void clock.advance(ms), close: async () => {} };
 * });
 */
export function idempotencyStoreCases(name: string, open: () => Promise<IdempotencyStoreHarness>): void {
  describe(`${name} (idempotency store contract)`, () => {
    let harness: IdempotencyStoreHarness | undefined;
    let n = 0;
    const key = () => `case-${++n}`;
    const fresh = async () => {
      harness = await open();
      return harness;
    };
    afterEach(async () => {
      await harness?.close();
      harness = undefined;
    });

    it('gives a free key to the first caller and tells the next one to wait', async () => {
      const { store } = await fresh();
      const k = key();
      expect(await store.begin(k, 'a', CLAIM_MS)).toEqual({ state: 'run' });
      const second = await store.begin(k, 'b', CLAIM_MS);
      expect(second.state).toBe('wait');
      expect(second.state === 'wait' && second.expiresInMs).toBeLessThanOrEqual(CLAIM_MS);
    });

    it('stores the holder’s outcome once; later callers get it', async () => {
      const { store } = await fresh();
      const k = key();
      await store.begin(k, 'a', CLAIM_MS);
      expect(await store.finish(k, 'b', '"not mine"', OUTCOME_MS)).toBe(false);
      expect(await store.finish(k, 'a', '"receipt"', OUTCOME_MS)).toBe(true);
      expect(await store.begin(k, 'c', CLAIM_MS)).toEqual({ state: 'done', value: '"receipt"' });
      expect(await store.finish(k, 'a', '"again"', OUTCOME_MS)).toBe(false);
      expect(await store.begin(k, 'd', CLAIM_MS)).toEqual({ state: 'done', value: '"receipt"' });
      expect(await store.release(k, 'a')).toBe(false);
    });

    it('answers a repeated finish by the holder with the same outcome as stored (its first reply may be lost)', async () => {
      const { store } = await fresh();
      const k = key();
      await store.begin(k, 'a', CLAIM_MS);
      expect(await store.finish(k, 'a', '"receipt"', OUTCOME_MS)).toBe(true);
      expect(await store.finish(k, 'a', '"receipt"', OUTCOME_MS)).toBe(true);
      expect(await store.begin(k, 'c', CLAIM_MS)).toEqual({ state: 'done', value: '"receipt"' });
    });

    it('still refuses a finish of a done key by another token, or by the holder with another outcome', async () => {
      const { store } = await fresh();
      const k = key();
      await store.begin(k, 'a', CLAIM_MS);
      expect(await store.finish(k, 'a', '"receipt"', OUTCOME_MS)).toBe(true);
      expect(await store.finish(k, 'b', '"receipt"', OUTCOME_MS)).toBe(false);
      expect(await store.finish(k, 'a', '"other"', OUTCOME_MS)).toBe(false);
      expect(await store.begin(k, 'c', CLAIM_MS)).toEqual({ state: 'done', value: '"receipt"' });
      expect(await store.renew(k, 'a', CLAIM_MS)).toBe(false);
      expect(await store.release(k, 'a')).toBe(false);
      expect(await store.begin(k, 'd', CLAIM_MS)).toEqual({ state: 'done', value: '"receipt"' });
    });

    it('frees a key only for the caller that holds it', async () => {
      const { store } = await fresh();
      const k = key();
      await store.begin(k, 'a', CLAIM_MS);
      expect(await store.release(k, 'b')).toBe(false);
      expect(await store.release(k, 'a')).toBe(true);
      expect(await store.begin(k, 'b', CLAIM_MS)).toEqual({ state: 'run' });
    });

    it('renews only the holder’s claim', async () => {
      const { store } = await fresh();
      const k = key();
      await store.begin(k, 'a', CLAIM_MS);
      expect(await store.renew(k, 'b', CLAIM_MS)).toBe(false);
      expect(await store.renew(k, 'a', OUTCOME_MS)).toBe(true);
      const waiting = await store.begin(k, 'b', CLAIM_MS);
      expect(waiting.state === 'wait' && waiting.expiresInMs).toBeGreaterThan(CLAIM_MS);
    });

    it('lets a new caller take a claim that expired; the old holder can no longer finish, renew or release', async () => {
      const h = await fresh();
      const k = key();
      await h.store.begin(k, 'crashed', CLAIM_MS);
      await h.elapse(k, CLAIM_MS);
      expect(await h.store.begin(k, 'next', CLAIM_MS)).toEqual({ state: 'run' });
      expect(await h.store.finish(k, 'crashed', '"late"', OUTCOME_MS)).toBe(false);
      expect(await h.store.renew(k, 'crashed', CLAIM_MS)).toBe(false);
      expect(await h.store.release(k, 'crashed')).toBe(false);
      expect(await h.store.finish(k, 'next', '"on time"', OUTCOME_MS)).toBe(true);
      expect(await h.store.begin(k, 'x', CLAIM_MS)).toEqual({ state: 'done', value: '"on time"' });
    });

    it('still stores the outcome of a caller whose claim expired when nobody took the key', async () => {
      const h = await fresh();
      const k = key();
      await h.store.begin(k, 'slow', CLAIM_MS);
      await h.elapse(k, CLAIM_MS);
      expect(await h.store.finish(k, 'slow', '"finally"', OUTCOME_MS)).toBe(true);
      expect(await h.store.begin(k, 'x', CLAIM_MS)).toEqual({ state: 'done', value: '"finally"' });
    });

    it('forgets an outcome after its time to live', async () => {
      const h = await fresh();
      const k = key();
      await h.store.begin(k, 'a', CLAIM_MS);
      await h.store.finish(k, 'a', '"old"', CLAIM_MS);
      await h.elapse(k, CLAIM_MS);
      expect(await h.store.begin(k, 'b', CLAIM_MS)).toEqual({ state: 'run' });
    });
  });
}
