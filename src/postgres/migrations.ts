import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { assertSchema, quotedSchema } from './schema.js';
import {
  type FunctionFile,
  type MigrationFile,
  readFunctions,
  readMigrations,
  SQL_DIR,
  sqlFor,
} from './sql-files.js';

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
 * const { applied, current, functions } = await migrate(pool, 'stormguard');
 * // applied: [3], current: 3, functions: ['flow_admit']
 */
export interface MigrationReport {
  schema: string;
  /** Versions this call applied, in order (empty when the schema was up to date). */
  applied: number[];
  /** The highest version the schema holds now. */
  current: number;
  /**
   * The functions this call created or replaced from `sql/functions/` (their files' names without
   * `.sql`), in the order applied; empty when every one was as its file says.
   */
  functions: string[];
}

// Every stormguard migration of any schema takes this advisory lock class, with the schema's hash as key.
const LOCK_CLASS = 0x5347; // "SG"

/**
 * Every migration, in version order. A migration is a file `NNN-name.sql` in `src/postgres/sql/`: to add
 * one, drop the next number there. A file that has shipped never changes: each schema records the sha256
 * of every migration it applied, and {@link migrate} refuses a file that no longer matches. Statements
 * refer to the schema as `{{schema}}` (replaced by the quoted name); the runner applies the file in the
 * migration's transaction and records its version, so a file needs no `IF NOT EXISTS`. Functions are not
 * defined in migrations but in `sql/functions/<name>.sql` (see {@link migrate}).
 *
 * @example
 * migrations().map((m) => m.file); // ['001-breaker.sql', '002-idempotency.sql', ...]
 */
export function migrations(): Migration[] {
  return readMigrations(SQL_DIR).map(({ version, name, file }) => ({ version, name, file }));
}

/** The SQL of `migration` for `schema`. */
export function migrationSql(migration: Migration, schema: string): string {
  return readFileSync(new URL(migration.file, SQL_DIR), 'utf8').replaceAll(
    '{{schema}}',
    quotedSchema(schema),
  );
}

/**
 * Brings `schema` up to date: creates it if needed, checks that every migration it applied before is
 * still the file it applied (by the sha256 recorded then; a schema migrated before checksums were
 * recorded gets them now), applies every migration it lacks, then (re)creates each function whose file
 * in `sql/functions/` differs from the one it last applied, all in one transaction (a failure leaves the
 * schema as it was). A function file holds `CREATE OR REPLACE FUNCTION` statements: editing it is how a
 * function changes, and the next migration of every schema applies it once. The old migrations still
 * create the functions' first versions on a new schema; the function files then replace them. `CREATE OR
 * REPLACE` cannot change a function's return type or argument names, and a new argument list is another
 * function: such a change also needs a migration that drops the old one.
 *
 * Workers that start together migrate once: each takes a transaction-scoped advisory lock on the schema
 * first, and finds the work done when its turn comes. Safe to run at every start; `stormguard migrate`
 * runs it by hand.
 *
 * @example
 * import pg from 'pg';
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const { applied, functions } = await migrate(pool, 'stormguard');
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<MigrationReport> {
  // Read and hashed once per process (some ms): every store's first use migrates.
  shipped ??= { migrations: readMigrations(SQL_DIR), functions: readFunctions(SQL_DIR) };
  return run(pool, schema, shipped);
}

let shipped: SqlFolder | undefined;

interface SqlFolder {
  migrations: MigrationFile[];
  functions: FunctionFile[];
}

/**
 * {@link migrate} with the SQL of `dir` (a folder laid out as `src/postgres/sql/`) instead of the
 * shipped one: how the tests change a migration or a function file without touching the shipped ones.
 *
 * @example
 * await migrateFrom(pool, 'stormguard', pathToFileURL(`${copy}/`));
 */
export async function migrateFrom(pool: pg.Pool, schema: string, dir: URL): Promise<MigrationReport> {
  return run(pool, schema, { migrations: readMigrations(dir), functions: readFunctions(dir) });
}

