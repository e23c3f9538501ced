import { createPostgresBackend, Queue } from 'bullmq';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker } from '../../src/bullmq/worker.js';
import { PermanentError } from '../../src/errors/permanent-error.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { quoteIdentifier, uniqueSchema } from '../helpers/postgres-server.js';
import { waitFor } from '../helpers/redis-server.js';

/**
 * BullMQ's PostgreSQL backend completes a job in one transaction; between worker processes it can lose a
 * deadlock (SQLSTATE 40P01), and BullMQ then fails the job whose processor succeeded. Here the server
 * itself raises 40P01 from a trigger on every other completion (a sequence counts them: a rolled-back
 * transaction does not take its `nextval` back), so every job's first completion is a deadlock victim.
 */
const JOBS = 20;

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
});
afterAll(async () => {
  await pool?.end();
});

/**
 * Makes the server fail a job's move from active to `state` with 40P01 when `fails` holds for the move's
 * number n (1, 2, …).
 */
async function deadlockEnds(bullSchema: string, state: 'completed' | 'failed', fails: string): Promise<void> {
  const schema = quoteIdentifier(bullSchema);
  await pool.query(`CREATE SEQUENCE ${schema}.completion_tries`);
  await pool.query(`
    CREATE FUNCTION ${schema}.deadlock_completion() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE n bigint := nextval('${bullSchema}.completion_tries');
    BEGIN
      IF ${fails} THEN
        RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01';
      END IF;
      RETURN NEW;
    END $$`);
  await pool.query(`
    CREATE TRIGGER deadlock_completion BEFORE UPDATE ON ${schema}.job FOR EACH ROW
    WHEN (OLD.state = 'active' AND NEW.state = '${state}')
    EXECUTE FUNCTION ${schema}.deadlock_completion()`);
}

async function runJobs(fails: string, state: 'completed' | 'failed' = 'completed') {
  const bullSchema = uniqueSchema('bq');
  const storeSchema = uniqueSchema();
  const connection = { connectionString: bed.url, schema: bullSchema, migrate: true };
  const queue = new Queue('charges', { connection } as never, createPostgresBackend as never);
  await queue.waitUntilReady();
  await deadlockEnds(bullSchema, state, fails);
  const deadLetters = new PostgresDeadLetterStore({ connection: pool, schema: storeSchema });
  const runs = new Map<string, number>();
  const worker = createWorker(
    'charges',
    async (job) => {
      runs.set(job.id ?? '', (runs.get(job.id ?? '') ?? 0) + 1);
      if (state === 'failed') throw new PermanentError('card number is not valid');
      return { charged: (job.data as { n: number }).n };
    },
    {
      connection: connection as never,
      backend: createPostgresBackend as never,
      policy: 'idempotent-internal',
      deadLetters,
      // A job left active is brought back by the stalled-job check within seconds, not 30.
      workerOptions: { autorun: false, lockDuration: 2_000, stalledInterval: 500 },
      onWarning: () => undefined,
    },
  );
  const errors: string[] = [];
  worker.on('error', (error) => errors.push(error.message));
  // Every write-conflict event, tallied as "write code again".
  const conflicts: Record<string, number> = {};
  worker.events.on('write-conflict', (e) => {
    const key = `${e.write} ${e.code} ${e.again ? 'again' : 'gave up'}`;
    conflicts[key] = (conflicts[key] ?? 0) + 1;
  });
  try {
    await worker.waitUntilReady();
    await queue.addBulk(Array.from({ length: JOBS }, (_, n) => ({ name: 'charge', data: { n } })));
    void worker.run();
    await waitFor(
      async () => {
        const counts = await queue.getJobCounts('completed', 'failed');
        return (counts.completed ?? 0) + (counts.failed ?? 0) === JOBS;
      },
      30_000,
      `${JOBS} jobs to end`,
    );
    await worker.close();
    const completed = await queue.getJobs(['completed'], 0, JOBS);
    const failed = await queue.getJobs(['failed'], 0, JOBS);
    const { records } = await deadLetters.list('charges', { limit: 100 });
    return { completed, failed, records, runs, errors, conflicts };
  } finally {
    await worker.close();
    await queue.close();
  }
}

describe('a job whose completion loses a deadlock on BullMQ PostgreSQL', () => {
  it('is completed all the same, with its result, the processor run once', async () => {
    const { completed, failed, records, runs, errors, conflicts } = await runJobs('n % 2 = 1');
    expect(failed.map((job) => `${job.id}: ${job.failedReason}`)).toEqual([]);
    expect(records).toEqual([]);
    expect(completed.map((job) => job.returnvalue).sort((a, b) => a.charged - b.charged)).toEqual(
      Array.from({ length: JOBS }, (_, n) => ({ charged: n })),
    );
    expect([...runs.values()]).toEqual(Array(JOBS).fill(1));
    expect(errors).toEqual([]);
    // Each job's first completion was rolled back and written again, and told.
    expect(conflicts).toEqual({ 'completion 40P01 again': JOBS });
  });

  it('that keeps losing ends failed with a dead letter saying its processor succeeded, run once', async () => {
    const { completed, failed, records, runs, conflicts } = await runJobs('true');
    expect(completed).toEqual([]);
    expect(failed.map((job) => job.failedReason)).toEqual(Array(JOBS).fill('deadlock detected'));
    expect(records).toHaveLength(JOBS);
    for (const record of records) {
      expect(record.reason).toBe('permanent');
      expect(record.lastError.classification).toEqual({ retryable: false, reason: 'completion-failed' });
      expect(record.detail).toContain('the processor succeeded');
    }
    expect([...runs.values()]).toEqual(Array(JOBS).fill(1));
    // Five tries a job: four written again, the last given up.
    expect(conflicts).toEqual({ 'completion 40P01 again': 4 * JOBS, 'completion 40P01 gave up': JOBS });
  });

  it('a failure that loses a deadlock is written again: the job ends failed at once, never stalled', async () => {
    const { failed, records, runs, errors, conflicts } = await runJobs('n % 2 = 1', 'failed');
    expect(errors).toEqual([]);
    expect(failed.map((job) => [job.failedReason, job.stalledCounter])).toEqual(
      Array(JOBS).fill([expect.stringContaining('card number is not valid'), 0]),
    );
    // Written again, a failure keeps one copy of its stack trace.
    expect(failed.map((job) => job.stacktrace?.length)).toEqual(Array(JOBS).fill(1));
    expect(records).toHaveLength(JOBS);
    expect([...runs.values()]).toEqual(Array(JOBS).fill(1));
    expect(conflicts).toEqual({ 'failure 40P01 again': JOBS });
  });
});
