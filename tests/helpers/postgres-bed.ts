import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import { type TestDatabase, TestPostgres } from './postgres-server.js';
import { waitFor } from './redis-server.js';

declare module 'vitest' {
  interface ProvidedContext {
    /** The run's PostgreSQL folder (see `tests/helpers/postgres-global-setup.ts`). */
    stormguardPostgresRun: string;
  }
}

/** How long a test file waits for another file to finish starting the shared server. */
const SHARED_START_TIMEOUT_MS = 60_000;

let shared: Promise<TestPostgres> | undefined;

/**
 * The run's folder for PostgreSQL servers: every server started in it is stopped and removed when the
 * run ends, even when a test file crashed before its `afterAll`.
 */
export function postgresRunDir(): string {
  const dir = inject('stormguardPostgresRun');
  if (!dir)
    throw new Error('no PostgreSQL run folder: run the tests through vitest.config.ts (its globalSetup)');
  return dir;
}

/**
 * The one PostgreSQL server shared by every test file of the run, started by whichever file asks first
 * (`initdb` costs about a second; starting one per file would add that to each). Test files isolate
 * themselves with a database of their own ({@link postgresBed}); a test that stops or restarts a server
 * starts its own {@link TestPostgres} with `parent: postgresRunDir()` instead.
 */
export function sharedPostgres(): Promise<TestPostgres> {
  shared ??= attachOrStart(postgresRunDir());
  return shared;
}

interface SharedRecord {
  port?: number;
  dir?: string;
  error?: string;
}

async function attachOrStart(runDir: string): Promise<TestPostgres> {
  const record = join(runDir, 'shared.json');
  if (claim(join(runDir, 'shared.lock'))) {
    try {
      const server = await TestPostgres.start({ parent: runDir });
      publish(record, { port: server.port, dir: server.dir });
      return server;
    } catch (error) {
      publish(record, { error: error instanceof Error ? error.message : String(error) });
      throw error;
    }
  }
  await waitFor(() => existsSync(record), SHARED_START_TIMEOUT_MS, 'the shared PostgreSQL to start');
  const { port, dir, error } = JSON.parse(readFileSync(record, 'utf8')) as SharedRecord;
  if (error !== undefined || port === undefined || dir === undefined) {
    throw new Error(error ?? `unreadable ${record}`);
  }
  return TestPostgres.attach(port, dir);
}

/** Atomically claims `lock` (mkdir either creates it or fails): true for exactly one caller. */
function claim(lock: string): boolean {
  try {
    mkdirSync(lock);
    return true;
  } catch {
    return false;
  }
}

/** Writes `value` so readers never see half a file (write aside, then rename). */
function publish(path: string, value: SharedRecord): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(value));
  renameSync(`${path}.tmp`, path);
}

/** A test file's database on the shared PostgreSQL. */
export interface PostgresBed {
  /** The file's own database (created in `beforeAll`, dropped in `afterAll`). */
  readonly database: TestDatabase;
  /** Its connection string. */
  readonly url: string;
}

/**
 * Registers `beforeAll`/`afterAll` hooks that create a database of the file's own on the shared
 * PostgreSQL and drop it after the file's last test. Tests isolate from each other with a fresh schema
 * (`uniqueSchema()`) in it.
 *
 * @example
 * const bed = postgresBed();
 * it('...', async () => {
 *   const pool = new pg.Pool({ connectionString: bed.url });
 * });
 */
export function postgresBed(): PostgresBed {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    const server = await sharedPostgres();
    database = await server.createDatabase();
  }, SHARED_START_TIMEOUT_MS);
  afterAll(async () => {
    await database?.drop();
  });
  const bed: PostgresBed = {
    get database(): TestDatabase {
      if (!database) throw new Error('the test database is not created yet: use it inside a test');
      return database;
    },
    get url(): string {
      return bed.database.url;
    },
  };
  return bed;
}
