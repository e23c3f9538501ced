import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { migrate, migrations } from '../../src/postgres/migrations.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  await pool.end();
});

async function versions(schema: string): Promise<number[]> {
  const { rows } = await pool.query<{ version: number }>(
    `SELECT version FROM ${schema}.migrations ORDER BY 1`,
  );
  return rows.map((r) => r.version);
}

describe('PostgreSQL migrations', () => {
  it('are numbered files from 1 without gaps', () => {
    const all = migrations();
    expect(all.slice(0, 2).map((m) => m.file)).toEqual(['001-breaker.sql', '002-idempotency.sql']);
    expect(all.map((m) => m.version)).toEqual(all.map((_, i) => i + 1));
  });

  it('create the named schema once, however many workers start together', async () => {
    const schema = uniqueSchema();
    const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: bed.url, max: 1 }));
    try {
      const reports = await Promise.all(pools.map((p) => migrate(p, schema)));
      const latest = migrations().length;
      // Exactly one worker applied every version; the others found them applied.
      expect(reports.map((r) => r.applied.length).sort()).toEqual([0, 0, 0, 0, 0, latest]);
      expect(reports.every((r) => r.current === latest)).toBe(true);
      expect(await versions(schema)).toEqual(migrations().map((m) => m.version));
      expect((await migrate(pool, schema)).applied).toEqual([]);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('run on a store’s first use; migrate: false leaves the schema to `stormguard migrate`', async () => {
    const schema = uniqueSchema();
    const options = resolveBreakerOptions();
    const manual = new PostgresBreakerStore({ connection: pool, schema, migrate: false, timeoutMs: 5_000 });
    expect((await manual.read('search', options)).degraded).toBe(true);
    const { rows } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(rows).toEqual([]);
    const auto = new PostgresBreakerStore({ connection: pool, schema });
    expect((await auto.read('search', options)).degraded).toBe(false);
    expect(await versions(schema)).toEqual(migrations().map((m) => m.version));
  });

  it('a store ends only the pool it opened itself', async () => {
    const schema = uniqueSchema();
    const borrowed = new PostgresBreakerStore({ connection: pool, schema });
    await borrowed.read('search', resolveBreakerOptions());
    await borrowed.close();
    expect(pool.ended).toBe(false);
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);

    const owned = new PostgresBreakerStore({ connection: bed.url, schema });
    expect((await owned.read('search', resolveBreakerOptions())).degraded).toBe(false);
    const connected = async () => {
      const { rows } = await pool.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'stormguard' AND datname = current_database()",
      );
      return Number(rows[0]?.n);
    };
    expect(await connected()).toBe(1);
    await owned.close();
    await waitFor(async () => (await connected()) === 0, 5_000, "the store's own connection to close");
  });
});
