import { createPostgresBackend, Queue } from 'bullmq';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayOrigin } from '../../src/bullmq/dead-letter-ids.js';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { PostgresReplayRunStore } from '../../src/postgres/replay-run-store.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { createReplayRun, startReplayRun } from '../../src/runtime/replay/replay-runs.js';
import { cli, ensureCliBuilt } from '../helpers/cli.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';

const bed = postgresBed();
let pool: pg.Pool;
beforeAll(async () => {
  await ensureCliBuilt('dlq');
  pool = new pg.Pool({ connectionString: bed.url, max: 2 });
}, 120_000);
afterAll(async () => {
  await pool?.end();
});

describe('stormguard dlq --postgres', () => {
  it('lists and replays dead letters kept in PostgreSQL onto a queue on BullMQ 6 PostgreSQL backend', async () => {
    const schema = uniqueSchema();
    const store = new PostgresDeadLetterStore({ connection: pool, schema });
    for (const [i, reason] of (['permanent', 'budget-exhausted', 'budget-exhausted'] as const).entries())
      await store.file(
        sampleDeadLetter(`job-${i}`, { queue: 'pg-index', reason, deadLetteredAt: Date.now() + i }),
        { attempts: 1, deferrals: 0 },
        60_000,
      );
    const pgFlags = ['--postgres', bed.url, '--schema', schema];

    const queues = await cli('dlq', 'list', ...pgFlags, '--json');
    expect(JSON.parse(queues.stdout)).toMatchObject({ queues: [{ queue: 'pg-index', count: 3 }] });
    const list = await cli('dlq', 'list', 'pg-index', ...pgFlags, '--reason', 'budget-exhausted');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/2 of 2 matching \(3 in the queue\)/);
    const unknown = await cli('dlq', 'list', 'nope', ...pgFlags);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/queues with dead letters: pg-index/);

    // The workers' queue: it creates BullMQ's own schema, as a worker fleet would have.
    const queue = new Queue(
      'pg-index',
      { connection: { connectionString: bed.url, migrate: true } } as never,
      createPostgresBackend as never,
    );
    await queue.getJobCounts();
    const replay = await cli(
      'dlq',
      'replay',
      'pg-index',
      ...pgFlags,
      '--reason',
      'budget-exhausted',
      '--json',
    );
    expect(replay.stderr).toBe('');
    expect(JSON.parse(replay.stdout)).toMatchObject({ matched: 2, failed: [], interrupted: false });
    expect(await store.count('pg-index')).toBe(1);
    try {
      const jobs = await queue.getJobs(['wait', 'waiting'] as never);
      expect(jobs.map((j) => replayOrigin(j).originalJobId).sort()).toEqual(['job-1', 'job-2']);
    } finally {
      await queue.close();
    }
  }, 60_000);

  it('lists the stored bulk replay runs and goes on with one (dlq runs, dlq replay --run)', async () => {
    const schema = uniqueSchema();
    const store = new PostgresDeadLetterStore({ connection: pool, schema });
    for (let i = 0; i < 4; i++)
      await store.file(
        sampleDeadLetter(`run-${i}`, {
          queue: 'pg-runs',
          reason: 'breaker-open',
          deadLetteredAt: Date.now() + i,
        }),
        { attempts: 1, deferrals: 0 },
        60_000,
      );
    // A run started elsewhere (a console that stopped): its snapshot and its rate are stored.
    const runs = new PostgresReplayRunStore({ connection: pool, schema });
    const created = await createReplayRun({ store, runs }, 'pg-runs', {
      reason: 'breaker-open',
      by: 'alice',
    });
    await startReplayRun({ runs }, created.id, { ratePerSecond: 100, by: 'alice' });
    const pgFlags = ['--postgres', bed.url, '--schema', schema];

    const listed = await cli('dlq', 'runs', ...pgFlags, '--json');
    expect(listed.stderr).toBe('');
    expect(JSON.parse(listed.stdout)).toMatchObject({
      runs: [{ id: created.id, queue: 'pg-runs', status: 'pending', total: 4, startedBy: 'alice' }],
    });
    const text = await cli('dlq', 'runs', 'pg-runs', ...pgFlags);
    expect(text.stdout).toMatch(
      new RegExp(`^${created.id}\\s+pg-runs\\s+pending\\s+0/4 moved\\s+0 failed\\s+alice`, 'm'),
    );

    const clash = await cli(
      'dlq',
      'replay',
      'pg-runs',
      ...pgFlags,
      '--run',
      created.id,
      '--reason',
      'permanent',
    );
    expect(clash.code).toBe(2);
    expect(clash.stderr).toMatch(/--run: .*leave out --reason/);
    const missing = await cli('dlq', 'replay', 'pg-runs', ...pgFlags, '--run', '999');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no replay run 999 for queue "pg-runs"/);

    const queue = new Queue(
      'pg-runs',
      { connection: { connectionString: bed.url, migrate: true } } as never,
      createPostgresBackend as never,
    );
    await queue.getJobCounts();
    try {
      const replay = await cli('dlq', 'replay', 'pg-runs', ...pgFlags, '--run', created.id, '--json');
      expect(replay.stderr).toBe('');
      expect(replay.code).toBe(0);
      expect(JSON.parse(replay.stdout)).toMatchObject({
        id: created.id,
        status: 'done',
        moved: 4,
        failed: 0,
      });
      expect(await store.count('pg-runs')).toBe(0);
      const jobs = await queue.getJobs(['wait', 'waiting'] as never);
      expect(jobs.map((j) => replayOrigin(j).originalJobId).sort()).toEqual([
        'run-0',
        'run-1',
        'run-2',
        'run-3',
      ]);
      // Done: run again, it moves nothing more.
      const again = await cli('dlq', 'replay', 'pg-runs', ...pgFlags, '--run', created.id);
      expect(again.stdout).toMatch(/replay run \d+ of queue "pg-runs": done, 4 of 4 moved/);
      expect(await queue.count()).toBe(4);
    } finally {
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
    }
  }, 60_000);

  it('a schema stormguard never migrated says to run stormguard migrate', async () => {
    const result = await cli('dlq', 'list', '--postgres', bed.url, '--schema', 'never_migrated_dlq');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/run stormguard migrate --postgres <url> --schema never_migrated_dlq/);
  });
});