async function run(pool: pg.Pool, schema: string, sql: SqlFolder): Promise<MigrationReport> {
  assertSchema(schema);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, schema]);
    await createTables(client, schema);
    const q = quotedSchema(schema);
    const { rows } = await client.query<{ version: number; checksum: string | null }>(
      `SELECT version, checksum FROM ${q}.migrations`,
    );
    const recorded = new Map(rows.map((row) => [row.version, row.checksum]));
    const applied: number[] = [];
    for (const migration of sql.migrations) {
      const checksum = recorded.get(migration.version);
      if (checksum === undefined) {
        await client.query(sqlFor(migration, schema));
        await client.query(`INSERT INTO ${q}.migrations (version, name, checksum) VALUES ($1, $2, $3)`, [
          migration.version,
          migration.name,
          migration.checksum,
        ]);
        applied.push(migration.version);
        continue;
      }
      if (checksum === null)
        // Applied by a version that recorded no checksums: the file now is all there is to go by.
        await client.query(`UPDATE ${q}.migrations SET checksum = $2 WHERE version = $1`, [
          migration.version,
          migration.checksum,
        ]);
      else if (checksum !== migration.checksum) throw changedMigration(schema, migration, checksum);
    }
    const replaced = await applyFunctions(client, schema, sql.functions);
    await client.query('COMMIT');
    return {
      schema,
      applied,
      current: Math.max(0, ...recorded.keys(), ...applied),
      functions: replaced,
    };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

// The schema and the runner's two tables; the checksum column is added to a table made before it was.
async function createTables(client: pg.PoolClient, schema: string): Promise<void> {
  const q = quotedSchema(schema);
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${q}`);
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${q}.migrations (
       version integer PRIMARY KEY,
       name text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),
       checksum text
     )`,
  );
  // Looked up in the catalog first, in one round trip: ALTER TABLE locks the table even when the column
  // is there, and CREATE TABLE IF NOT EXISTS costs a statement of its own at every start.
  const { rows } = await client.query<{ checksum: boolean; functions: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'checksum'
                      AND NOT attisdropped) AS checksum,
            to_regclass($2) IS NOT NULL AS functions`,
    [`${q}.migrations`, `${q}.functions`],
  );
  if (!rows[0]?.checksum) await client.query(`ALTER TABLE ${q}.migrations ADD COLUMN checksum text`);
  if (!rows[0]?.functions)
    await client.query(
      `CREATE TABLE ${q}.functions (
         name text PRIMARY KEY,
         checksum text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
       )`,
    );
}

// Applies each function file whose checksum differs from the one recorded; returns their names.
async function applyFunctions(
  client: pg.PoolClient,
  schema: string,
  files: FunctionFile[],
): Promise<string[]> {
  const q = quotedSchema(schema);
  const { rows } = await client.query<{ name: string; checksum: string }>(
    `SELECT name, checksum FROM ${q}.functions`,
  );
  const recorded = new Map(rows.map((row) => [row.name, row.checksum]));
  const changed = files.filter((file) => recorded.get(file.name) !== file.checksum);
  if (changed.length === 0) return [];
  // One round trip for the statements and one for their record: a new schema applies every file.
  const texts = changed.map((file) => sqlFor(file, schema));
  try {
    await client.query(texts.join('\n'));
  } catch (error) {
    throw functionFailed(error, changed, texts);
  }
  await client.query(
    `INSERT INTO ${q}.functions (name, checksum)
     SELECT * FROM unnest($1::text[], $2::text[])
     ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = clock_timestamp()`,
    [changed.map((file) => file.name), changed.map((file) => file.checksum)],
  );
  return changed.map((file) => file.name);
}

// The error of the function files applied together, naming the file PostgreSQL's position points into.
function functionFailed(error: unknown, files: FunctionFile[], texts: string[]): Error {
  const position = Number((error as { position?: string }).position);
  let start = 0;
  let at: FunctionFile | undefined;
  texts.forEach((text, i) => {
    if (position > start && position <= start + text.length + 1) at = files[i];
    start += text.length + 1;
  });
  const which = at ? at.path : `one of ${files.map((file) => file.file).join(', ')}`;
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`stormguard migrations: ${which} does not apply: ${message}`, { cause: error });
}

function changedMigration(schema: string, migration: MigrationFile, recorded: string): Error {
  return new Error(
    `stormguard migrations: ${migration.path} is not the migration schema "${schema}" applied as version ` +
      `${migration.version} (recorded sha256 ${recorded}, the file now ${migration.checksum}). ` +
      'A migration that has shipped must not change: restore the file as released (reinstall stormguard, ' +
      `or git checkout ${migration.file} in a checkout) and put the change in a new numbered migration, ` +
      'or in sql/functions/ for a function. If the edit changes nothing the schema holds (a comment), ' +
      `record the file as it is now with UPDATE "${schema}".migrations SET checksum = NULL WHERE ` +
      `version = ${migration.version}; and migrate again.`,
  );
}
