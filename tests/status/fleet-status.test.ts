import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBreakerStore } from '../../src/breaker/memory-store.js';
import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { PostgresFlowStore } from '../../src/postgres/flow-store.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { MemoryFlowStore } from '../../src/runtime/flow-control/memory-store.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { describeFleetStatus } from '../../src/status/fleet-status.case.js';
import { flowStatusOf } from '../../src/status/flow.js';
import { readFleetStatus } from '../../src/status/read-fleet-status.js';
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
  flow: new MemoryFlowStore({ clock }),
  close: async () => {},
}));

describeFleetStatus('Redis', async (clock) => {
  const prefix = `status-${process.pid}-${prefixes++}`;
  return {
    budget: new RedisBudgetStore({ redis, prefix, clock }),
    breaker: new RedisBreakerStore({ redis, prefix, timeOverride: clock }),
    deadLetters: new RedisDeadLetterStore({ redis, prefix, clock }),
    flow: new RedisFlowStore({ redis, prefix, clock }),
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
    flow: new PostgresFlowStore({ connection: pool, schema, clock }),
    close: async () => {},
  };
});

describe('fleet status with flow control', () => {
  // Each flow store, opened fresh for one test (the Redis one under a prefix of its own).
  const FLOW_STORES = [
    ['MemoryFlowStore', () => new MemoryFlowStore()],
    [
      'RedisFlowStore',
      () => new RedisFlowStore({ redis, prefix: `status-flow-${process.pid}-${prefixes++}` }),
    ],
    ['PostgresFlowStore', () => new PostgresFlowStore({ connection: pool, schema: uniqueSchema() })],
  ] as const;

  for (const [name, openFlow] of FLOW_STORES)
    it(`counts the jobs parked in a ${name} per dependency and queue, and lists them as needing attention`, async () => {
      const flow = openFlow();
      const deadLetters = new MemoryDeadLetterStore();
      await deadLetters.registerQueue('mixed');
      await deadLetters.registerQueue('index');
      await flow.park('search', 'mixed', 'job-1', 60_000);
      await flow.park('search', 'mixed', 'job-2', 60_000);
      await flow.park('search', 'index', 'job-3', 60_000);
      await flow.park('mail', 'other', 'job-4', 60_000); // a queue the status does not read
      const status = await readFleetStatus(
        { deadLetters, flow: flowStatusOf(flow) },
        { dependencies: ['mail', 'search'] },
      );
      expect(status.parkedJobs).toEqual([
        { queue: 'index', dependency: 'search', count: 1 },
        { queue: 'mixed', dependency: 'search', count: 2 },
      ]);
      expect(status.dependencies.map((d) => [d.dependency, d.parkedJobs, d.attention])).toEqual([
        ['mail', 0, []],
        ['search', 3, ['jobs-parked']],
      ]);
      expect(status.needsAttention).toEqual(['search']);
      expect(status.pausedWorkers).toEqual([]);
    });

  for (const [name, openFlow] of FLOW_STORES)
    it(`lists the workers paused in a ${name} per dependency, whatever their queue, as needing attention`, async () => {
      const flow = openFlow();
      const deadLetters = new MemoryDeadLetterStore();
      await deadLetters.registerQueue('mixed');
      await flow.notePaused('search', 'index', 'host-a:1:1', 30_000, 15_000);
      await flow.notePaused('search', 'crawl', 'host-b:2:1', 30_000, 15_000);
      await flow.notePaused('mail', 'send', 'host-a:1:2', 30_000, 15_000);
      await flow.clearPaused('mail', 'send', 'host-a:1:2');
      const status = await readFleetStatus(
        { deadLetters, flow: flowStatusOf(flow) },
        { dependencies: ['mail', 'search'] },
      );
      expect(status.pausedWorkers?.map((p) => [p.dependency, p.queue, p.worker])).toEqual([
        ['search', 'crawl', 'host-b:2:1'],
        ['search', 'index', 'host-a:1:1'],
      ]);
      const [first] = status.pausedWorkers ?? [];
      expect((first?.untilMs ?? 0) - (first?.sinceMs ?? 0)).toBe(30_000);
      expect(status.dependencies.map((d) => [d.dependency, d.pausedWorkers, d.attention])).toEqual([
        ['mail', 0, []],
        ['search', 2, ['workers-paused']],
      ]);
      expect(status.needsAttention).toEqual(['search']);
    });
});

describe('fleet status with failing sources', () => {
  it('reports budget errors before breaker errors, whichever fails first, and rethrows the budget one', async () => {
    // The breaker fails first; the budget only once the breaker has.
    const make = () => {
      let breakerFailed!: () => void;
      const failed = new Promise<void>((resolve) => {
        breakerFailed = resolve;
      });
      const memory = new MemoryBudgetStore();
      const budget = {
        read: (dependency: string) => memory.read(dependency),
        dependencies: async (): Promise<string[]> => {
          await failed;
          throw new Error('budget store down');
        },
      };
      const breaker = new MemoryBreakerStore();
      breaker.list = async () => {
        breakerFailed();
        throw new Error('breaker store down');
      };
      return { budget, breaker };
    };
    const status = await readFleetStatus(make());
    expect(status.errors).toEqual([
      { source: 'budget', message: 'budget store down' },
      { source: 'breaker', message: 'breaker store down' },
    ]);
    await expect(readFleetStatus(make(), { throwOnError: true })).rejects.toThrow('budget store down');
  });
});
