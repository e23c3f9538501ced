import { createPostgresBackend, Queue } from 'bullmq';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { IpcProcess } from '../helpers/ipc-process.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { waitFor } from '../helpers/redis-server.js';

/**
 * Several worker processes share one queue on BullMQ's PostgreSQL backend; every job fails its first
 * attempt and succeeds its second. A retry is `moveToDelayed` and a `DelayedError`: no job may end
 * completed without its second attempt having run, and none may end anywhere but completed with the
 * second attempt's result (BullMQ's PostgreSQL backend can hit a deadlock between workers finishing jobs).
 * A soak: deadlocks come when they come here; completion-conflicts.test.ts raises them on purpose.
 */
const PROCESSES = Number(process.env.SHARED_QUEUE_PROCESSES ?? 4);
const JOBS = Number(process.env.SHARED_QUEUE_JOBS ?? 1_000);
const CONCURRENCY = 8;

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
});
afterAll(async () => {
  await pool?.end();
});

describe('a queue shared by worker processes on BullMQ PostgreSQL, every job retried once', () => {
  it("completes every job with its second attempt's result, none failed, none completed unretried", async () => {
    const bullSchema = uniqueSchema('bq');
    const storeSchema = uniqueSchema();
    const runsSchema = uniqueSchema('runs');
    await pool.query(`CREATE SCHEMA "${runsSchema}"`);
    await pool.query(
      `CREATE TABLE "${runsSchema}".runs (job_id text NOT NULL, attempt int NOT NULL, pid int NOT NULL)`,
    );
    const queueName = 'shared';
    const queue = new Queue(
      queueName,
      { connection: { connectionString: bed.url, schema: bullSchema, migrate: true } } as never,
      createPostgresBackend as never,
    );
    const processes: IpcProcess[] = [];
    try {
      await queue.waitUntilReady();
      const setup = JSON.stringify({
        url: bed.url,
        bullSchema,
        storeSchema,
        runsSchema,
        queue: queueName,
        concurrency: CONCURRENCY,
      });
      for (let i = 0; i < PROCESSES; i++)
        processes.push(
          new IpcProcess(new URL('./fixtures/shared-queue-worker.ts', import.meta.url), [setup]),
        );
      await Promise.all(processes.map((p) => p.next('ready')));
      // removeOnComplete as most deployments add jobs: BullMQ deletes the job's row when it completes.
      const jobs = await queue.addBulk(
        Array.from({ length: JOBS }, (_, i) => ({
          name: 'work',
          data: { i },
          opts: { removeOnComplete: true },
        })),
      );
      const ids = jobs.map((job) => job.id ?? '');
      await Promise.all(processes.map((p) => p.request({ type: 'go' }, 'going')));
      await waitFor(
        async () => {
          const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
          return Object.values(counts).every((n) => n === 0);
        },
        240_000,
        `${JOBS} jobs to end`,
        200,
      );
      const seen = await Promise.all(processes.map((p) => p.request({ type: 'stop' }, 'stopped', 120_000)));
      const completedEvents = seen.flatMap((s) => s.completed as { jobId: string; result: unknown }[]);
      const failedEvents = seen.flatMap((s) => s.failed as { jobId: string; reason: string }[]);
      const errorEvents = seen.flatMap((s) => s.errors as string[]);

      const runs = await pool.query<{ job_id: string; attempts: number[] }>(
        `SELECT job_id, array_agg(attempt ORDER BY attempt) AS attempts FROM "${runsSchema}".runs GROUP BY job_id`,
      );
      const attemptsOf = new Map(runs.rows.map((r) => [r.job_id, r.attempts]));
      const resultOf = new Map(completedEvents.map((e) => [e.jobId, e.result]));
      const failed = await queue.getJobs(['failed'], 0, JOBS);
      const left = await queue.getJobCounts('completed', 'waiting', 'active', 'delayed');
      const unretried = ids.filter((id) => resultOf.has(id) && !(attemptsOf.get(id) ?? []).includes(2));
      const wrongResult = ids.filter(
        (id) =>
          resultOf.has(id) && JSON.stringify(resultOf.get(id)) !== JSON.stringify({ job: id, attempt: 2 }),
      );
      const notCompleted = ids.filter((id) => !resultOf.has(id));
      const ranTwice = [...attemptsOf].filter(([, attempts]) => attempts.filter((a) => a === 2).length > 1);
      const store = new PostgresDeadLetterStore({ connection: pool, schema: storeSchema });
      const { records } = await store.list(queueName, { limit: 100 });
      const summary = {
        completedEvents: completedEvents.length,
        notCompleted,
        left,
        failed: failed.map((job) => `${job.id}: ${job.failedReason}`),
        unretried,
        wrongResult: wrongResult.map((id) => `${id}: ${JSON.stringify(resultOf.get(id))}`),
        secondAttemptRanTwice: ranTwice.map(([id]) => id),
        deadLetters: records.map((r) => `${r.jobId}: ${r.reason} ${r.detail}`),
        failedEvents: failedEvents.length,
        errorEvents: errorEvents.slice(0, 5),
        errorEventCount: errorEvents.length,
      };
      // One comparison, so that a failure shows every count at once.
      expect(summary).toEqual({
        ...summary,
        completedEvents: JOBS,
        notCompleted: [],
        failed: [],
        unretried: [],
        wrongResult: [],
        secondAttemptRanTwice: [],
        deadLetters: [],
      });
    } finally {
      await Promise.all(processes.map((p) => p.close()));
      await queue.close();
    }
  }, 420_000);
});
