import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { quotedSchema } from './schema.js';

/**
 * The folder of stormguard's SQL: `src/postgres/sql/` (shipped beside the compiled code in
 * `dist/postgres/sql/`), holding the numbered migrations and, in `functions/`, one file per function.
 *
 * @example
 * readMigrations(SQL_DIR).at(-1)?.file; // '011-dead-letter-eviction.sql'
 */
export const SQL_DIR = new URL('./sql/', import.meta.url);

/**
 * One SQL file of a folder: its name, its path (for messages) and its text, with the sha256 of its bytes
 * (hex), the checksum a schema records when it applies the file.
 *
 * @example
 * // { file: '001-breaker.sql', path: '/app/node_modules/stormguard/dist/postgres/sql/001-breaker.sql', ... }
 */
export interface SqlFile {
  file: string;
  path: string;
  text: string;
  checksum: string;
}

/**
 * A numbered migration `NNN-name.sql`.
 *
 * @example
 * // { version: 1, name: 'breaker', file: '001-breaker.sql', checksum: '9f2c…', ... }
 */
export interface MigrationFile extends SqlFile {
  version: number;
  name: string;
}

/**
 * A function file `functions/<name>.sql`: `CREATE OR REPLACE FUNCTION` statements for the function
 * `name` (every overload of it).
 *
 * @example
 * // { name: 'breaker_step', file: 'functions/breaker_step.sql', checksum: '41d0…', ... }
 */
export interface FunctionFile extends SqlFile {
  name: string;
}

const MIGRATION = /^(\d{3})-([a-z0-9-]+)\.sql$/;
const FUNCTION = /^([a-z_][a-z0-9_]*)\.sql$/;

/**
 * The numbered migrations of `dir`, in version order; throws when two share a version or one is missing.
 *
 * @example
 * readMigrations(SQL_DIR).map((m) => m.version); // [1, 2, 3, ...]
 */
export function readMigrations(dir: URL): MigrationFile[] {
  const found: MigrationFile[] = [];
  for (const file of readdirSync(dir)) {
    const match = MIGRATION.exec(file);
    if (match) found.push({ ...read(dir, file), version: Number(match[1]), name: match[2]! });
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

/**
 * The function files of `dir/functions/`, by name (the order they are applied in: a function file may
 * call the functions of files before it, and any the migrations created).
 *
 * @example
 * readFunctions(SQL_DIR).map((f) => f.name); // ['attempts_write', 'breaker_step', ...]
 */
export function readFunctions(dir: URL): FunctionFile[] {
  const folder = new URL('functions/', dir);
  if (!existsSync(folder)) return [];
  const found: FunctionFile[] = [];
  for (const file of readdirSync(folder).sort()) {
    const match = FUNCTION.exec(file);
    if (match) found.push({ ...read(folder, file), file: `functions/${file}`, name: match[1]! });
  }
  return found;
}

/**
 * `file`'s statements for `schema`: `{{schema}}` replaced by the quoted schema name.
 *
 * @example
 * sqlFor(readFunctions(SQL_DIR)[0]!, 'stormguard'); // 'CREATE OR REPLACE FUNCTION "stormguard".…'
 */
export function sqlFor(file: SqlFile, schema: string): string {
  return file.text.replaceAll('{{schema}}', quotedSchema(schema));
}

function read(dir: URL, file: string): SqlFile {
  const url = new URL(file, dir);
  const bytes = readFileSync(url);
  return {
    file,
    path: fileURLToPath(url),
    text: bytes.toString('utf8'),
    checksum: createHash('sha256').update(bytes).digest('hex'),
  };
}
