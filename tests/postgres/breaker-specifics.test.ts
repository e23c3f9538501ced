import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { breakerStoreAgreesWithMachine } from '../../src/breaker/machine-agreement.case.js';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { FakeClock } from '../../src/common/clock.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
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

describe('PostgresBreakerStore specifics', () => {
  it('keeps a dependency in one row of the named schema, on the server clock', async () => {
    const schema = uniqueSchema();
    // A first use migrates the schema: on a loaded machine that outlasts the 500 ms default, and the
    // store would answer from its local fallback, writing nothing.
    const store = new PostgresBreakerStore({ connection: pool, schema, timeoutMs: 30_000 });
    const options = resolveBreakerOptions({ windowMs: 1_000, coolDownMs: 500 });
    const before = Date.now();
    const { snapshot } = await store.record('search', 'failure', options);
    const { rows } = await pool.query<{ dependency: string; ttl: string }>(
      `SELECT dependency, expires_at_ms - ${schema}.now_ms(NULL) AS ttl FROM ${schema}.breakers`,
    );
    expect(rows.map((r) => r.dependency)).toEqual(['search']);
    expect(Number(rows[0]?.ttl)).toBeGreaterThan(0);
    expect(Number(rows[0]?.ttl)).toBeLessThanOrEqual(2 * (1_000 + 500));
    // Time came from clock_timestamp(): the same machine, so within a generous bound of the local clock.
    expect(Math.abs(snapshot.nowMs - before)).toBeLessThan(60_000);
  });

  it('lists every dependency of its schema and prefix with the options its breaker last wrote', async () => {
    const schema = uniqueSchema();
    const store = new PostgresBreakerStore({ connection: pool, schema, timeoutMs: 30_000 });
    const options = resolveBreakerOptions({ consecutiveFailures: 1 });
    await store.record('search', 'failure', options);
    await store.record('mail', 'success', options);
    await new PostgresBreakerStore({ connection: pool, schema: uniqueSchema(), timeoutMs: 30_000 }).record(
      'crm',
      'success',
      options,
    );
    await new PostgresBreakerStore({ connection: pool, schema, prefix: 'other', timeoutMs: 30_000 }).record(
      'erp',
      'success',
      options,
    );
    const listed = await store.list();
    expect(listed.map((b) => [b.dependency, b.state])).toEqual([
      ['mail', 'closed'],
      ['search', 'open'],
    ]);
    expect(listed[1]?.options?.consecutiveFailures).toBe(1);
  });

  it('rejects bad settings and schema names, naming the rule', () => {
    expect(() => new PostgresBreakerStore({ connection: pool, timeoutMs: 0 })).toThrow(
      'invalid PostgreSQL breaker store options: timeoutMs: 0 is invalid: must be a whole number >= 1',
    );
    expect(() => new PostgresBreakerStore({ connection: pool, schema: 'Shop; DROP' })).toThrow(
      /schema "Shop; DROP": use 1-63 lower-case letters/,
    );
    expect(() => new PostgresBreakerStore({ connection: 42 as never })).toThrow(
      'PostgreSQL breaker store: connection must be a pg.Pool or a postgres:// URL',
    );
  });

  it('the plpgsql function and the TypeScript machine agree on any sequence of operations', async () => {
    const schema = uniqueSchema();
    await breakerStoreAgreesWithMachine(
      (clock, run) => ({
        store: new PostgresBreakerStore({ connection: pool, schema, timeOverride: clock, timeoutMs: 10_000 }),
        dependency: `d${run}`,
      }),
      () => new FakeClock(1_700_000_000_000),
      40,
    );
  });

  it('answers from the local fallback while PostgreSQL is down, and from PostgreSQL once it is back', async () => {
    const server = await TestPostgres.start({ parent: postgresRunDir() });
    const clock = new FakeClock(1_700_000_000_000);
    const store = new PostgresBreakerStore({
      connection: server.url(),
      clock,
      timeoutMs: 2_000,
      retryIntervalMs: 1_000,
    });
    const events: string[] = [];
    store.events.on('unavailable', (e) => events.push(`unavailable:${e.fallback}`));
    store.events.on('available', () => events.push('available'));
    const options = resolveBreakerOptions({ consecutiveFailures: 2 });
    try {
      expect((await store.record('search', 'failure', options)).snapshot.degraded).toBe(false);
      // The store commits without waiting for the disk; a checkpoint flushes the WAL (so the crash below
      // keeps that failure) without waiting on time.
      const client = new pg.Client({ connectionString: server.url() });
      await client.connect();
      await client.query('CHECKPOINT');
      await client.end();
      await server.stop();
      const local = await store.record('search', 'failure', options);
      // The local breaker counts on its own: one failure, not two.
      expect(local.snapshot).toMatchObject({ degraded: true, state: 'closed', consecutiveFailures: 1 });
      expect((await store.acquire('search', options)).snapshot.degraded).toBe(true);
      await server.restart();
      // Within the retry interval the fallback still answers, without a round trip.
      expect((await store.read('search', options)).degraded).toBe(true);
      clock.advance(1_000);
      const shared = await store.read('search', options);
      expect(shared).toMatchObject({ degraded: false, consecutiveFailures: 1 });
      expect(events).toEqual(['unavailable:local', 'available']);
    } finally {
      await store.close();
      await server.close();
    }
  });

  it('fails closed with whenUnavailable reject', async () => {
    const store = new PostgresBreakerStore({
      connection: 'postgres://postgres@127.0.0.1:1/none',
      whenUnavailable: 'reject',
    });
    try {
      const admission = await store.acquire('search', resolveBreakerOptions());
      expect(admission).toMatchObject({ allowed: false, snapshot: { state: 'open', degraded: true } });
    } finally {
      await store.close();
    }
  });
});
