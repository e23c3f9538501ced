import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/common/clock.js';
import { PostgresIdempotencyStore } from '../../src/postgres/idempotency-store.js';
import { postgresBed, postgresRunDir } from '../helpers/postgres-bed.js';
import { TestPostgres, uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  await pool.end();
});

describe('PostgresIdempotencyStore specifics', () => {
  it('keeps prefixes apart in one schema', async () => {
    const schema = uniqueSchema();
    const a = new PostgresIdempotencyStore({ connection: pool, schema, prefix: 'shop:eu' });
    const b = new PostgresIdempotencyStore({ connection: pool, schema, prefix: 'shop' });
    expect(await a.begin('eu:charge-1', 't1', 60_000)).toEqual({ state: 'run' });
    expect(await b.begin('eu:charge-1', 't2', 60_000)).toEqual({ state: 'run' });
    expect(await a.finish('eu:charge-1', 't1', '"a"', 60_000)).toBe(true);
    expect(await b.begin('eu:charge-1', 't3', 60_000)).toMatchObject({ state: 'wait' });
  });

  it('claims on the server clock by default', async () => {
    const store = new PostgresIdempotencyStore({ connection: pool, schema: uniqueSchema() });
    await store.begin('k', 'a', 60_000);
    const waiting = await store.begin('k', 'b', 60_000);
    expect(waiting.state).toBe('wait');
    // Whole seconds of slack: the claim was taken a moment ago on the server's clock.
    expect(waiting.state === 'wait' && waiting.expiresInMs).toBeGreaterThan(55_000);
  });

  it('removes expired rows as later claims come, so the table stays near its live keys', async () => {
    const schema = uniqueSchema();
    const clock = new FakeClock(1_700_000_000_000);
    const store = new PostgresIdempotencyStore({ connection: pool, schema, timeOverride: clock });
    for (let i = 0; i < 300; i++) await store.begin(`old-${i}`, 't', 1_000);
    clock.advance(1_000);
    // Each claim removes up to 4 expired rows: 75 claims clear all 300, 74 leave 4.
    for (let i = 0; i < 74; i++) await store.begin(`new-${i}`, 't', 60_000);
    const left = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${schema}.idempotency_keys WHERE key LIKE 'old-%'`,
    );
    expect(Number(left.rows[0]?.n)).toBe(4);
    await store.begin('new-74', 't', 60_000);
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${schema}.idempotency_keys WHERE key LIKE 'old-%'`,
    );
    expect(Number(rows[0]?.n)).toBe(0);
  });

  it('keeps a stored outcome through a server crash (its commit waits for the WAL)', async () => {
    const server = await TestPostgres.start({ parent: postgresRunDir() });
    try {
      const store = new PostgresIdempotencyStore({ connection: server.url() });
      await store.begin('charge-1', 'a', 60_000);
      expect(await store.finish('charge-1', 'a', '"receipt"', 60_000)).toBe(true);
      await store.close();
      await server.stop();
      await server.restart();
      const after = new PostgresIdempotencyStore({ connection: server.url() });
      expect(await after.begin('charge-1', 'b', 60_000)).toEqual({ state: 'done', value: '"receipt"' });
      await after.close();
    } finally {
      await server.close();
    }
  });
});
