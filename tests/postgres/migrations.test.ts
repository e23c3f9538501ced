import { createHash } from 'node:crypto';
import {
  appendFileSync,
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { migrate, migrateFrom, migrations } from '../../src/postgres/migrations.js';
import { cli, ensureCliBuilt, ROOT } from '../helpers/cli.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = postgresBed();
let pool: pg.Pool;
let work: string;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
  work = mkdtempSync(join(tmpdir(), 'stormguard-sql-'));
});
afterAll(async () => {
  await pool.end();
  rmSync(work, { recursive: true, force: true });
});

const SQL = join(ROOT, 'src/postgres/sql');
const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const FUNCTION_FILES = readdirSync(join(SQL, 'functions'))
  .filter((f) => f.endsWith('.sql'))
  .sort();
const FUNCTION_NAMES = FUNCTION_FILES.map((f) => f.replace(/\.sql$/, ''));

/** A copy of the shipped SQL folder to edit, as a folder URL for migrateFrom. */
function sqlCopy(name: string): { dir: string; url: URL } {
  const dir = join(work, name);
  cpSync(SQL, dir, { recursive: true });
  return { dir, url: pathToFileURL(`${dir}/`) };
}

async function recorded(schema: string, table: 'migrations' | 'functions'): Promise<Record<string, string>> {
  const key = table === 'migrations' ? 'version' : 'name';
  const { rows } = await pool.query<{ key: string; checksum: string }>(
    `SELECT ${key}::text AS key, checksum FROM ${schema}.${table} ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.checksum]));
}

/** Every function of `schema` as PostgreSQL prints it back, by signature. */
async function functionDefinitions(schema: string): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ signature: string; definition: string }>(
    `SELECT p.oid::regprocedure::text AS signature, pg_get_functiondef(p.oid) AS definition
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1`,
    [schema],
  );
  return Object.fromEntries(rows.map((r) => [r.signature, r.definition]));
}

/** What the version before checksums left: each migration applied and its version recorded, nothing else. */
async function migrateTheOldWay(schema: string): Promise<void> {
  await pool.query(`CREATE SCHEMA ${schema}`);
  await pool.query(
    `CREATE TABLE ${schema}.migrations (
       version integer PRIMARY KEY,
       name text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
     )`,
  );
  for (const file of readdirSync(SQL)
    .filter((f) => /^\d{3}-.*\.sql$/.test(f))
    .sort()) {
    await pool.query(readFileSync(join(SQL, file), 'utf8').replaceAll('{{schema}}', `"${schema}"`));
    await pool.query(`INSERT INTO ${schema}.migrations (version, name) VALUES ($1, $2)`, [
      Number(file.slice(0, 3)),
      file.slice(4, -4),
    ]);
  }
}

// The sha256 of every migration as released. A released file never changes (schemas record these and
// refuse a file that differs); a new migration adds its line here once it ships.
const SHIPPED: Record<string, string> = {
  '001-breaker.sql': 'fdb668b61a1a6293786e7857f55a119cb4a1a809f71ee3e3ba283c550f66153f',
  '002-idempotency.sql': '2c861363a87b6fa3bfa9645c4c5a29a8e983ae57dcae62a0d88eb31572d0f789',
  '003-budget.sql': '7580a6dbd3a31e4626c7e3c1047d1196ecfd68c4c1988b0f22fb173ee8401f8c',
  '004-dead-letters.sql': '2174aa1e76b5621b4abc25b707b0f9fa0fc15a1959fa63364fe3e33f4959d1bf',
  '005-breaker-overrides.sql': 'df538b53ae1d6e40653a17c80ce9f40d085b1e5dd41a3c172ce5ac9ccb8a48b1',
  '006-audit-log.sql': 'ed19d26ffea3d125c99467306ae25a5654bf019c4b7d0db58d0190c65bac58e5',
  '007-idempotency-finish-again.sql': '135a11759258799a31d8386e19dce37ef046be436a0164e1f83200dacd5c53e1',
  '008-flow-control.sql': '39c2bb75f6bbca3defaeeba5edf7bf953bb2f8ec9978bfae14daa985b3f1ec57',
  '009-replay-runs.sql': 'b895c4efd9b9bbecbf44f066ab10ccab71c0ab49d66cc1b125ae7eb28ad4982b',
  '010-flow-paused.sql': 'ddcee864d282d36a180212049d9121ee01afc646ec46ff20007471cd9ab98593',
  '011-dead-letter-eviction.sql': '40d9065823e2e5063374cb0cfeb1a70be8836cfbb26cd0600c9d05f18fba0f19',
  '013-dead-letter-tallies.sql': '1a23d997850032bd139d7228959edcf66e94a69baf0a77624d947f25f601dfc7',
};

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
      // Exactly one worker applied every version and function; the others found them applied.
      expect(reports.map((r) => r.applied.length).sort()).toEqual([0, 0, 0, 0, 0, latest]);
      expect(reports.map((r) => r.functions.length).sort()).toEqual([0, 0, 0, 0, 0, FUNCTION_FILES.length]);
      expect(reports.every((r) => r.current === latest)).toBe(true);
      expect(await versions(schema)).toEqual(migrations().map((m) => m.version));
      expect(await migrate(pool, schema)).toEqual({ schema, applied: [], current: latest, functions: [] });
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

  it('ship each migration byte for byte as released', () => {
    const files = readdirSync(SQL).filter((f) => /^\d{3}-.*\.sql$/.test(f));
    for (const file of Object.keys(SHIPPED)) expect(sha256(join(SQL, file)), file).toBe(SHIPPED[file]);
    expect(files.filter((f) => SHIPPED[f] === undefined).length).toBeLessThanOrEqual(1);
  });

  it('record the sha256 of every migration and function file they apply', async () => {
    const schema = uniqueSchema();
    const report = await migrate(pool, schema);
    expect(report.functions).toEqual(FUNCTION_NAMES);
    expect(await recorded(schema, 'migrations')).toEqual(
      Object.fromEntries(migrations().map((m) => [String(m.version), sha256(join(SQL, m.file))])),
    );
    expect(await recorded(schema, 'functions')).toEqual(
      Object.fromEntries(
        FUNCTION_FILES.map((f) => [f.replace(/\.sql$/, ''), sha256(join(SQL, 'functions', f))]),
      ),
    );
  });

  it('record the checksums of a schema migrated before checksums, leaving its functions as they were', async () => {
    const schema = uniqueSchema();
    await migrateTheOldWay(schema);
    const before = await functionDefinitions(schema);
    expect(Object.keys(before).length).toBeGreaterThan(FUNCTION_FILES.length); // breaker_step has two

    // Three workers of the new version start together on it: one records and replaces, the others find it done.
    const pools = Array.from({ length: 3 }, () => new pg.Pool({ connectionString: bed.url, max: 1 }));
    try {
      const reports = await Promise.all(pools.map((p) => migrate(p, schema)));
      const latest = migrations().length;
      expect(reports.map((r) => r.functions.length).sort()).toEqual([0, 0, FUNCTION_NAMES.length]);
      expect(reports.find((r) => r.functions.length > 0)).toEqual({
        schema,
        applied: [],
        current: latest,
        functions: FUNCTION_NAMES,
      });
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    expect(await recorded(schema, 'migrations')).toEqual(
      Object.fromEntries(migrations().map((m) => [String(m.version), sha256(join(SQL, m.file))])),
    );
    // The function files hold the definitions the migrations left: replacing them changed nothing.
    expect(await functionDefinitions(schema)).toEqual(before);
    expect((await migrate(pool, schema)).functions).toEqual([]);
  });

  it('refuse a migration that changed since the schema applied it, naming the file and the way out', async () => {
    const schema = uniqueSchema();
    const copy = sqlCopy('edited-migration');
    await migrateFrom(pool, schema, copy.url);
    const edited = join(copy.dir, '004-dead-letters.sql');
    appendFileSync(edited, '-- an edit\n');
    writeFileSync(join(copy.dir, 'functions', 'now_ms.sql'), '-- never applied: the migration fails first\n');

    const refused = migrateFrom(pool, schema, copy.url);
    await expect(refused).rejects.toThrow(
      `${edited} is not the migration schema "${schema}" applied as version 4`,
    );
    await expect(refused).rejects.toThrow(
      `UPDATE "${schema}".migrations SET checksum = NULL WHERE version = 4`,
    );
    expect((await recorded(schema, 'functions')).now_ms).toBe(sha256(join(SQL, 'functions', 'now_ms.sql')));

    // The way out the message gives, for an edit that changes nothing the schema holds.
    await pool.query(`UPDATE "${schema}".migrations SET checksum = NULL WHERE version = 4`);
    writeFileSync(
      join(copy.dir, 'functions', 'now_ms.sql'),
      readFileSync(join(SQL, 'functions', 'now_ms.sql')),
    );
    expect((await migrateFrom(pool, schema, copy.url)).functions).toEqual([]);
    expect((await recorded(schema, 'migrations'))['4']).toBe(sha256(edited));
  });

  it('apply a changed function file once, however many migrate at once', async () => {
    const schema = uniqueSchema();
    const copy = sqlCopy('edited-function');
    await migrateFrom(pool, schema, copy.url);
    const file = join(copy.dir, 'functions', 'now_ms.sql');
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace('coalesce(override_ms,', 'coalesce(override_ms + 1,'),
    );
    expect(readFileSync(file, 'utf8')).toContain('override_ms + 1');
    const added = join(copy.dir, 'functions', 'zz_answer.sql');
    writeFileSync(
      added,
      `CREATE OR REPLACE FUNCTION {{schema}}.zz_answer() RETURNS integer LANGUAGE sql AS $$ SELECT 42 $$;\n`,
    );

    const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: bed.url, max: 1 }));
    try {
      const reports = await Promise.all(pools.map((p) => migrateFrom(p, schema, copy.url)));
      expect(reports.map((r) => r.functions.join(',')).sort()).toEqual(['', '', '', 'now_ms,zz_answer']);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    const { rows } = await pool.query(
      `SELECT "${schema}".now_ms(5) AS now, "${schema}".zz_answer() AS answer`,
    );
    expect(rows).toEqual([{ now: '6', answer: 42 }]);
    const functions = await recorded(schema, 'functions');
    expect([functions.now_ms, functions.zz_answer]).toEqual([sha256(file), sha256(added)]);
    expect((await migrateFrom(pool, schema, copy.url)).functions).toEqual([]);
  });

  it('name the function file that does not apply, and leave the schema as it was', async () => {
    const schema = uniqueSchema();
    const copy = sqlCopy('broken-function');
    await migrateFrom(pool, schema, copy.url);
    const before = await recorded(schema, 'functions');
    const broken = join(copy.dir, 'functions', 'flow_park.sql');
    writeFileSync(broken, readFileSync(broken, 'utf8').replace('BEGIN', 'BEGIN\n  NOT SQL AT ALL;'));
    const file = join(copy.dir, 'functions', 'now_ms.sql');
    writeFileSync(file, `${readFileSync(file, 'utf8')}-- changed too\n`);
    await expect(migrateFrom(pool, schema, copy.url)).rejects.toThrow(
      `stormguard migrations: ${broken} does not apply: syntax error`,
    );
    expect(await recorded(schema, 'functions')).toEqual(before);
  });

  it('stormguard migrate refuses a schema whose recorded migration differs, with exit code 1 and the fix', async () => {
    await ensureCliBuilt('migrate');
    const schema = uniqueSchema();
    await migrate(pool, schema);
    // As if the schema had applied another 004-dead-letters.sql than the one shipped now.
    await pool.query(`UPDATE "${schema}".migrations SET checksum = repeat('0', 64) WHERE version = 4`);
    const refused = await cli('migrate', '--postgres', bed.url, '--schema', schema);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(
      `stormguard: stormguard migrations: ${join(ROOT, 'dist/postgres/sql/004-dead-letters.sql')} is not the migration`,
    );
    expect(refused.stderr).toContain(`UPDATE "${schema}".migrations SET checksum = NULL WHERE version = 4`);
  }, 120_000);
});
