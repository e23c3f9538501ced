import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { describeDeadLetterStore, sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  await pool.end();
});

describeDeadLetterStore('PostgresDeadLetterStore', async (clock) => {
  const schema = uniqueSchema();
  const store = new PostgresDeadLetterStore({ connection: pool, schema, timeOverride: clock });
  return {
    store,
    damage: async (queue, id) => {
      await pool.query(`UPDATE ${schema}.dead_letters SET record = $1 WHERE queue = $2 AND id = $3`, [
        '{"jobId":42}',
        queue,
        id,
      ]);
    },
    close: () => store.close(),
  };
});

describe('PostgresDeadLetterStore on PostgreSQL', () => {
  it('files one record per job when the same job is filed from many connections at once', async () => {
    const store = new PostgresDeadLetterStore({ connection: pool, schema: uniqueSchema() });
    const record = sampleDeadLetter('race');
    const results = await Promise.all(
      Array.from({ length: 8 }, () => store.file(record, { attempts: 1, deferrals: 0 }, 60_000)),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(await store.count('index')).toBe(1);
  });

  it('keeps a record whose data holds characters jsonb refuses (NUL)', async () => {
    const store = new PostgresDeadLetterStore({ connection: pool, schema: uniqueSchema() });
    const record = sampleDeadLetter('nul', { data: { text: 'a\u0000b' }, detail: 'x\u0000y' });
    const { id } = await store.file(record, { attempts: 1, deferrals: 0 }, 60_000);
    expect(await store.get('index', id)).toEqual({ ...record, id });
    expect((await store.readAttempts(record))?.deadLettered?.recordId).toBe(id);
  });
});
