import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { breakerStoreCases } from '../../src/breaker/store.case.js';
import { PostgresBreakerStore } from '../../src/postgres/breaker-store.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 8 });
});
afterAll(async () => {
  await pool.end();
});

// Each case gets a fresh schema; "connections" are stores sharing it, each with a pool of its own.
breakerStoreCases('PostgresBreakerStore', async (clock, connections) => {
  const schema = uniqueSchema();
  const stores = Array.from(
    { length: connections },
    () => new PostgresBreakerStore({ connection: bed.url, schema, timeOverride: clock, timeoutMs: 10_000 }),
  );
  return {
    stores,
    close: async () => {
      await Promise.all(stores.map((store) => store.close()));
    },
  };
});
