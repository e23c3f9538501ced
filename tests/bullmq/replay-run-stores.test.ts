import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { PostgresReplayRunStore } from '../../src/postgres/replay-run-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import { describeReplayRunStore } from '../../src/runtime/replay-run-store.case.js';
import { MemoryReplayRunStore } from '../../src/runtime/replay-runs.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { TestRedis } from '../helpers/redis-server.js';

let server: TestRedis;
let prefixes = 0;
const bed = postgresBed();

beforeAll(async () => {
  server = await TestRedis.start();
});
afterAll(async () => {
  await server?.close();
});

describeReplayRunStore('MemoryReplayRunStore', async (count) => {
  // One process's memory: every "process" is the same store.
  const store = new MemoryReplayRunStore();
  return { stores: Array.from({ length: count }, () => store), close: async () => {} };
});

describeReplayRunStore('RedisReplayRunStore', async (count) => {
  const prefix = `runs-${process.pid}-${prefixes++}`;
  const clients = Array.from({ length: count }, () => new Redis(server.connection));
  return {
    stores: clients.map((redis) => new RedisReplayRunStore({ redis, prefix })),
    close: async () => {
      for (const c of clients) c.disconnect();
    },
  };
});

describeReplayRunStore('PostgresReplayRunStore', async (count) => {
  const schema = uniqueSchema();
  const pools = Array.from({ length: count }, () => new pg.Pool({ connectionString: bed.url, max: 2 }));
  const stores = pools.map((connection) => new PostgresReplayRunStore({ connection, schema }));
  // Migrated first, so concurrent cases meet at the rows, not at the migration's lock.
  await stores[0]!.listRuns();
  return {
    stores,
    close: async () => {
      await Promise.all(pools.map((p) => p.end()));
    },
  };
});
