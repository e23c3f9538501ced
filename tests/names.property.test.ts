import fc from 'fast-check';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBreakerStore } from '../src/breaker/memory-store.js';
import { MemoryBudgetStore } from '../src/budget/memory-store.js';
import { dependencyNameProblem, jobDependencyName } from '../src/common/names.js';
import { PostgresBreakerStore } from '../src/postgres/breaker-store.js';
import { PostgresBudgetStore } from '../src/postgres/budget-store.js';
import { PostgresFlowStore } from '../src/postgres/flow-store.js';
import { RedisBreakerStore } from '../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../src/redis/budget-store.js';
import { RedisFlowStore } from '../src/redis/flow-store.js';
import { MemoryFlowStore } from '../src/runtime/flow-control/memory-store.js';
import { describeNameAgreement, names } from './helpers/name-agreement.js';
import { postgresBed } from './helpers/postgres-bed.js';
import { uniqueSchema } from './helpers/postgres-server.js';
import { TestRedis } from './helpers/redis-server.js';

// No name is accepted by one part (budget, breaker, flow control) and refused by the next, on every
// store; and every job name maps to a dependency they all accept (tests/helpers/name-agreement.ts).

describe('jobDependencyName', () => {
  it('keeps a valid name, and maps any other one losslessly: two names never share a dependency', () => {
    fc.assert(
      fc.property(names, names, (a, b) => {
        const [da, db] = [jobDependencyName(a), jobDependencyName(b)];
        expect(dependencyNameProblem(da)).toBeUndefined();
        expect(da.length).toBeLessThanOrEqual(200);
        if (a !== b) expect(da).not.toBe(db);
        if (dependencyNameProblem(a) === undefined && !/~[0-9a-f]{32}$/.test(a)) expect(da).toBe(a);
      }),
      { numRuns: 2_000 },
    );
  });

  it('maps a long name to its first 167 characters and a hash, and an empty one to unnamed and a hash', () => {
    const long = 'y'.repeat(150) + 'z'.repeat(100);
    expect(jobDependencyName(long)).toMatch(/^y{150}z{17}~[0-9a-f]{32}$/);
    expect(jobDependencyName(`${long}!`)).not.toBe(jobDependencyName(long));
    expect(jobDependencyName('')).toMatch(/^unnamed~[0-9a-f]{32}$/);
    expect(jobDependencyName('unnamed')).toBe('unnamed');
    expect(jobDependencyName(' ')).toBe(' ');
    // Lone surrogates count: U+D800 and U+FFFD show alike but map apart.
    expect(jobDependencyName('a\uD800')).not.toBe(jobDependencyName('a\uFFFD'));
  });
});

describeNameAgreement(
  'memory',
  async () => ({
    budget: new MemoryBudgetStore(),
    breaker: new MemoryBreakerStore(),
    flow: new MemoryFlowStore(),
  }),
  200,
);

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

describeNameAgreement(
  'Redis',
  async () => {
    const prefix = `names-${prefixes++}`;
    return {
      budget: new RedisBudgetStore({ redis, prefix }),
      breaker: new RedisBreakerStore({ redis, prefix }),
      flow: new RedisFlowStore({ redis, prefix }),
    };
  },
  100,
);

describeNameAgreement(
  'PostgreSQL',
  async () => {
    const schema = uniqueSchema();
    return {
      budget: new PostgresBudgetStore({ connection: pool, schema }),
      breaker: new PostgresBreakerStore({ connection: pool, schema, timeoutMs: 10_000 }),
      flow: new PostgresFlowStore({ connection: pool, schema }),
    };
  },
  60,
);
