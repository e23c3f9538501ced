import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { budgetWindow } from '../../src/budget/window.js';
import { FakeClock } from '../../src/common/clock.js';
import { isCorruptBudgetStateError } from '../../src/errors/corrupt-budget-state-error.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { migrate } from '../../src/postgres/migrations.js';
import { postgresBed, postgresRunDir } from '../helpers/postgres-bed.js';
import { TestPostgres, uniqueSchema } from '../helpers/postgres-server.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  await pool.end();
});

// Three configurations workers could roll between: other geometry, ratio, floor and version.
const WINDOWS = [
  budgetWindow({ ratio: 0.2, windowMs: 1_000, buckets: 10, minAllowance: 3 }),
  budgetWindow({ ratio: 0.5, windowMs: 600, buckets: 4, minAllowance: 1, version: 1 }),
  budgetWindow({ ratio: 0.1, windowMs: 2_000, buckets: 20, minAllowance: 5, version: 2 }),
];

describe('PostgresBudgetStore specifics', () => {
  it('the plpgsql function and the TypeScript store agree on any sequence of calls', async () => {
    const step = fc.record({
      op: fc.constantFrom('spend', 'spend', 'add', 'read'),
      window: fc.integer({ min: 0, max: 2 }),
      count: fc.integer({ min: 0, max: 4 }),
      successes: fc.array(
        fc.record({ ageMs: fc.integer({ min: 0, max: 3_000 }), count: fc.integer({ min: 1, max: 40 }) }),
        {
          maxLength: 3,
        },
      ),
      advanceMs: fc.oneof(
        { arbitrary: fc.constant(0), weight: 2 },
        { arbitrary: fc.integer({ min: 1, max: 700 }), weight: 3 },
      ),
    });
    const schema = uniqueSchema();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 20, maxLength: 60 }), async (steps) => {
        const clock = new FakeClock(1_700_000_000_000);
        const memory = new MemoryBudgetStore({ clock });
        const sql = new PostgresBudgetStore({ connection: pool, schema, clock });
        const dep = `d${++run}`;
        for (const { op, window, count, successes, advanceMs } of steps) {
          clock.advance(advanceMs);
          const w = WINDOWS[window]!;
          if (op === 'read') expect(await sql.read(dep)).toEqual(memory.read(dep));
          else if (op === 'add')
            expect(await sql.addSuccesses(dep, successes, w)).toEqual(memory.addSuccesses(dep, successes, w));
          else
            expect(await sql.trySpend(dep, w, successes, count)).toEqual(
              memory.trySpend(dep, w, successes, count),
            );
        }
      }),
      { numRuns: 30, seed: 20261202 },
    );
  });

  it('a row that cannot be read affects its own dependency only: a read rejects, a write replaces it', async () => {
    const schema = uniqueSchema();
    // Migrated first, as at deploy time: a RetryBudget bounds each store call by timeoutMs (250 ms), and
    // on a loaded machine the first call, which would migrate the schema, outlasts it. The budget then
    // degrades, the flush writes nothing, and the SQL below ran before the migration had committed:
    // "relation … does not exist" in the full run, never alone.
    await migrate(pool, schema);
    const store = new PostgresBudgetStore({ connection: pool, schema });
    const budget = new RetryBudget({ store, log: false });
    budget.recordSuccess('search', 100);
    budget.recordSuccess('mail', 100);
    await budget.flush();
    await pool.query(`UPDATE ${schema}.budgets SET g_idx = '{1}' WHERE dependency = 'search'`);
    const error = await store.read('search').catch((e: unknown) => e);
    expect(isCorruptBudgetStateError(error)).toBe(true);
    expect(String(error)).toContain('malformed settings or counts');
    expect(await store.read('mail')).toMatchObject({ successes: 100 });
    const window = budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 });
    expect(await store.trySpend('search', window, [], 1)).toMatchObject({
      granted: 1,
      successes: 0,
      reset: 'malformed settings or counts',
    });
    expect(await store.read('search')).toMatchObject({ spent: 1, successes: 0 });
    await budget.close();
  });

  it('counts on the server clock, lists its prefix only, and keeps rows two windows', async () => {
    const schema = uniqueSchema();
    const store = new PostgresBudgetStore({ connection: pool, schema, prefix: 'shop' });
    const window = budgetWindow({ ratio: 0.2, windowMs: 2_000, buckets: 10, minAllowance: 10 });
    await store.addSuccesses('search', [{ ageMs: 0, count: 5 }], window);
    await new PostgresBudgetStore({ connection: pool, schema, prefix: 'other' }).addSuccesses(
      'crm',
      [{ ageMs: 0, count: 1 }],
      window,
    );
    expect(await store.dependencies()).toEqual(['search']);
    const { rows } = await pool.query<{ ttl: string }>(
      `SELECT expires_at_ms - ${schema}.now_ms(NULL) AS ttl FROM ${schema}.budgets WHERE prefix = 'shop'`,
    );
    expect(Number(rows[0]?.ttl)).toBeGreaterThan(0);
    expect(Number(rows[0]?.ttl)).toBeLessThanOrEqual(4_000);
  });

  it('RetryBudget degrades to its local fallback while PostgreSQL is down, and recovers when it is back', async () => {
    const server = await TestPostgres.start({ parent: postgresRunDir() });
    // Migrated first, so the first trySpend below is one round trip within timeoutMs, not a migration.
    const admin = new pg.Pool({ connectionString: server.url(), max: 1 });
    await migrate(admin, 'stormguard').finally(() => admin.end());
    const events: string[] = [];
    const budget = new RetryBudget({
      store: new PostgresBudgetStore({ connection: server.url() }),
      minAllowance: 2,
      timeoutMs: 2_000,
      probeIntervalMs: 100,
      log: false,
    });
    budget.events.on('degraded', (e) => events.push(`degraded:${e.mode}`));
    budget.events.on('recovered', () => events.push('recovered'));
    try {
      budget.recordSuccess('search', 100);
      expect(await budget.trySpend('search')).toMatchObject({
        granted: true,
        allowance: 20,
        degraded: false,
      });
      await server.stop();
      const during = [];
      for (let i = 0; i < 4; i++) during.push(await budget.trySpend('search'));
      // The conservative local budget: the floor only, answered without the store.
      expect(during.map((r) => [r.granted, r.degraded])).toEqual([
        [true, true],
        [true, true],
        [false, true],
        [false, true],
      ]);
      await server.restart();
      await waitFor(() => !budget.degraded, 10_000, 'the budget to notice PostgreSQL is back');
      expect((await budget.trySpend('search')).degraded).toBe(false);
      expect(events).toEqual(['degraded:local', 'recovered']);
    } finally {
      await budget.close();
      await server.close();
    }
  });
});
