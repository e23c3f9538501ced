import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { TestRedis } from '../helpers/redis-server.js';

/**
 * 25 000 records: every other one `permanent` (else `max-attempts`), every fifth on `mail` (else
 * `search`), dead-lettered 1 ms apart from T. So `permanent` holds 12 500, `mail` 5 000.
 */
const RECORDS = 25_000;
const T = 1_700_000_000_000;

async function fill(store: RedisDeadLetterStore): Promise<void> {
  for (let from = 0; from < RECORDS; from += 500)
    await Promise.all(
      Array.from({ length: 500 }, (_, k) => {
        const i = from + k;
        return store.file(
          sampleDeadLetter(`job-${i}`, {
            reason: i % 2 === 0 ? 'permanent' : 'max-attempts',
            dependency: i % 5 === 0 ? 'mail' : 'search',
            deadLetteredAt: T + i,
          }),
          { attempts: 1, deferrals: 0 },
          600_000,
        );
      }),
    );
}

async function zintercardCalls(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(/cmdstat_zintercard:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

// The same counts on a Redis with ZINTERCARD (7 and later) and on one without it (an older server,
// stood in for by renaming the command away): one intersection or a walk of the smallest index.
describe.each([
  { server: 'Redis with ZINTERCARD', args: [] as string[], intersects: true },
  { server: 'Redis without ZINTERCARD', args: ['--rename-command', 'ZINTERCARD', ''], intersects: false },
])('counting dead letters with two filter fields on $server', ({ args, intersects }) => {
  let server: TestRedis;
  let redis: Redis;
  let store: RedisDeadLetterStore;

  beforeAll(async () => {
    server = await TestRedis.start({ args });
    redis = new Redis(server.url);
    store = new RedisDeadLetterStore({ redis, prefix: 'count' });
    await fill(store);
  }, 120_000);

  afterAll(async () => {
    redis?.disconnect();
    await server?.close();
  });

  it('counts a small index against a large one exactly', async () => {
    await redis.config('RESETSTAT');
    // Every tenth record: permanent and on mail.
    expect(await store.count('index', { reason: 'permanent', dependency: 'mail' })).toBe(2_500);
    expect(await store.count('index', { reason: 'max-attempts', dependency: 'mail' })).toBe(2_500);
    expect((await zintercardCalls(redis)) > 0).toBe(intersects);
  });

  it('walks an index past ten chunks, and any count over a time range, in chunks', async () => {
    await redis.config('RESETSTAT');
    // Even and not a multiple of 5: 12 500 - 2 500.
    expect(await store.count('index', { reason: 'permanent', dependency: 'search' })).toBe(10_000);
    // From the 20 000th record on: 5 000 records, every tenth of them permanent on mail.
    expect(await store.count('index', { reason: 'permanent', dependency: 'mail', since: T + 20_000 })).toBe(
      500,
    );
    expect(await zintercardCalls(redis)).toBe(0);
  });
});
