import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { breakerStoreCases } from '../../src/breaker/store.case.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { TestRedis } from '../helpers/redis-server.js';

let server: TestRedis;
let run = 0;

beforeAll(async () => {
  server = await TestRedis.start();
});
afterAll(async () => {
  await server.close();
});

breakerStoreCases('RedisBreakerStore', async (clock, connections) => {
  const prefix = `conformance-${++run}`;
  const clients = Array.from({ length: connections }, () => new Redis(server.connection));
  const stores = clients.map((redis) => new RedisBreakerStore({ redis, prefix, timeOverride: clock }));
  return {
    stores,
    close: async () => {
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
});

describe('RedisBreakerStore specifics', () => {
  it('keeps a dependency in one hash-tagged key that expires on its own, on the server clock', async () => {
    const redis = new Redis(server.connection);
    try {
      const store = new RedisBreakerStore({ redis, prefix: 'specifics' });
      const options = resolveBreakerOptions({ windowMs: 1_000, coolDownMs: 500 });
      const before = Date.now();
      const { snapshot } = await store.record('search', 'failure', options);
      expect(store.keyOf('search')).toBe('{specifics:breaker:search}:state');
      expect(await redis.keys('{specifics:*')).toEqual(['{specifics:breaker:search}:state']);
      const ttl = await redis.pttl('{specifics:breaker:search}:state');
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(2 * (1_000 + 500));
      // Time came from Redis TIME: the same machine, so within a generous bound of the local clock.
      expect(Math.abs(snapshot.nowMs - before)).toBeLessThan(60_000);
    } finally {
      await redis.quit();
    }
  });

  it('rejects a prefix that would break hash tags or key scans', () => {
    const redis = new Redis({ ...server.connection, lazyConnect: true });
    expect(() => new RedisBreakerStore({ redis, prefix: 'a{b}' })).toThrow(/prefix "a\{b\}"/);
    redis.disconnect();
  });

  it('lists every dependency under its prefix with the options its breaker last wrote', async () => {
    const redis = new Redis(server.connection);
    try {
      const store = new RedisBreakerStore({ redis, prefix: 'list.a' });
      const options = resolveBreakerOptions({ consecutiveFailures: 1 });
      await store.record('search', 'failure', options);
      await store.record('mail', 'success', options);
      await new RedisBreakerStore({ redis, prefix: 'other' }).record('crm', 'success', options);
      const listed = await store.list();
      expect(listed.map((b) => [b.dependency, b.state])).toEqual([
        ['mail', 'closed'],
        ['search', 'open'],
      ]);
      expect(listed[1]?.options?.consecutiveFailures).toBe(1);
    } finally {
      await redis.quit();
    }
  });
});
