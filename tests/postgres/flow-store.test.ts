import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/common/clock.js';
import { PostgresFlowStore } from '../../src/postgres/flow-store.js';
import { flowStoreCases } from '../../src/runtime/flow-control/store.case.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 6 });
});
afterAll(async () => {
  await pool.end();
});

flowStoreCases('PostgresFlowStore', async (clock, connections) => {
  const schema = uniqueSchema();
  // One store per connection, as workers each hold their own: they share only the schema's rows.
  const pools = Array.from({ length: connections }, () => new pg.Pool({ connectionString: bed.url, max: 1 }));
  return {
    stores: pools.map((connection) => new PostgresFlowStore({ connection, schema, clock })),
    close: async () => {
      await Promise.all(pools.map((p) => p.end()));
    },
  };
});

describe('PostgresFlowStore specifics', () => {
  const T0 = 1_700_000_000_000;
  const RAMP = { slowStartMs: 10_000, floorPerSecond: 2 };

  /** `n` stores on pools of their own over one schema, as `n` workers. */
  function fleet(n: number, clock: FakeClock, options: { stateTtlMs?: number } = {}) {
    const schema = uniqueSchema();
    const pools = Array.from({ length: n }, () => new pg.Pool({ connectionString: bed.url, max: 1 }));
    return {
      schema,
      stores: pools.map((connection) => new PostgresFlowStore({ connection, schema, clock, ...options })),
      close: () => Promise.all(pools.map((p) => p.end())),
    };
  }

  it('grants each paced slot once when many workers ask at the same moment, the first pacing included', async () => {
    const clock = new FakeClock(T0);
    const { stores, close } = fleet(6, clock);
    try {
      // Migrated first, so the asks below meet at the row, not at the migration's lock.
      await Promise.all(stores.map((s) => s.switchedOff()));
      // 4 per second, slots within 1 s: +0, +250, +500, +750 and +1000 ms; never seen before.
      const capped = { ...RAMP, maxRatePerSecond: 4 };
      const verdicts = await Promise.all(
        Array.from({ length: 24 }, (_, i) => stores[i % stores.length]!.admit('crm', capped, 1_000)),
      );
      const waits = verdicts
        .filter((v) => v.granted)
        .map((v) => v.waitMs)
        .sort((a, b) => a - b);
      expect(waits).toEqual([0, 250, 500, 750, 1_000]);
    } finally {
      await close();
    }
  });

  it('holds the in-flight cap under concurrent exchanges, the first one included, one round trip each', async () => {
    const clock = new FakeClock(T0);
    const { stores, close } = fleet(6, clock);
    try {
      await Promise.all(stores.map((s) => s.switchedOff()));
      const request = (holder: string, lease: string) => ({
        holder,
        declared: { maxInFlight: 5 },
        leaseMs: 30_000,
        give: [],
        renew: [],
        take: [{ lease, cost: 1 }],
        probes: 1,
        ramp: RAMP,
      });
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          stores[i % 6]!.exchangeLimits('api', request(`h${i % 6}`, `l${i}`)),
        ),
      );
      expect(results.reduce((n, r) => n + r.granted, 0)).toBe(5);
      expect((await stores[0]!.limitState('api')).inFlight).toBe(5);

      // Each checkout of a pool's connection is one query: count them over 20 exchanges.
      const pool = new pg.Pool({ connectionString: bed.url, max: 1 });
      try {
        const store = new PostgresFlowStore({ connection: pool, schema: stores[0]!.schema, clock });
        await store.limitState('api');
        let checkouts = 0;
        pool.on('acquire', () => checkouts++);
        for (let i = 0; i < 20; i++)
          await store.exchangeLimits('api', {
            ...request('h0', `m${i}`),
            give: [{ lease: `l${i}`, ok: true }],
          });
        expect(checkouts).toBe(20);
      } finally {
        await pool.end();
      }
    } finally {
      await close();
    }
  });

  it('releases every parked job exactly once under concurrent releases, oldest first per release', async () => {
    const clock = new FakeClock(T0);
    const { stores, close } = fleet(5, clock);
    try {
      const ids = Array.from({ length: 60 }, (_, i) => `j${i}`);
      for (const id of ids) await stores[0]!.park('search', 'index', id, 60_000);
      const taken = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          stores[i % stores.length]!.release('search', 'index', RAMP, 7, 1_000),
        ),
      );
      for (const batch of taken)
        expect(batch).toEqual([...batch].sort((a, b) => ids.indexOf(a) - ids.indexOf(b)));
      expect(taken.flat().sort()).toEqual(ids.slice(0, 60).sort());
      expect(await stores[1]!.parked('search', 'index')).toBe(0);
    } finally {
      await close();
    }
  });

  it('forgets a dependency and a park list once they expire, as Redis keys do', async () => {
    const clock = new FakeClock(T0);
    const { stores, close } = fleet(1, clock, { stateTtlMs: 60_000 });
    const [store] = stores as [PostgresFlowStore];
    try {
      await store.markDown('search');
      await store.park('search', 'index', 'old', 1_000);
      clock.advance(1_000);
      expect(await store.parked('search', 'index')).toBe(0);
      expect(await store.park('search', 'index', 'new', 1_000)).toBe(1);
      expect(await store.release('search', 'index', RAMP, 10, 1_000)).toEqual(['new']);
      expect((await store.read('search')).down).toBe(true);
      clock.advance(59_000);
      expect(await store.read('search')).toEqual({ down: false, nowMs: T0 + 60_000, off: false });
      // Up without down starts no ramp, even over an expired row.
      expect((await store.markUp('search')).recoveredAtMs).toBeUndefined();
    } finally {
      await close();
    }
  });

  it('keeps its rows in the named schema and prefix, on the server clock', async () => {
    const schema = uniqueSchema();
    const store = new PostgresFlowStore({ connection: pool, schema, prefix: 'shop' });
    const other = new PostgresFlowStore({ connection: pool, schema, prefix: 'other' });
    const before = Date.now();
    await store.markDown('search');
    await store.setOff(true);
    const { nowMs, recoveredAtMs, off } = await store.markUp('search');
    expect(recoveredAtMs).toBe(nowMs);
    expect(off).toBe(true);
    expect(Math.abs(nowMs - before)).toBeLessThan(60_000);
    expect(await other.read('search')).toMatchObject({ down: false, off: false });
    expect(await other.switchedOff()).toBe(false);
    const { rows } = await pool.query<{ prefix: string; dependency: string }>(
      `SELECT prefix, dependency FROM ${schema}.flow_state`,
    );
    expect(rows).toEqual([{ prefix: 'shop', dependency: 'search' }]);
  });

  it('rejects a bad state time to live and a bad connection, naming the rule', () => {
    expect(() => new PostgresFlowStore({ connection: pool, stateTtlMs: 0 })).toThrow(
      'PostgreSQL flow store: stateTtlMs 0 is invalid: use a whole number of ms >= 1 (default 86400000)',
    );
    expect(() => new PostgresFlowStore({ connection: 42 as never })).toThrow(
      'PostgreSQL flow store: connection must be a pg.Pool or a postgres:// URL',
    );
  });
});
