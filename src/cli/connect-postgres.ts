import type pg from 'pg';
import { parsePostgresUrl } from './postgres-url.js';

/**
 * Connects to PostgreSQL for a CLI command, runs `work` with a small pool, and ends the pool whatever
 * happens. The URL is checked first (a bad one is bad input: exit 2), and the server is asked once before
 * `work` so an unreachable one fails within 5 s with a one-line error naming the (masked) URL. node-postgres
 * is loaded here, on first use, so commands that never touch PostgreSQL start without it.
 *
 * @example
 * const report = await withPostgres(flags.postgres, (pool) => migrate(pool, flags.schema));
 */
export async function withPostgres<T>(url: string, work: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const { shown } = parsePostgresUrl(url);
  // A missing pg is named by the CLI with the command and the install line (src/cli/peers.ts).
  const { default: pgModule } = await import('pg');
  const pool = new pgModule.Pool({
    connectionString: url,
    connectionTimeoutMillis: 5_000,
    max: 2,
    fallback_application_name: 'stormguard',
  });
  // An idle client the server dropped must not crash the CLI; the next query reports the error.
  pool.on('error', () => undefined);
  try {
    try {
      await pool.query('SELECT 1');
    } catch (error) {
      throw new Error(
        `cannot reach PostgreSQL at ${shown}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return await work(pool);
  } finally {
    await pool.end();
  }
}

/**
 * `error`, or, when it is PostgreSQL's undefined schema, table or function, an error that says to run
 * `stormguard migrate` (for commands that report errors without failing, such as `budget watch`).
 *
 * @example
 * const shown = explainSchemaError(backend, error).message;
 */
export function explainSchemaError(backend: { url: string; schema: string }, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== '3F000' && code !== '42P01' && code !== '42883') return error;
  return new Error(
    `schema "${backend.schema}" holds no stormguard tables at ${parsePostgresUrl(backend.url).shown}: ` +
      `run stormguard migrate --postgres <url> --schema ${backend.schema} (or name the schema the workers use)`,
  );
}
