import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { migrate, migrateFrom } from '../../src/postgres/migrations.js';
import type { DeadLetterFilter } from '../../src/runtime/contracts.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
let work: string;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
  work = mkdtempSync(join(tmpdir(), 'stormguard-tallies-'));
});
afterAll(async () => {
  await pool.end();
  rmSync(work, { recursive: true, force: true });
});

const STATE = { attempts: 1, deferrals: 0 };
const REASONS = ['permanent', 'max-attempts', 'budget-exhausted'] as const;
const DEPENDENCIES = ['search', 'mail'];
const NAMES = ['reindex', 'notify'];

/** Every filter of one to three indexed fields over the values filed, and none. */
function filters(): DeadLetterFilter[] {
  const out: DeadLetterFilter[] = [{}];
  for (const reason of [undefined, ...REASONS])
    for (const dependency of [undefined, ...DEPENDENCIES])
      for (const name of [undefined, ...NAMES])
        if (reason || dependency || name)
          out.push({
            ...(reason ? { reason } : {}),
            ...(dependency ? { dependency } : {}),
            ...(name ? { name } : {}),
          });
  return out;
}

/** The records of `queue` that match `filter`, counted row by row in SQL (not through the tallies). */
async function counted(schema: string, queue: string, filter: DeadLetterFilter): Promise<number> {
  const values: unknown[] = [queue];
  const where = ['queue = $1'];
  for (const field of ['reason', 'dependency', 'name'] as const) {
    if (filter[field] === undefined) continue;
    values.push(filter[field]);
    where.push(`${field} = $${values.length}`);
  }
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${schema}.dead_letters WHERE ${where.join(' AND ')}`,
    values,
  );
  return rows[0]?.n ?? 0;
}

async function expectCountsAgree(store: PostgresDeadLetterStore, schema: string, queue: string) {
  for (const filter of filters())
    expect(await store.count(queue, filter), JSON.stringify(filter)).toBe(
      await counted(schema, queue, filter),
    );
}

/** Files `n` records to `queue`, cycling through the reasons, dependencies and names. */
async function fileSome(store: PostgresDeadLetterStore, queue: string, n: number, from = 0) {
  const ids: string[] = [];
  for (let i = from; i < from + n; i++) {
    const record = sampleDeadLetter(`job-${i}`, {
      queue,
      reason: REASONS[i % 3],
      dependency: DEPENDENCIES[i % 2],
      name: NAMES[Math.floor(i / 2) % 2],
      deadLetteredAt: 1_700_000_000_000 + i,
    });
    ids.push((await store.file(record, STATE, 60_000)).id);
  }
  return ids;
}

describe('PostgreSQL dead-letter tallies', () => {
  it('count without a time range as the records do, through filings, evictions, removes, claims and hand edits', async () => {
    const schema = uniqueSchema();
    const store = new PostgresDeadLetterStore({ connection: pool, schema });
    await store.registerQueue('index', { maxCount: 40 });
    const ids = await fileSome(store, 'index', 60);
    await fileSome(store, 'other', 7, 100);
    // Retention evicted 20: the tallies count what is left.
    expect(await store.count('index')).toBe(40);
    expect(await store.count('index', { reason: 'permanent' })).toBe(13);
    await expectCountsAgree(store, schema, 'index');

    for (const id of ids.slice(-5)) expect(await store.remove('index', id)).toBe(true);
    await store.claimReplay('index', ids[30]!, 'replayed-30');
    expect(await store.completeReplay('index', ids[30]!)).toBe(true);
    await store.claimReplay('index', ids[31]!, 'replayed-31');
    await pool.query(
      `UPDATE ${schema}.dead_letters SET reason = 'max-age' WHERE queue = 'index' AND id = $1`,
      [ids[32]],
    );
    expect(await store.count('index')).toBe(34);
    expect(await store.count('index', { reason: 'max-age' })).toBe(1);
    await expectCountsAgree(store, schema, 'index');
    await expectCountsAgree(store, schema, 'other');
    // A combination with no record left has no row.
    const { rows } = await pool.query(`SELECT * FROM ${schema}.dead_letter_tallies WHERE records <= 0`);
    expect(rows).toEqual([]);

    await pool.query(`DELETE FROM ${schema}.dead_letters WHERE queue = 'other'`);
    expect(await store.count('other')).toBe(0);
    await pool.query(`TRUNCATE ${schema}.dead_letters`);
    expect(await store.count('index', { reason: 'budget-exhausted' })).toBe(0);
  });

  it('are filled from the records already there when a schema migrates to them', async () => {
    const schema = uniqueSchema();
    // The schema as the version before the tallies left it, with records in it.
    const before = join(work, 'before-tallies');
    cpSync(fileURLToPath(new URL('../../src/postgres/sql/', import.meta.url)), before, { recursive: true });
    rmSync(join(before, '013-dead-letter-tallies.sql'));
    for (const name of ['insert', 'delete', 'update', 'truncate'])
      rmSync(join(before, 'functions', `dead_letter_tally_${name}.sql`));
    await migrateFrom(pool, schema, pathToFileURL(`${before}/`));
    const old = new PostgresDeadLetterStore({ connection: pool, schema, migrate: false });
    await fileSome(old, 'index', 25);
    const { rows } = await pool.query(`SELECT to_regclass($1) AS t`, [`${schema}.dead_letter_tallies`]);
    expect(rows[0]?.t).toBeNull();

    const report = await migrate(pool, schema);
    expect(report.applied).toContain(13);
    const store = new PostgresDeadLetterStore({ connection: pool, schema });
    expect(await store.count('index')).toBe(25);
    await expectCountsAgree(store, schema, 'index');
    await fileSome(store, 'index', 5, 25);
    expect(await store.count('index', { dependency: 'mail' })).toBe(15);
    await expectCountsAgree(store, schema, 'index');
  });
});
