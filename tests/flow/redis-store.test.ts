import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { flowStoreCases } from '../../src/runtime/flow-control/store.case.js';
import { TestRedis } from '../helpers/redis-server.js';

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
});
