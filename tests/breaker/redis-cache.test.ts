import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { FakeClock } from '../../src/common/clock.js';
import { isBrokenCircuitError } from '../../src/errors/broken-circuit-error.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let server: TestRedis;
let stats: Redis;
let run = 0;

beforeAll(async () => {
  server = await TestRedis.start();
  stats = new Redis(server.connection);
});
afterAll(async () => {
  await stats.quit();
  await server.close();
});

/** Script round trips the server has answered so far (EVALSHA, plus EVAL when a script was not cached). */
async function scriptCalls(): Promise<number> {
  const info = await stats.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

/** A breaker on its own connection; every breaker of one test shares the test's prefix. */
function breakerOn(redis: Redis, prefix: string, stateCacheMs?: number): CircuitBreaker {
  const store = new RedisBreakerStore({ redis, prefix });
  return new CircuitBreaker({
    store,
    consecutiveFailures: 3,
    ...(stateCacheMs === undefined ? {} : { stateCacheMs }),
  });
}

describe('CircuitBreaker state cache on a RedisBreakerStore', () => {
  it('1 000 successful calls on a closed breaker cost at most 10 round trips, and every success is counted', async () => {
    const redis = new Redis(server.connection);
    try {
      // Without the cache each call is two round trips: the counting sees them.
      const uncached = breakerOn(redis, `cache-${++run}`, 0);
      await uncached.execute('search', async () => 'loads the script');
      const before = await scriptCalls();
      for (let i = 0; i < 50; i++) await uncached.execute('search', async () => i);
      expect((await scriptCalls()) - before).toBe(100);

      const prefix = `cache-${++run}`;
      const breaker = breakerOn(redis, prefix);
      const start = await scriptCalls();
      for (let i = 0; i < 1_000; i++) expect(await breaker.execute('search', async () => i)).toBe(i);
      await breaker.close();
      expect((await scriptCalls()) - start).toBeLessThanOrEqual(10);
      expect(await breaker.state('search')).toMatchObject({ state: 'closed', successes: 1_000, failures: 0 });
    } finally {
      await redis.quit();
    }
  });

  it('a failure burst opens the breaker at once for its process and within a cache period fleet-wide', async () => {
    const [one, two] = [new Redis(server.connection), new Redis(server.connection)];
    try {
      const prefix = `cache-${++run}`;
      const failing = breakerOn(one, prefix);
      const peer = breakerOn(two, prefix);
      // The peer knows the dependency closed (and caches that) before the burst.
      expect(await peer.execute('crm', async () => 'ok')).toBe('ok');
      for (let i = 0; i < 3; i++)
        await expect(failing.execute('crm', () => Promise.reject(new TransientError('503')))).rejects.toThrow(
          '503',
        );
      // Failures are not batched: the process that saw them refuses the next call without delay.
      const refused = await failing.execute('crm', async () => 'never').catch((e: unknown) => e);
      expect(isBrokenCircuitError(refused)).toBe(true);
      expect((await failing.state('crm')).state).toBe('open');
      await waitFor(
        async () =>
          isBrokenCircuitError(await peer.execute('crm', async () => 'ok').catch((e: unknown) => e)),
        1_000,
        'the peer to refuse calls to the opened dependency',
      );
      await Promise.all([failing.close(), peer.close()]);
    } finally {
      await Promise.all([one.quit(), two.quit()]);
    }
  });

  it("check (decide's view) answers from the cache like acquire: no round trip after the outcome that taught it", async () => {
    const redis = new Redis(server.connection);
    try {
      // A cache period no slow machine outlasts: what is asserted is where the answer comes from.
      const breaker = breakerOn(redis, `cache-${++run}`, 60_000);
      await expect(
        breaker.execute('mail', () => Promise.reject(new TransientError('503'))),
      ).rejects.toThrow();
      let before = await scriptCalls();
      expect(await breaker.check('mail')).toEqual({ state: 'closed' });
      expect((await scriptCalls()) - before).toBe(0);
      for (let i = 0; i < 2; i++)
        await expect(
          breaker.execute('mail', () => Promise.reject(new TransientError('503'))),
        ).rejects.toThrow();
      before = await scriptCalls();
      const open = await breaker.check('mail');
      expect((await scriptCalls()) - before).toBe(0);
      expect(open.state).toBe('open');
      expect(open.halfOpenAtMs).toBe((await breaker.state('mail')).halfOpenAtMs);

      // Without the cache every check is a round trip.
      const uncached = breakerOn(redis, `cache-${++run}`, 0);
      await expect(
        uncached.execute('mail', () => Promise.reject(new TransientError('503'))),
      ).rejects.toThrow();
      before = await scriptCalls();
      expect(await uncached.check('mail')).toEqual({ state: 'closed' });
      expect((await scriptCalls()) - before).toBe(1);
    } finally {
      await redis.quit();
    }
  });

  it('rejects a stateCacheMs that is not a whole number of ms >= 0', () => {
    expect(() => new CircuitBreaker({ stateCacheMs: -1 })).toThrow(
      'stateCacheMs: -1 is invalid; use a whole number of ms >= 0',
    );
  });

  it("an operator's override reaches a worker within its stateCacheMs, whatever the cached state", async () => {
    const redis = new Redis(server.connection);
    try {
      const prefix = `cache-${++run}`;
      const operator = new RedisBreakerStore({ redis, prefix });
      const clock = new FakeClock(0);
      const worker = new CircuitBreaker({
        store: new RedisBreakerStore({ redis, prefix }),
        clock,
        stateCacheMs: 1_000,
        consecutiveFailures: 1,
        coolDownMs: 600_000,
      });
      const why = { reason: 'maintenance', by: 'alice' };
      expect((await worker.acquire('crm')).allowed).toBe(true); // closed, now cached

      await operator.override('crm', 'force-open', why, worker.optionsFor('crm'));
      clock.advance(1_000);
      const refused = await worker.acquire('crm');
      expect(refused.allowed).toBe(false);
      expect(refused.snapshot.override).toMatchObject({ state: 'open', reason: 'maintenance', by: 'alice' });

      // A breaker that opened on its own is cached until it half-opens (10 minutes here) no longer.
      await operator.override('crm', 'reset', why, worker.optionsFor('crm'));
      clock.advance(1_000);
      await worker.recordFailure('crm', await worker.acquire('crm'));
      expect((await worker.acquire('crm')).allowed).toBe(false);
      await operator.override('crm', 'force-closed', why, worker.optionsFor('crm'));
      clock.advance(1_000);
      expect((await worker.acquire('crm')).allowed).toBe(true);
      await worker.close();
    } finally {
      await redis.quit();
    }
  });
});
