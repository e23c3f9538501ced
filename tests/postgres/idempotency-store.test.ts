import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { FakeClock } from '../../src/common/clock.js';
import { idempotencyStoreCases } from '../../src/idempotency/store.case.js';
import { PostgresIdempotencyStore } from '../../src/postgres/idempotency-store.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  await pool.end();
});

idempotencyStoreCases('PostgresIdempotencyStore', async () => {
  const clock = new FakeClock(1_700_000_000_000);
  const store = new PostgresIdempotencyStore({
    connection: pool,
    schema: uniqueSchema(),
    timeOverride: clock,
  });
  return {
    store,
    // Time on the store's (test) clock: expiry is decided against it on the server.
    elapse: async (_key, ms) => {
      clock.advance(ms);
    },
    close: () => store.close(),
  };
});
