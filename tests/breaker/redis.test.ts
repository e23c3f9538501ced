import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { breakerStoreAgreesWithMachine } from '../../src/breaker/machine-agreement.case.js';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { breakerStoreCases } from '../../src/breaker/store.case.js';
import { FakeClock } from '../../src/common/clock.js';
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
      expect(store.keyOf('search')).toBe('{specifics:d:search}:breaker');
      expect((await redis.keys('{specifics:*')).sort()).toEqual([
        '{specifics:d:search}:breaker',
        '{specifics:g}:breaker-dependencies',
      ]);
      const ttl = await redis.pttl('{specifics:d:search}:breaker');
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(2 * (1_000 + 500));
      // Time came from Redis TIME: the same machine, so within a generous bound of the local clock.
      expect(Math.abs(snapshot.nowMs - before)).toBeLessThan(60_000);
    } finally {
      await redis.quit();
    }
  });

  it('renews the expiry once a quarter of it has passed, not on every write; a held breaker never expires', async () => {
    const redis = new Redis(server.connection);
    const pexpires = async () =>
      Number(/cmdstat_pexpire:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
    try {
      const store = new RedisBreakerStore({ redis, prefix: 'expiry' });
      // A long window, so the whole test runs within the first quarter of the expiry.
      const options = resolveBreakerOptions({
        windowMs: 60_000,
        coolDownMs: 30_000,
        consecutiveFailures: 100,
      });
      const key = store.keyOf('search');
      await store.record('search', 'failure', options);
      const first = await redis.pttl(key);
      expect(first).toBeGreaterThan(0);
      expect(first).toBeLessThanOrEqual(180_000);
      const before = await pexpires();
      for (let i = 0; i < 5; i++) await store.record('search', i % 2 ? 'failure' : 'success', options);
      expect(await pexpires()).toBe(before);
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(first);
      expect((await store.read('search', options)).volume).toBe(6);

      // A hold keeps the hash without expiry, through the writes made while it holds.
      await store.override('search', 'force-closed', { reason: 'maintenance', by: 'test' }, options);
      expect(await redis.pttl(key)).toBe(-1);
      await store.record('search', 'failure', options);
      expect(await redis.pttl(key)).toBe(-1);
      await store.override('search', 'reset', { reason: 'done', by: 'test' }, options);
      await store.record('search', 'failure', options);
      expect(await redis.pttl(key)).toBeGreaterThan(0);
    } finally {
      await redis.quit();
    }
  });

  it('renews the expiry with the write that comes once a quarter of it has passed', async () => {
    const redis = new Redis(server.connection);
    const pexpires = async () =>
      Number(/cmdstat_pexpire:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
    try {
      const clock = new FakeClock(1_700_000_000_000);
      const store = new RedisBreakerStore({ redis, prefix: 'renewal', timeOverride: clock });
      // An expiry of 2 x (windowMs + coolDownMs) = 180 s; a quarter of it is 45 s.
      const options = resolveBreakerOptions({
        windowMs: 60_000,
        coolDownMs: 30_000,
        consecutiveFailures: 100,
      });
      const key = store.keyOf('search');
      await store.record('search', 'failure', options);
      const before = await pexpires();
      clock.advance(44_000);
      await store.record('search', 'failure', options);
      expect(await pexpires(), 'within the first quarter').toBe(before);
      clock.advance(2_000);
      await store.record('search', 'failure', options);
      expect(await pexpires(), 'past the first quarter').toBe(before + 1);
      // Renewed for the whole expiry from that write: more than the 134 s the first one had left.
      expect(await redis.pttl(key)).toBeGreaterThan(170_000);
    } finally {
      await redis.quit();
    }
  });

  it('rejects an empty or over-long prefix, and bad settings', () => {
    const redis = new Redis({ ...server.connection, lazyConnect: true });
    expect(() => new RedisBreakerStore({ redis, prefix: '' })).toThrow(/prefix "": must not be empty/);
    expect(() => new RedisBreakerStore({ redis, prefix: 'x'.repeat(65) })).toThrow(/at most 64 characters/);
    expect(() => new RedisBreakerStore({ redis, timeoutMs: 0 })).toThrow(
      'invalid Redis breaker store options: timeoutMs: 0 is invalid: must be a whole number >= 1',
    );
    expect(() => new RedisBreakerStore({ redis, whenUnavailable: 'open' as never })).toThrow(
      "whenUnavailable: \"open\" is invalid: must be 'local', 'allow' or 'reject'",
    );
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

  it('keeps shop + eu:search apart from shop:eu + search, and lists names with any characters', async () => {
    const redis = new Redis(server.connection);
    try {
      const options = resolveBreakerOptions({ consecutiveFailures: 1 });
      const shop = new RedisBreakerStore({ redis, prefix: 'iso' });
      const shopEu = new RedisBreakerStore({ redis, prefix: 'iso:eu' });
      await shop.record('eu:search', 'failure', options);
      expect((await shopEu.read('search', options)).state).toBe('closed');
      // The pair that shared a key in the first layout, {<prefix>:breaker:<dependency>}:state.
      await shop.record('x:breaker:y', 'failure', options);
      const other = new RedisBreakerStore({ redis, prefix: 'iso:breaker:x' });
      expect((await other.read('y', options)).state).toBe('closed');
      await shop.record('send email {v2}\n', 'success', options);
      expect((await shop.list()).map((b) => [b.dependency, b.state])).toEqual([
        ['eu:search', 'open'],
        ['send email {v2}\n', 'closed'],
        ['x:breaker:y', 'open'],
      ]);
      expect(await shopEu.list()).toEqual([]);
    } finally {
      await redis.quit();
    }
  });

  it('lists the dependencies of a client with an ioredis keyPrefix, and only its own', async () => {
    const prefixed = new Redis({ ...server.connection, keyPrefix: 'tenant[a]:' });
    const other = new Redis({ ...server.connection, keyPrefix: 'tenant-b:' });
    try {
      const options = resolveBreakerOptions({});
      await new RedisBreakerStore({ redis: prefixed, prefix: 'list.p' }).record('search', 'success', options);
      await new RedisBreakerStore({ redis: other, prefix: 'list.p' }).record('crm', 'success', options);
      const listed = await new RedisBreakerStore({ redis: prefixed, prefix: 'list.p' }).list();
      expect(listed.map((b) => [b.dependency, b.state, b.volume])).toEqual([['search', 'closed', 1]]);
    } finally {
      prefixed.disconnect();
      other.disconnect();
    }
  });

  it('the Lua script and the TypeScript machine agree on any sequence of operations', async () => {
    const redis = new Redis(server.connection);
    try {
      await breakerStoreAgreesWithMachine(
        (clock, run) => ({
          store: new RedisBreakerStore({ redis, prefix: `agree-${run}`, timeOverride: clock }),
          dependency: 'd',
        }),
        () => new FakeClock(1_700_000_000_000),
        50,
      );
    } finally {
      await redis.quit();
    }
  });
});
