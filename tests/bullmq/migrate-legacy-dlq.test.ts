import { Queue } from 'bullmq';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { PostgresDeadLetterStore } from '../../src/postgres/dead-letter-store.js';
import { RedisAuditLog } from '../../src/redis/audit-log.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { cli, ensureCliBuilt } from '../helpers/cli.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { uniqueSchema } from '../helpers/postgres-server.js';
import { deadLetter, redisForFile, uniqueQueue } from './dlq-fixtures.js';

beforeAll(() => ensureCliBuilt('migrate'), 120_000);
const env = redisForFile();
const postgres = postgresBed();
const DAY = 86_400_000;

/**
 * A dead-letter queue as stormguard kept it before the dead-letter store: the BullMQ queue `<queue>-dlq`,
 * paused, one job per record (id `dl-<job id>`, the record as its data), plus one job that is no record.
 */
async function legacyDlq(
  queue: string,
  records: number,
  deadLetteredAt: (i: number) => number = (i) => 10_000 + i,
): Promise<Queue> {
  const old = new Queue(`${queue}-dlq`, { connection: env.connection });
  await old.pause();
  for (let i = 0; i < records; i++) {
    const { queue: _dropped, ...record } = deadLetter(`job-${i}`, { deadLetteredAt: deadLetteredAt(i) });
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

  it('counts what retention would drop before it moves anything, refuses without --allow-evict (exit 2), and with it moves every record, each filing keeping its own', async () => {
    const queue = uniqueQueue('legacy');
    const prefix = `retained-${queue}`;
    const store = new RedisDeadLetterStore({ redis: env.redis, prefix });
    await store.registerQueue(queue, { maxAgeMs: 30 * DAY });
    // job-0..2 were dead-lettered 40 days ago, job-3 and job-4 an hour ago.
    const now = Date.now();
    const old = await legacyDlq(queue, 5, (i) => (i < 3 ? now - 40 * DAY + i : now - 3_600_000 + i));
    try {
      const args = ['migrate', '--redis', env.server.url, '--dead-letters-of', queue, '--prefix', prefix];
      const refused = await cli(...args);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('--allow-evict');
      expect(refused.stderr).toContain(
        `moving ${queue}-dlq (5 record(s)) would let the retention of queue "${queue}" drop 3 record(s): 3 dead-lettered more than maxAgeMs 30d ago`,
      );
      expect(await heldIds(old)).toEqual([
        'dl-job-0',
        'dl-job-1',
        'dl-job-2',
        'dl-job-3',
        'dl-job-4',
        'stray',
      ]);
      expect(await store.count(queue)).toBe(0);

      const allowed = await cli(...args, '--allow-evict', '--json');
      expect(allowed.code).toBe(1); // the stray job is kept
      expect(JSON.parse(allowed.stdout).deadLetters[0]).toMatchObject({ moved: 5, evicted: 3 });
      expect(await heldIds(old)).toEqual(['stray']);
      // Each old record was kept by its own filing and dropped by the next: the last old one went when
      // job-3 was filed.
      const { records } = await store.list(queue, { limit: 10 });
      expect(records.map((r) => r.jobId)).toEqual(['job-3', 'job-4']);
      expect(await store.queue(queue)).toMatchObject({ count: 2, evicted: 3 });
      const audit = await new RedisAuditLog({ redis: env.redis, prefix }).list({ limit: 10 });
      expect(audit.entries.map((e) => [e.action, e.target, e.detail?.count, e.detail?.reasons])).toEqual(
        [3, 2, 1].map(() => ['dead-letters.evict', queue, 1, { 'max-attempts': 1 }]),
      );
    } finally {
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
