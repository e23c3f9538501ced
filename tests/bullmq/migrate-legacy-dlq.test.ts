import { Queue } from 'bullmq';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { cli, ensureCliBuilt } from '../helpers/cli.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { deadLetter, redisForFile, uniqueQueue } from './dlq-fixtures.js';

beforeAll(() => ensureCliBuilt('migrate'), 120_000);
const env = redisForFile();
const postgres = postgresBed();

/**
 * A dead-letter queue as stormguard kept it before the dead-letter store: the BullMQ queue `<queue>-dlq`,
 * paused, one job per record (id `dl-<job id>`, the record as its data), plus one job that is no record.
 */
async function legacyDlq(queue: string, records: number): Promise<Queue> {
  const old = new Queue(`${queue}-dlq`, { connection: env.connection });
  await old.pause();
  for (let i = 0; i < records; i++) {
    const { queue: _dropped, ...record } = deadLetter(`job-${i}`, { deadLetteredAt: 10_000 + i });
    await old.add(record.name, { ...record, queue }, { jobId: `dl-job-${i}` });
  }
  await old.add('stray', { hello: 'world' }, { jobId: 'stray' });
  return old;
}

async function heldIds(old: Queue): Promise<string[]> {
  return (await old.getJobs(['paused', 'wait'] as never)).map((j) => String(j.id)).sort();
}

describe('stormguard migrate --dead-letters-of', () => {
  it('moves an old <queue>-dlq into the Redis store once, keeps what is not a record, and runs again safely', async () => {
    const queue = uniqueQueue('legacy');
    const prefix = `migrated-${queue}`;
    const store = new RedisDeadLetterStore({ redis: env.redis, prefix });
    const old = await legacyDlq(queue, 5);
    try {
      // An earlier run that was interrupted after filing job-2's record, before removing its job.
      const interrupted = deadLetter('job-2', { queue, deadLetteredAt: 10_002 });
      await store.file(interrupted, { attempts: interrupted.attemptsMade, deferrals: 0 }, 60_000);

      const args = ['migrate', '--redis', env.server.url, '--dead-letters-of', queue, '--prefix', prefix];
      const first = await cli(...args, '--json');
      expect(first.code).toBe(1);
      expect(JSON.parse(first.stdout)).toEqual({
        deadLetters: [
          {
            queue,
            from: `${queue}-dlq`,
            moved: 4,
            alreadyFiled: 1,
            kept: [{ jobId: 'stray', problem: expect.stringMatching(/jobId/) }],
          },
        ],
      });
      expect(await heldIds(old)).toEqual(['stray']);
      const { records } = await store.list(queue, { limit: 10 });
      expect(records.map((r) => r.jobId)).toEqual(['job-0', 'job-1', 'job-2', 'job-3', 'job-4']);
      expect(records[0]).toMatchObject({ queue, reason: 'max-attempts', dependency: 'search', replays: 0 });
      expect((await store.queues()).map((q) => q.queue)).toEqual([queue]);

      const again = await cli(...args);
      expect(again.stdout).toMatch(new RegExp(`${queue}-dlq: moved 0 record\\(s\\).*kept 1 job`));
      expect(await store.count(queue)).toBe(5);
    } finally {
      await old.obliterate({ force: true });
      await old.close();
    }
  });

  it('moves them into the PostgreSQL store with --postgres, after migrating the schema', async () => {
    const queue = uniqueQueue('legacy');
    const schema = uniqueSchema();
    const old = await legacyDlq(queue, 3);
    const pool = new pg.Pool({ connectionString: postgres.url, max: 2 });
    try {
      const result = await cli(
        'migrate',
        '--postgres',
        postgres.url,
        '--schema',
        schema,
        '--redis',
        env.server.url,
        '--dead-letters-of',
        queue,
      );
      expect(result.stdout).toMatch(/now at version \d+/);
      expect(result.stdout).toMatch(/moved 3 record\(s\)/);
      const store = new PostgresDeadLetterStore({ connection: pool, schema, migrate: false });
      expect(await store.count(queue)).toBe(3);
      expect(await heldIds(old)).toEqual(['stray']);
    } finally {
      await pool.end();
      await old.obliterate({ force: true });
      await old.close();
    }
  });

  it('needs --redis and a queue name, naming them (exit 2)', async () => {
    const noRedis = await cli('migrate', '--dead-letters-of', 'index');
    expect(noRedis.code).toBe(2);
    expect(noRedis.stderr).toMatch(/--dead-letters-of: needs --redis/);
    const badName = await cli('migrate', '--dead-letters-of', 'a:b', '--redis', 'redis://127.0.0.1:1');
    expect(badName.code).toBe(2);
    expect(badName.stderr).toMatch(/"a:b" is not a BullMQ queue name/);
  });
});
