/**
 * The worker of docs/postgresql.md, "BullMQ on PostgreSQL", kept compiling and running: `npm test`
 * type-checks this file against the built package, and tests/postgres/example-worker.test.ts runs it
 * against a PostgreSQL of its own and checks that it completes a job.
 * Run it with `DATABASE_URL=postgres://… npx tsx examples/postgres-worker.ts` (Ctrl-C to stop).
 */
import { createPostgresBackend } from 'bullmq';
import pg from 'pg';
import { presets, RetryBudget } from 'stormguard';
import { createWorker } from 'stormguard/bullmq';
import { PostgresBudgetStore, PostgresDeadLetterStore } from 'stormguard/postgres';

// A stand-in for your own client.
const search = { index: async (docId: string) => ({ indexed: docId }) };

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// stormguard's stores: their tables are in the schema `stormguard`, created on first use.
const pool = new pg.Pool({ connectionString: url });
const budget = new RetryBudget({ store: new PostgresBudgetStore({ connection: pool }) });

const worker = createWorker<{ docId: string }>(
  'index',
  async (job, ctx) => ctx.call('search', () => search.index(job.data.docId)),
  {
    // BullMQ's own tables (schema `bullmq`): `migrate: true` creates them on first use. Without it, and
    // without BullMQ's migrations run first, the worker closes with an error saying so.
    connection: { connectionString: url, migrate: true },
    backend: createPostgresBackend,
    policy: presets.idempotentInternal,
    budget,
    deadLetters: new PostgresDeadLetterStore({ connection: pool }),
  },
);
worker.on('error', (error) => console.error(error.message));
worker.on('completed', (job) => console.log(`completed ${job.id}`));

process.once('SIGINT', async () => {
  await worker.close();
  await budget.close();
  await pool.end();
});
