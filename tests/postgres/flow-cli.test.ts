import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresFlowStore } from '../../src/postgres/flow-store.js';
import {
  expectSeededStatusReport,
  SEEDED_STATUS_TEXT,
  STATUS_ARGS,
  seedFlowStatus,
} from '../flow/flow-status-fixture.js';
import { cli, ensureCliBuilt } from '../helpers/cli.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(async () => {
  await ensureCliBuilt('flow');
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
}, 120_000);
afterAll(async () => {
  await pool.end();
});

describe('stormguard flow --postgres', () => {
  it('status shows the switch and, per dependency, whether it is down, its paused workers and how many jobs are parked', async () => {
    const schema = uniqueSchema();
    await seedFlowStatus(new PostgresFlowStore({ connection: pool, schema, prefix: 'cli' }));
    const backend = ['--postgres', bed.url, '--schema', schema];
    const { code, stdout } = await cli(...STATUS_ARGS, ...backend, '--json');
    expect(code).toBe(0);
    expectSeededStatusReport(stdout);
    const human = await cli('flow', 'status', 'search', '--queue', 'index', '--prefix', 'cli', ...backend);
    expect(human.stdout).toBe(SEEDED_STATUS_TEXT);
  });

  it('off turns flow control off for the prefix, on turns it back on', async () => {
    const schema = uniqueSchema();
    const store = new PostgresFlowStore({ connection: pool, schema, prefix: 'shop' });
    await store.read('search'); // the schema, migrated as the workers would
    const args = ['--postgres', bed.url, '--schema', schema, '--prefix', 'shop'];
    const off = await cli('flow', 'off', ...args);
    expect(off.code).toBe(0);
    expect(off.stdout).toMatch(/^flow control is OFF fleet-wide \(prefix shop\)/);
    expect(await store.switchedOff()).toBe(true);
    expect(await new PostgresFlowStore({ connection: pool, schema }).switchedOff()).toBe(false);
    const on = await cli('flow', 'on', ...args, '--json');
    expect(on.stdout).toBe(`${JSON.stringify({ prefix: 'shop', on: true }, null, 2)}\n`);
    expect(await store.switchedOff()).toBe(false);
  });

  it('fails with exit code 1 and says to migrate when the schema holds no flow-control tables', async () => {
    const { code, stderr } = await cli('flow', 'off', '--postgres', bed.url, '--schema', 'never_migrated');
    expect(code).toBe(1);
    expect(stderr).toContain('schema "never_migrated" holds no stormguard tables');
    expect(stderr).toContain('run stormguard migrate --postgres <url> --schema never_migrated');
  });
});
