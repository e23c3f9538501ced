import { createPostgresBackend, Queue } from 'bullmq';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createWorker } from '../../src/bullmq/worker.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { waitFor } from '../helpers/redis-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 4 });
});
afterAll(async () => {
  await pool?.end();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** A stormguard worker on BullMQ's PostgreSQL backend, in BullMQ schema `bullSchema`. */
function workerOn(bullSchema: string, migrate: boolean, autorun = true) {
  return createWorker('payments', async () => 'paid', {
    workerOptions: { autorun },
    connection: { connectionString: bed.url, schema: bullSchema, ...(migrate ? { migrate } : {}) } as never,
    backend: createPostgresBackend as never,
    policy: 'idempotent-internal',
    deadLetters: new PostgresDeadLetterStore({ connection: pool, schema: uniqueSchema() }),
  });
}

describe('a worker on BullMQ PostgreSQL whose run loop cannot fetch', () => {
  it('closes with one clear error when BullMQ\'s schema was never migrated (no "migrate: true")', async () => {
    const worker = workerOn(uniqueSchema('bq'), false);
    const errors: Error[] = [];
    worker.on('error', (error) => errors.push(error));
    let closed = false;
    worker.once('closed', () => {
      closed = true;
    });
    await waitFor(() => closed, 10_000, 'the worker to close');
    await worker.close();
    expect(errors.map((e) => e.name)).toEqual(['WorkerCannotRunError']);
    expect(errors[0]?.message).toContain('worker "payments" closed');
    expect(errors[0]?.message).toContain('migrate: true');
    expect(errors[0]?.message).toContain('runMigrations');
    expect((errors[0]?.cause as Error | undefined)?.name).toBe('SchemaMigrationRequiredError');
    expect(worker.isRunning()).toBe(false);
  });

  it('with nobody listening for errors, logs that error once', async () => {
    const logged: unknown[] = [];
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      logged.push(args[0]);
    });
    const worker = workerOn(uniqueSchema('bq'), false);
    let closed = false;
    worker.once('closed', () => {
      closed = true;
    });
    await waitFor(() => closed, 10_000, 'the worker to close');
    await worker.close();
    expect(logged.map((e) => (e as Error).name)).toEqual(['WorkerCannotRunError']);
  });

  it('backs off 1 s, then 2 s, on a fetch error it cannot process, and takes jobs again once it can', async () => {
    const bullSchema = uniqueSchema('bq');
    const worker = workerOn(bullSchema, true, false);
    await worker.waitUntilReady();
    // BullMQ's claim function gone: every fetch fails with "function does not exist", not a connection error.
    await pool.query(`ALTER FUNCTION ${bullSchema}.move_to_active RENAME TO move_to_active_gone`);
    const at: number[] = [];
    worker.on('error', () => at.push(performance.now()));
    const running = worker.run();
    try {
      await waitFor(() => at.length >= 3, 10_000, 'three failed fetches');
      expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);
      expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(1_950);
      await pool.query(`ALTER FUNCTION ${bullSchema}.move_to_active_gone RENAME TO move_to_active`);
      const queue = new Queue(
        'payments',
        { connection: { connectionString: bed.url, schema: bullSchema } } as never,
        createPostgresBackend as never,
      );
      try {
        const job = await queue.add('charge', { amount: 1 });
        await waitFor(async () => (await job.getState()) === 'completed', 10_000, 'the job to complete');
      } finally {
        await queue.close();
      }
    } finally {
      await worker.close();
      await running;
    }
  }, 30_000);
});
