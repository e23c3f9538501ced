import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { FakeClock } from '../../src/common/clock.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let server: TestRedis;
let redis: Redis;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
  redis.on('error', () => {}); // connection errors are expected here; ioredis would log each one
});
afterAll(async () => {
  redis.disconnect();
  await server.close();
});

/** Fails the test instead of hanging it: the store promises a bounded answer. */
function bounded<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within 5s`)), 5_000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

describe('RedisBreakerStore when Redis goes away', () => {
  it('degrades to a local breaker without throwing or hanging, and shares state again once Redis is back', async () => {
    const store = new RedisBreakerStore({ redis, prefix: 'down', timeoutMs: 300, retryIntervalMs: 100 });
    // The breaker's state cache runs on this clock, so the test decides when a cached answer expires.
    const cacheClock = new FakeClock();
    const breaker = new CircuitBreaker({ store, consecutiveFailures: 3, clock: cacheClock });
    const events: string[] = [];
    breaker.events.on('degraded', (e) => events.push(`degraded:${e.dependency}`));
    breaker.events.on('recovered', (e) => events.push(`recovered:${e.dependency}`));
    const allow = new RedisBreakerStore({ redis, prefix: 'down', whenUnavailable: 'allow' });
    const reject = new RedisBreakerStore({ redis, prefix: 'down', whenUnavailable: 'reject' });
    const options = breaker.optionsFor('search');

    expect(await breaker.recordFailure('search')).toMatchObject({ degraded: false, failures: 1 });

    await server.stop();
    // Within stateCacheMs the closed state is answered from the cache; past it, the store is asked again.
    expect(await breaker.acquire('search')).toMatchObject({ allowed: true, snapshot: { degraded: false } });
    cacheClock.advance(250);
    const admission = await bounded(breaker.acquire('search'), 'acquire while Redis is down');
    expect(admission).toMatchObject({ allowed: true, snapshot: { degraded: true, state: 'closed' } });
    // The local breaker still protects: three local failures open it.
    for (let i = 0; i < 3; i++) await bounded(breaker.recordFailure('search'), 'recordFailure while down');
    expect(await bounded(breaker.acquire('search'), 'acquire')).toMatchObject({
      allowed: false,
      snapshot: { degraded: true, state: 'open' },
    });
    // The declared alternatives: fail open and fail closed.
    expect(await bounded(allow.acquire('search', options), 'allow')).toMatchObject({
      allowed: true,
      snapshot: { degraded: true, state: 'closed' },
    });
    const refused = await bounded(reject.acquire('search', options), 'reject');
    expect(refused).toMatchObject({ allowed: false, snapshot: { degraded: true, state: 'open' } });
    expect(refused.snapshot.halfOpenAtMs).toBeGreaterThan(refused.snapshot.nowMs);

    await server.restart();
    await waitFor(
      async () => !(await breaker.state('search')).degraded,
      15_000,
      'the breaker to read shared state from Redis again',
    );
    // The restarted server kept nothing; the shared view wins over the local one.
    expect(await breaker.acquire('search')).toMatchObject({
      allowed: true,
      snapshot: { degraded: false, state: 'closed' },
    });
    expect(events).toEqual(['degraded:search', 'recovered:search']);
  });
});
