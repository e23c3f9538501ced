import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { PostgresBudgetStore } from '../../src/postgres/budget-store.js';
import { migrate, migrations } from '../../src/postgres/migrations.js';
import { cli, ensureCliBuilt } from '../helpers/cli.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { freePort } from '../helpers/redis-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(async () => {
  await ensureCliBuilt('migrate');
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
}, 120_000);
afterAll(async () => {
  await pool.end();
});

describe('stormguard migrate', () => {
  it('creates the named schema, then finds it up to date', async () => {
    const schema = uniqueSchema();
    const first = await cli('migrate', '--postgres', bed.url, '--schema', schema);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    const functions = readdirSync(new URL('../../src/postgres/sql/functions/', import.meta.url))
      .map((file) => file.replace(/\.sql$/, ''))
      .sort();
    expect(first.stdout).toBe(
      `schema "${schema}": applied ${migrations()
        .map((m) => m.file)
        .join(', ')}; now at version ${migrations().length}; applied functions ${functions.join(', ')}\n`,
    );
    const again = await cli('migrate', '--postgres', bed.url, '--schema', schema, '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({
      schema,
      applied: [],
      current: migrations().length,
      functions: [],
    });
    const text = await cli('migrate', '--postgres', bed.url, '--schema', schema);
    expect(text.stdout).toBe(`schema "${schema}" is up to date at version ${migrations().length}\n`);
  });

  it('refuses a missing or malformed --postgres and a bad schema with exit code 2, before connecting', async () => {
    const missing = await cli('migrate');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^stormguard: --postgres: required/);
    const mysql = await cli('migrate', '--postgres', 'mysql://db/app');
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toContain(
      '--postgres: "mysql://db/app" must start with postgres:// or postgresql://',
    );
    const schema = await cli('migrate', '--postgres', bed.url, '--schema', 'Shop');
    expect(schema.code).toBe(2);
    expect(schema.stderr).toContain('schema "Shop": use 1-63 lower-case letters');
  });

  it('fails with exit code 1 and the masked URL when PostgreSQL cannot be reached', async () => {
    const url = `postgres://app:secret@127.0.0.1:${await freePort()}/app`;
    const { code, stderr } = await cli('migrate', '--postgres', url);
    expect(code).toBe(1);
    expect(stderr).toContain(`cannot reach PostgreSQL at ${url.replace('secret', '***')}`);
    expect(stderr).not.toContain('secret');
  });
});

describe('stormguard breaker status --postgres', () => {
  it('lists the breakers of a schema and prefix', async () => {
    const schema = uniqueSchema();
    const store = new PostgresBreakerStore({ connection: pool, schema, prefix: 'cli' });
    const options = resolveBreakerOptions({ consecutiveFailures: 2, coolDownMs: 120_000 });
    await store.record('search', 'failure', options);
    await store.record('search', 'failure', options);
    await store.record('mail', 'success', options);
    const { code, stdout } = await cli(
      'breaker',
      'status',
      '--postgres',
      bed.url,
      '--schema',
      schema,
      '--prefix',
      'cli',
      '--json',
    );
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { prefix: string; breakers: Array<Record<string, number | string>> };
    expect(report.breakers.map((b) => [b.dependency, b.state])).toEqual([
      ['mail', 'closed'],
      ['search', 'open'],
    ]);
    const search = report.breakers[1]!;
    expect(Number(search.halfOpenAtMs) - Number(search.openedAtMs)).toBe(120_000);
  });

  it('says to run stormguard migrate when the schema holds no tables', async () => {
    const { code, stderr } = await cli(
      'breaker',
      'status',
      '--postgres',
      bed.url,
      '--schema',
      'never_migrated',
    );
    expect(code).toBe(1);
    expect(stderr).toContain('schema "never_migrated" holds no stormguard tables');
    expect(stderr).toContain('run stormguard migrate --postgres <url> --schema never_migrated');
  });

  it('refuses --redis with --postgres, and --schema without --postgres, with exit code 2', async () => {
    const both = await cli('breaker', 'status', '--postgres', bed.url, '--redis', 'redis://127.0.0.1:1');
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--redis and --postgres: name one backend, not both');
    const schemaOnly = await cli('breaker', 'status', '--schema', 'shop');
    expect(schemaOnly.code).toBe(2);
    expect(schemaOnly.stderr).toContain('--schema: applies to PostgreSQL only');
  });
});

describe('stormguard budget status|watch --postgres', () => {
  async function seeded(): Promise<string> {
    const schema = uniqueSchema();
    // Migrated first: the budget's first call would migrate it inside its 250 ms timeout, and degrade
    // (writing nothing) on a loaded machine.
    await migrate(pool, schema);
    const budget = new RetryBudget({
      store: new PostgresBudgetStore({ connection: pool, schema, prefix: 'cli' }),
      ratio: 0.5,
      minAllowance: 3,
    });
    budget.recordSuccess('search', 40);
    await budget.trySpend('search');
    await budget.close();
    return schema;
  }

  it('status lists every dependency of a schema and prefix with its counts and settings', async () => {
    const schema = await seeded();
    const args = ['--postgres', bed.url, '--schema', schema, '--prefix', 'cli'];
    const { code, stdout } = await cli('budget', 'status', ...args, '--json');
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      prefix: 'cli',
      dependencies: [
        {
          dependency: 'search',
          allowance: 20,
          spent: 1,
          denied: 0,
          successes: 40,
          headroom: 19,
          ratio: 0.5,
          windowMs: 60_000,
          minAllowance: 3,
        },
      ],
    });
    const table = await cli('budget', 'status', ...args);
    expect(table.stdout.split('\n')[1]).toMatch(/^search\s+20\s+1\s+0\s+40\s+19\s+0.5\s+3\s+1m$/);
  });

  it('watch prints a frame per interval, and says to migrate in a frame when the schema holds no tables', async () => {
    const schema = await seeded();
    const frames = await cli(
      'budget',
      'watch',
      '--postgres',
      bed.url,
      '--schema',
      schema,
      '--prefix',
      'cli',
      '--json',
      '--count',
      '2',
      '--interval',
      '100ms',
    );
    expect(frames.code).toBe(0);
    const lines = frames.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { dependencies: { spent: number }[] });
    expect(lines.map((l) => l.dependencies.map((d) => d.spent))).toEqual([[1], [1]]);
    const missing = await cli(
      'budget',
      'watch',
      '--postgres',
      bed.url,
      '--schema',
      'never_migrated',
      '--count',
      '1',
    );
    expect(missing.code).toBe(0);
    expect(missing.stdout).toContain(
      'cannot read the budgets from PostgreSQL: schema "never_migrated" holds no stormguard tables',
    );
  });
});
