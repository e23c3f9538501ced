import fc from 'fast-check';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../src/breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../src/breaker/memory-store.js';
import type { BreakerListing, BreakerStore } from '../src/breaker/types.js';
import { MemoryBudgetStore } from '../src/budget/memory-store.js';
import { RetryBudget } from '../src/budget/retry-budget.js';
import type { BudgetStore } from '../src/budget/store.js';
import { dependencyNameProblem, jobDependencyName } from '../src/common/names.js';
import { PostgresBreakerStore } from '../src/postgres/breaker-store.js';
import { PostgresBudgetStore } from '../src/postgres/budget-store.js';
import { PostgresFlowStore } from '../src/postgres/flow-store.js';
import { RedisBreakerStore } from '../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../src/redis/budget-store.js';
import { RedisFlowStore } from '../src/redis/flow-store.js';
import { MemoryFlowStore } from '../src/runtime/flow-control/memory-store.js';
import { resolveFlowControlOptions } from '../src/runtime/flow-control/options.js';
import type { FlowStore } from '../src/runtime/flow-control/store.js';
import { postgresBed } from './helpers/postgres-bed.js';
import { uniqueSchema } from './helpers/postgres-server.js';
import { TestRedis } from './helpers/redis-server.js';

// One name rule (src/common/names.ts) for every part and store: a name the budget accepts, the breaker,
// flow control and each store accept too, and one the rule refuses, every part refuses up front (never
// half-way through a decision). A job name is mapped (`jobDependencyName`) into a name they all accept.

// Text built from what tends to break a name somewhere: key separators and braces, escapes, whitespace
// alone, U+0000 and other control characters, lone surrogates, astral characters, and names near 200.
const unit = fc.constantFrom(
  ' ',
  ':',
  '{',
  '}',
  '%',
  '%3A',
  '~',
  '\n',
  '\t',
  '\u0000',
  '\u007F',
  '\uFEFF',
  '\uD800',
  '\uDFFF',
  '😀',
  'é',
  'a',
  '0',
);
const names = fc.oneof(
  fc.string({ unit, maxLength: 10 }),
  fc.string({ unit: 'binary', maxLength: 10 }),
  fc
    .tuple(fc.integer({ min: 195, max: 205 }), fc.string({ unit, maxLength: 3 }))
    .map(([n, tail]) => 'x'.repeat(n - tail.length) + tail),
  fc.constantFrom('', ' ', '  ', 'search', `a~${'0'.repeat(32)}`),
);

interface Backend {
  budget: BudgetStore;
  breaker: BreakerStore & BreakerListing;
  flow: FlowStore;
}

/** What each part says of `dependency`: 'ok', or the message it refused it with. */
async function verdicts(backend: Backend, dependency: string): Promise<Record<string, string>> {
  const budget = new RetryBudget({ store: backend.budget, minAllowance: 1 });
  const breaker = new CircuitBreaker({ store: backend.breaker, stateCacheMs: 0 });
  const attempt = async (work: () => unknown): Promise<string> => {
    try {
      await work();
      return 'ok';
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  };
  try {
    return {
      budget: await attempt(async () => {
        await budget.trySpend(dependency);
        await budget.state(dependency);
      }),
      breaker: await attempt(async () => {
        const admission = await breaker.acquire(dependency);
        await breaker.recordFailure(dependency, admission);
        await breaker.state(dependency);
      }),
      'flow control': await attempt(() =>
        resolveFlowControlOptions({
          store: backend.flow,
          queueDependency: dependency,
          maxRatePerSecond: { [dependency]: 5 },
        }),
      ),
    };
  } finally {
    await budget.close();
    await breaker.close();
  }
}

let jobs = 0;

/** Uses `dependency` in the flow store as flow control does: how many more jobs it holds parked after. */
async function useFlowStore(flow: FlowStore, dependency: string): Promise<number> {
  await flow.markDown(dependency);
  await flow.read(dependency);
  const before = await flow.parked(dependency, 'names');
  await flow.park(dependency, 'names', `job-${jobs++}`, 60_000);
  return (await flow.parked(dependency, 'names')) - before;
}

function describeBackend(label: string, open: () => Promise<Backend>, numRuns: number) {
  describe(`names on ${label}`, () => {
    it('no name is accepted by one part and refused by the next', async () => {
      const backend = await open();
      await fc.assert(
        fc.asyncProperty(names, async (name) => {
          const accepted = dependencyNameProblem(name) === undefined;
          const said = await verdicts(backend, name);
          const expected = accepted ? 'ok' : expect.stringContaining(dependencyNameProblem(name) ?? '');
          expect(said).toEqual({ budget: expected, breaker: expected, 'flow control': expected });
          if (accepted) expect(await useFlowStore(backend.flow, name)).toBe(1);
        }),
        { numRuns },
      );
    });

    it('every job name maps to a dependency that every part and store accepts and lists as it is', async () => {
      const backend = await open();
      const seen = new Set<string>();
      await fc.assert(
        fc.asyncProperty(names, async (name) => {
          const dependency = jobDependencyName(name);
          expect(dependencyNameProblem(dependency)).toBeUndefined();
          expect(await verdicts(backend, dependency)).toEqual({
            budget: 'ok',
            breaker: 'ok',
            'flow control': 'ok',
          });
          expect(await useFlowStore(backend.flow, dependency)).toBe(1);
          seen.add(dependency);
        }),
        { numRuns },
      );
      // What the stores list is exactly what was written: no name was altered on its way in or out.
      expect(new Set(await backend.budget.dependencies())).toEqual(seen);
      expect(new Set((await backend.breaker.list()).map((b) => b.dependency))).toEqual(seen);
    });
  });
}

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

describeBackend(
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

describeBackend(
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

describeBackend(
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
