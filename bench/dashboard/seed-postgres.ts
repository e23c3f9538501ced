/**
 * Fills a queue of the PostgreSQL dead-letter store with `n` records in the store's own tables, with
 * `INSERT … SELECT … FROM generate_series` (each record's JSON put together in SQL from the pieces of
 * `JSON.stringify`), instead of one `dead_letter_file` call per record: the records, each job's attempt
 * state, and the queue's row (its last id and record count); whatever the schema maintains on those
 * tables by itself (triggers) runs as it would for filings. `checkPostgresLayout` first files a few records
 * through the store and seeds the same records under another queue, and refuses to go on unless every
 * table of the schema holds the same rows for both.
 */
import type pg from 'pg';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { quotedSchema } from '../../src/postgres/schema.js';
import {
  ATTEMPTS_TTL_MS,
  FINAL_STATE,
  FIRST_AT,
  type JsonParts,
  record,
  recordJsonParts,
  stateJsonParts,
} from './records.js';

const BATCH = 100_000;

/** Writes records 0..n-1 of `queue` (ids 1..n) the fast way, then VACUUM ANALYZE. */
export async function seedPostgres(
  pool: pg.Pool,
  schema: string,
  prefix: string,
  queue: string,
  n: number,
  options: { vacuum?: boolean } = {},
): Promise<void> {
  const store = new PostgresDeadLetterStore({ connection: pool, schema, prefix });
  await store.registerQueue(queue);
  const q = quotedSchema(schema);
  const common = recordJsonParts(queue, false);
  const rare = recordJsonParts(queue, true);
  const states = { common: stateJsonParts(queue, false), rare: stateJsonParts(queue, true) };
  // The JSON of record i, from text pieces given as a text[] parameter.
  const json = (pieces: JsonParts, param: string) =>
    [
      `${param}[1]`,
      ...pieces.slots.flatMap((slot, k) => [
        slot === 'i' ? 'i::text' : slot === 'id' ? '(i + 1)::text' : `(${FIRST_AT}::bigint + i)::text`,
        `${param}[${k + 2}]`,
      ]),
    ].join(' || ');
  const rareWhen = 'i % 100 = 0';
  for (let from = 0; from < n; from += BATCH) {
    const to = Math.min(n, from + BATCH) - 1;
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO ${q}.dead_letters
           (prefix, queue, id, job_id, created_at, reason, dependency, name, dead_lettered_at, record)
         SELECT $1, $2, i + 1, 'doc-' || i, i,
                CASE WHEN ${rareWhen} THEN 'permanent' ELSE 'budget-exhausted' END,
                CASE WHEN ${rareWhen} THEN 'rare-dep' ELSE 'search' END,
                CASE WHEN ${rareWhen} THEN 'rare-job' ELSE 'reindex' END,
                ${FIRST_AT}::bigint + i,
                CASE WHEN ${rareWhen} THEN ${json(rare, '($6::text[])')} ELSE ${json(common, '($5::text[])')} END
         FROM generate_series($3::bigint, $4::bigint) AS i`,
        [prefix, queue, from, to, common.parts, rare.parts],
      );
      await client.query(
        `INSERT INTO ${q}.attempt_states (prefix, queue, job_id, created_at, state, expires_at_ms)
         SELECT $1, $2, 'doc-' || i, i,
                CASE WHEN ${rareWhen} THEN ${json(states.rare, '($6::text[])')} ELSE ${json(states.common, '($5::text[])')} END,
                ${q}.now_ms(NULL) + $7
         FROM generate_series($3::bigint, $4::bigint) AS i`,
        [prefix, queue, from, to, states.common.parts, states.rare.parts, ATTEMPTS_TTL_MS],
      );
      await client.query(
        `UPDATE ${q}.dead_letter_queues SET last_id = $3, records = records + $4
         WHERE prefix = $1 AND queue = $2`,
        [prefix, queue, to + 1, to + 1 - from],
      );
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  }
  // As autovacuum would after a bulk load, now rather than at some point during the measurements.
  if (options.vacuum !== false) await pool.query(`VACUUM (ANALYZE) ${q}.dead_letters, ${q}.attempt_states`);
}

/**
 * Files records 0..count-1 through the store (queue `check-store`) and seeds the same ones (queue
 * `check-seed`), then compares the rows of every table of the schema that has a `queue` column, the
 * queue's name and times aside. Throws naming the first difference.
 */
export async function checkPostgresLayout(
  pool: pg.Pool,
  schema: string,
  prefix: string,
  count = 4,
): Promise<void> {
  const store = new PostgresDeadLetterStore({ connection: pool, schema, prefix });
  for (let i = 0; i < count; i++) await store.file(record('check-store', i), FINAL_STATE, ATTEMPTS_TTL_MS);
  await seedPostgres(pool, schema, prefix, 'check-seed', count, { vacuum: false });
  const { rows: tables } = await pool.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.columns
     WHERE table_schema = $1 AND column_name = 'queue' ORDER BY table_name`,
    [schema],
  );
  const q = quotedSchema(schema);
  let compared = 0;
  for (const { table_name: table } of tables) {
    const rowsOf = async (queue: string) => {
      const { rows } = await pool.query<{ row: Record<string, unknown> }>(
        `SELECT to_jsonb(t) AS row FROM ${q}."${table}" t WHERE t.prefix = $1 AND t.queue = $2`,
        [prefix, queue],
      );
      return rows
        .map(({ row }) => {
          for (const time of ['registered_at_ms', 'expires_at_ms']) if (time in row) row[time] = '<time>';
          row.queue = '<queue>';
          return JSON.stringify(row).replaceAll(queue, '<queue>');
        })
        .sort();
    };
    const filed = await rowsOf('check-store');
    const seeded = await rowsOf('check-seed');
    for (let k = 0; k < Math.max(filed.length, seeded.length); k++)
      if (filed[k] !== seeded[k])
        throw new Error(
          `the PostgreSQL seed differs from the store's filing in ${table}:\n  filed:  ${filed[k]}\n  seeded: ${seeded[k]}`,
        );
    compared += filed.length;
  }
  if (compared < 2 * count + 1) throw new Error(`the layout check compared only ${compared} rows`);
}
