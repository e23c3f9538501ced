import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { MemoryBreakerStore } from '../../src/breaker/memory-store.js';
import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { describeFleetStatus } from '../../src/status/fleet-status.case.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { TestRedis } from '../helpers/redis-server.js';

let server: TestRedis;
let redis: Redis;
let prefixes = 0;
const bed = postgresBed();
let pool: pg.Pool;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
  await pool?.end();
});

describeFleetStatus('memory', async (clock) => ({
  budget: new MemoryBudgetStore({ clock }),
  breaker: new MemoryBreakerStore({ clock }),
  deadLetters: new MemoryDeadLetterStore({ clock }),
  close: async () => {},
}));

describeFleetStatus('Redis', async (clock) => {
  const prefix = `status-${process.pid}-${prefixes++}`;
  return {
    budget: new RedisBudgetStore({ redis, prefix, clock }),
    breaker: new RedisBreakerStore({ redis, prefix, timeOverride: clock }),
    deadLetters: new RedisDeadLetterStore({ redis, prefix, clock }),
    close: async () => {},
  };
});

describeFleetStatus('PostgreSQL', async (clock) => {
  const schema = uniqueSchema();
  const budget = new PostgresBudgetStore({ connection: pool, schema, clock });
  const breaker = new PostgresBreakerStore({
    connection: pool,
    schema,
    timeOverride: clock,
    timeoutMs: 10_000,
  });
  const deadLetters = new PostgresDeadLetterStore({ connection: pool, schema, timeOverride: clock });
  return {
    budget,
    breaker,
    deadLetters,
    close: async () => {},
  };
});
