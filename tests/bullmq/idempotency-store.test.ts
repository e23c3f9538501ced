import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { idempotencyStoreCases } from '../../src/idempotency/store.case.js';
import { RedisIdempotencyStore } from '../../src/redis/idempotency-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let server: TestRedis;
beforeAll(async () => {
  server = await TestRedis.start();
});
afterAll(async () => {
  await server.close();
});

idempotencyStoreCases('RedisIdempotencyStore', async () => {
  const redis = new Redis(server.connection);
  const store = new RedisIdempotencyStore(redis, { prefix: 'contract' });
  return {
    store,
    // Redis expires keys on its own clock: wait until the key is gone rather than for a fixed time.
    elapse: (key, ms) =>
      waitFor(async () => (await redis.exists(store.keyOf(key))) === 0, ms + 2_000, `${key} to expire`),
    close: async () => {
      redis.disconnect();
    },
  };
});
