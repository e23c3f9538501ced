import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { run } from '../../src/cli/program.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { PostgresFlowStore } from '../../src/postgres/flow-store.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import type { LimitStore } from '../../src/runtime/limits/store.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { TestRedis } from '../helpers/redis-server.js';

// `budget status`, `breaker status` and `limits status` are documented as read-only: a status call leaves every key (and
// every row) as it found it, values and expiry included, and registers nothing.

let server: TestRedis;
let redis: Redis;
const bed = postgresBed();
let pool: pg.Pool;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
  await pool?.end();
});

async function stormguard(...args: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/** Fills a budget and a breaker the way workers do: a grant, successes, failures that open the breaker. */
async function seed(
  budgetStore: RedisBudgetStore | PostgresBudgetStore,
  breakerStore: RedisBreakerStore | PostgresBreakerStore,
) {
  const budget = new RetryBudget({ store: budgetStore });
  const breaker = new CircuitBreaker({ store: breakerStore, consecutiveFailures: 2, stateCacheMs: 0 });
  budget.recordSuccess('search', 5);
  await budget.trySpend('search');
  await budget.trySpend('mail');
  for (let i = 0; i < 2; i++) await breaker.recordFailure('crm', await breaker.acquire('crm'));
  await breaker.recordSuccess('search', await breaker.acquire('search'));
  await budget.close();
  await breaker.close();
}

/** Fills the limits part of a flow store as a worker and an operator do: a slot taken, a hold, a pause. */
async function seedLimits(store: LimitStore) {
  await store.exchangeLimits('search', {
    holder: 'host-a:1',
    declared: { maxInFlight: 5 },
    leaseMs: 600_000,
    give: [],
    renew: [],
    take: [{ lease: 'host-a:1:1', cost: 1 }],
    probes: 1,
    ramp: { slowStartMs: 30_000, floorPerSecond: 1 },
  });
  await store.holdLimits('search', 600_000, 'retry-after');
  await store.overrideLimits('mail', { paused: true, reason: 'incident', by: 'alice', expiresInMs: 600_000 });
}

/** Every key with its type, value and whether it expires (the remaining time itself moves on). */
async function redisSnapshot(): Promise<Record<string, string>> {
  const snapshot: Record<string, string> = {};
  for (const key of (await redis.keys('*')).sort()) {
    const [type, ttl, dump] = await Promise.all([redis.type(key), redis.pttl(key), redis.dumpBuffer(key)]);
    snapshot[key] = `${type} ${ttl === -1 ? 'no expiry' : 'expires'} ${dump?.toString('base64')}`;
  }
  return snapshot;
}

describe('status commands on Redis write nothing', () => {
  it.each([
    ['budget', 'status'],
    ['breaker', 'status'],
    ['budget', 'watch', '--count', '1'],
  ])('%s %s leaves every key as it was', async (...command) => {
    await redis.flushall();
    const prefix = 'readonly';
    await seed(new RedisBudgetStore({ redis, prefix }), new RedisBreakerStore({ redis, prefix }));
    const before = await redisSnapshot();
    expect(Object.keys(before).length).toBeGreaterThan(0);
    const result = await stormguard(...command, '--redis', server.url, '--prefix', prefix, '--json');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('search');
    expect(await redisSnapshot()).toEqual(before);
  });

  it('limits status leaves every key as it was', async () => {
    await redis.flushall();
    const prefix = 'readonly';
    await seedLimits(new RedisFlowStore({ redis, prefix }));
    const before = await redisSnapshot();
    const result = await stormguard('limits', 'status', '--redis', server.url, '--prefix', prefix, '--json');
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(result.stdout).toContain('search');
    expect(await redisSnapshot()).toEqual(before);
  });

  it('on an empty server, a status call creates no key', async () => {
    await redis.flushall();
    for (const command of [
      ['budget', 'status'],
      ['breaker', 'status'],
      ['limits', 'status'],
    ]) {
      const result = await stormguard(...command, '--redis', server.url, '--json');
      expect(result.code).toBe(0);
    }
    expect(await redis.keys('*')).toEqual([]);
  });
});

describe('status commands on PostgreSQL write nothing', () => {
  async function rows(schema: string): Promise<string> {
    const tables = await pool.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
      [schema],
    );
    const out: string[] = [];
    for (const { table_name } of tables.rows) {
      const content = await pool.query(`SELECT * FROM "${schema}"."${table_name}"`);
      out.push(`${table_name}: ${JSON.stringify(content.rows.map((r) => JSON.stringify(r)).sort())}`);
    }
    return out.join('\n');
  }

  it.each([
    ['budget', 'status'],
    ['breaker', 'status'],
  ])('%s %s leaves every row as it was', async (...command) => {
    const schema = uniqueSchema();
    await seed(
      new PostgresBudgetStore({ connection: pool, schema }),
      new PostgresBreakerStore({ connection: pool, schema, timeoutMs: 10_000 }),
    );
    const before = await rows(schema);
    expect(before).toContain('search');
    const result = await stormguard(...command, '--postgres', bed.url, '--schema', schema, '--json');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('search');
    expect(await rows(schema)).toBe(before);
  });

  it('limits status leaves every row as it was', async () => {
    const schema = uniqueSchema();
    await seedLimits(new PostgresFlowStore({ connection: pool, schema }));
    const before = await rows(schema);
    expect(before).toContain('search');
    const result = await stormguard('limits', 'status', '--postgres', bed.url, '--schema', schema, '--json');
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(JSON.parse(result.stdout).dependencies.map((d: { dependency: string }) => d.dependency)).toEqual([
      'mail',
      'search',
    ]);
    expect(await rows(schema)).toBe(before);
  });
});
