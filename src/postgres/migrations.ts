import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';
import { assertSchema, quotedSchema } from './schema.js';

/**
 * One numbered SQL file of `src/postgres/sql/` (shipped beside the compiled code in `dist/postgres/sql/`).
 *
 * @example
 * // { version: 1, name: 'breaker', file: '001-breaker.sql' }
 */
export interface Migration {
  version: number;
  name: string;
  file: string;
}

/**
 * The outcome of {@link migrate}.
 *
 * @example
 * const { applied, current } = await migrate(pool, 'stormguard'); // applied: [3], current: 3
 */
export interface MigrationReport {
  schema: string;
  /** Versions this call applied, in order (empty when the schema was up to date). */
  applied: number[];
  /** The highest version the schema holds now. */
  current: number;
}

const SQL_DIR = new URL('./sql/', import.meta.url);
const FILE = /^(\d{3})-([a-z0-9-]+)\.sql$/;
// Every stormguard migration of any schema takes this advisory lock class, with the schema's hash as key.
const LOCK_CLASS = 0x5347; // "SG"

/**
 * Every migration, in version order. A migration is a file `NNN-name.sql` in `src/postgres/sql/`: to add
 * one, drop the next number there (never edit a file that has shipped). Statements refer to the schema
 * as `{{schema}}` (replaced by the quoted name); the runner applies the file in the migration's
 * transaction and records its version, so a file needs no `IF NOT EXISTS`.
 *
 * @example
 * migrations().map((m) => m.file); // ['001-breaker.sql', '002-idempotency.sql', ...]
 */
export function migrations(): Migration[] {
  const found: Migration[] = [];
  for (const file of readdirSync(SQL_DIR)) {
    const match = FILE.exec(file);
    if (match) found.push({ version: Number(match[1]), name: match[2]!, file });
  }
  found.sort((a, b) => a.version - b.version);
  // Two branches that each added "the next number" meet here: the one not released yet takes another.
  found.forEach((m, i) => {
    if (m.version === found[i - 1]?.version)
      throw new Error(
        `stormguard migrations: ${found[i - 1]!.file} and ${m.file} share version ${m.version}; ` +
          'renumber the one not released yet to the next free number',
      );
    if (m.version !== i + 1)
      throw new Error(`stormguard migrations: expected version ${i + 1} (no gaps), found ${m.file}`);
  });
  return found;
}

/** The SQL of `migration` for `schema`. */
export function migrationSql(migration: Migration, schema: string): string {
  return readFileSync(new URL(migration.file, SQL_DIR), 'utf8').replaceAll(
    '{{schema}}',
    quotedSchema(schema),
  );
}

/**
 * Brings `schema` up to the latest version: creates it if needed, then applies every migration it lacks,
 * all in one transaction (a failure leaves the schema as it was). Workers that start together migrate
 * once: each takes a transaction-scoped advisory lock on the schema first, and finds the work done when
 * its turn comes. Safe to run at every start; `stormguard migrate` runs it by hand.
 *
 * @example
 * import pg from 'pg';
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const { applied } = await migrate(pool, 'stormguard');
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<MigrationReport> {
  assertSchema(schema);
  const all = migrations();
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, schema]);
    const q = quotedSchema(schema);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${q}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${q}.migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
       )`,
    );
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${q}.migrations`);
    const done = new Set(rows.map((row) => row.version));
    const applied: number[] = [];
    for (const migration of all) {
      if (done.has(migration.version)) continue;
      await client.query(migrationSql(migration, schema));
      await client.query(`INSERT INTO ${q}.migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
    }
    await client.query('COMMIT');
    return { schema, applied, current: Math.max(0, ...done, ...applied) };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
