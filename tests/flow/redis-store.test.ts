import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { flowStoreCases } from '../../src/runtime/flow-control/store.case.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let server: TestRedis;
let run = 0;

beforeAll(async () => {
  server = await TestRedis.start();
});
afterAll(async () => {
  await server.close();
});

flowStoreCases('RedisFlowStore', async (clock, connections) => {
  const prefix = `flow-${++run}`;
  const clients = Array.from({ length: connections }, () => new Redis(server.connection));
  return {
    stores: clients.map((redis) => new RedisFlowStore({ redis, prefix, clock })),
    close: async () => {
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
});

describe('RedisFlowStore specifics', () => {
  it("keeps a dependency's flow keys in its hash slot, expiring on their own, on the server clock", async () => {
    const redis = new Redis(server.connection);
    try {
      const store = new RedisFlowStore({ redis, prefix: 'specifics', stateTtlMs: 60_000 });
      await store.markDown('eu:search');
      await store.park('eu:search', 'index', 'j1', 30_000);
      expect((await redis.keys('{specifics:*')).sort()).toEqual([
        '{specifics:d:eu%3Asearch}:flow',
        '{specifics:d:eu%3Asearch}:park:index',
      ]);
      expect(await redis.pttl('{specifics:d:eu%3Asearch}:flow')).toBeGreaterThan(0);
      expect(await redis.pttl('{specifics:d:eu%3Asearch}:park:index')).toBeLessThanOrEqual(30_000);
      const before = Date.now();
      const { nowMs, recoveredAtMs } = await store.markUp('eu:search');
      expect(recoveredAtMs).toBe(nowMs);
      expect(Math.abs(nowMs - before)).toBeLessThan(60_000);
    } finally {
      await redis.quit();
    }
  });

  it("keeps a dependency's limits in three keys of its hash slot, and each exchange is one round trip", async () => {
    const redis = new Redis(server.connection);
    try {
      const store = new RedisFlowStore({ redis, prefix: 'limits', stateTtlMs: 60_000 });
      const request = {
        holder: 'h1',
        declared: { maxInFlight: 100 },
        leaseMs: 30_000,
        give: [],
        renew: [],
        take: [{ lease: 'l0', cost: 2 }],
        probes: 1,
        ramp: { slowStartMs: 10_000, floorPerSecond: 1 },
      };
      expect((await store.exchangeLimits('eu:search', request)).granted).toBe(1);
      await store.limitState('never-seen');
      expect((await redis.keys('{limits:*')).sort()).toEqual([
        '{limits:d:eu%3Asearch}:limit-costs',
        '{limits:d:eu%3Asearch}:limit-leases',
        '{limits:d:eu%3Asearch}:limits',
        '{limits:g}:limits-dependencies',
      ]);
      for (const suffix of ['limit-costs', 'limit-leases', 'limits']) {
        const ttl = await redis.pttl(`{limits:d:eu%3Asearch}:${suffix}`);
        expect(ttl).toBeGreaterThan(30_000);
        expect(ttl).toBeLessThanOrEqual(60_000);
      }
      // An override that never expires keeps the keys; removing it lets them expire again.
      await store.overrideLimits('eu:search', { maxInFlight: 5, reason: 'r', by: 'ops' });
      expect(await redis.pttl('{limits:d:eu%3Asearch}:limits')).toBe(-1);
      await store.overrideLimits('eu:search', undefined);
      expect(await redis.pttl('{limits:d:eu%3Asearch}:limits')).toBeGreaterThan(0);

      // Every command the server receives from a client (MONITOR; commands a script runs show as "lua").
      const monitor = await redis.monitor();
      const seen: string[] = [];
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (source !== 'lua') seen.push(String(args[0]).toLowerCase());
      });
      try {
        for (let i = 1; i <= 20; i++)
          await store.exchangeLimits('eu:search', {
            ...request,
            give: [{ lease: `l${i - 1}`, ok: true }],
            renew: ['l0'],
            take: [{ lease: `l${i}`, cost: 1 }],
          });
        await store.limitState('eu:search');
        await waitFor(async () => seen.length >= 21, 5_000, 'the monitor to see every command');
      } finally {
        monitor.disconnect();
      }
      // 20 exchanges and a read: one script call each, and nothing else.
      expect(seen).toEqual([...Array(21).fill('evalsha')]);
    } finally {
      await redis.quit();
    }
  });
});
