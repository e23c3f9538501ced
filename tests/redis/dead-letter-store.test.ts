import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/common/clock.js';
import { queueTag } from '../../src/common/keys.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { StoredDeadLetter } from '../../src/runtime/contracts.js';
import { describeDeadLetterStore, sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { TestRedis } from '../helpers/redis-server.js';

let server: TestRedis;
let redis: Redis;
let prefixes = 0;
/** A fresh prefix per store: tests never see each other's keys. */
const freshPrefix = () => `sgtest-${process.pid}-${prefixes++}`;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

describeDeadLetterStore('RedisDeadLetterStore', async (clock) => {
  const store = new RedisDeadLetterStore({ redis, prefix: freshPrefix(), clock });
  return {
    store,
    damage: async (queue, id) => {
      await redis.hset(`${queueTag(store.prefix, queue)}:dl:rec`, id, '{"jobId":42}');
    },
    close: async () => {},
  };
});

describe('RedisDeadLetterStore on Redis', () => {
  it('counts with two filters in several short script calls, never one walk of a whole index', async () => {
    const store = new RedisDeadLetterStore({ redis, prefix: freshPrefix() });
    const state = { attempts: 1, deferrals: 0 };
    // 3 000 records: every fifth is for mail, every sixth is named welcome; the name index (2 500) is the
    // smaller one the count walks.
    const records = Array.from({ length: 3_000 }, (_, i) =>
      sampleDeadLetter(`job-${i}`, {
        deadLetteredAt: 1_000 + Math.floor(i / 3), // ties, so the chunks resume inside a run of one time
        dependency: i % 5 === 0 ? 'mail' : 'search',
        name: i % 6 === 0 ? 'welcome' : 'reindex',
      }),
    );
    for (let i = 0; i < records.length; i += 200)
      await Promise.all(records.slice(i, i + 200).map((r) => store.file(r, state, 600_000)));
    const expected = (since: number) =>
      records.filter((_, i) => i % 5 !== 0 && i % 6 !== 0 && 1_000 + Math.floor(i / 3) >= since).length;

    const scriptCalls = async () => {
      const info = await redis.info('commandstats');
      return [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
    };
    expect(await store.count('index', { dependency: 'search', name: 'reindex' })).toBe(expected(0));
    // Over a time range (here, all of it): 2 500 entries of the name index, at most 1 000 looked at per
    // call. Without one, Redis 7 counts an index this small in one ZINTERCARD (dead-letter-count.test.ts).
    const before = await scriptCalls();
    expect(await store.count('index', { dependency: 'search', name: 'reindex', since: 1_000 })).toBe(
      expected(0),
    );
    expect((await scriptCalls()) - before).toBeGreaterThanOrEqual(3);
    expect(await store.count('index', { dependency: 'search', name: 'reindex', since: 1_500 })).toBe(
      expected(1_500),
    );
    expect(await store.count('index', { dependency: 'mail', name: 'welcome' })).toBe(100);
  }, 60_000);

  it("keeps all of a queue's keys in its hash tag, and nothing else outside the registry", async () => {
    const store = new RedisDeadLetterStore({ redis, prefix: freshPrefix() });
    await store.file(
      sampleDeadLetter('1', { queue: 'in:dex', dependency: 'eu:search' }),
      { attempts: 1, deferrals: 0 },
      60_000,
    );
    const keys = await redis.keys(`*${store.prefix}*`);
    const tag = queueTag(store.prefix, 'in:dex');
    const outside = keys.filter((k) => !k.startsWith(tag)).sort();
    expect(outside).toEqual([`{${store.prefix}:g}:dlq-queues`, `{${store.prefix}:g}:dlq-schema`]);
    expect(keys.filter((k) => k.startsWith(tag)).length).toBeGreaterThanOrEqual(8);
  });

  it('lists a record whose stored text is not JSON as malformed, and replay-style reads go on', async () => {
    const store = new RedisDeadLetterStore({ redis, prefix: freshPrefix() });
    const state = { attempts: 1, deferrals: 0 };
    const a = await store.file(sampleDeadLetter('a', { deadLetteredAt: 1 }), state, 60_000);
    const b = await store.file(sampleDeadLetter('b', { deadLetteredAt: 2 }), state, 60_000);
    await redis.hset(`${queueTag(store.prefix, 'index')}:dl:rec`, a.id, '{"jobId":');
    await redis.hdel(`${queueTag(store.prefix, 'index')}:dl:ix`, a.id);
    const page = await store.list('index', { limit: 10 });
    expect(page.malformed).toEqual([
      { id: a.id, malformed: true, problem: expect.stringMatching(/not JSON/) },
    ]);
    expect(page.records.map((r) => r.jobId)).toEqual(['b']);
    expect(
      (await store.list('index', { limit: 10, reason: 'max-attempts' })).records.map((r) => r.id),
    ).toEqual([b.id]);
    expect(await store.remove('index', a.id)).toBe(true);
    expect(await store.count('index')).toBe(1);
  });

  it('keeps attempt state on the server time in one plain command per read, write and clear', async () => {
    const store = new RedisDeadLetterStore({ redis, prefix: freshPrefix() });
    const job = { queue: 'index', jobId: '7', createdAt: 1_000 };
    const state = { attempts: 2, deferrals: 0, previousDelayMs: 400, granted: true as const };
    const commands = async () => {
      const counts: Record<string, number> = {};
      for (const [, name = '', calls] of (await redis.info('commandstats')).matchAll(
        /cmdstat_([^:]+):calls=(\d+)/g,
      ))
        if (name !== 'info') counts[name] = Number(calls);
      return counts;
    };
    const ran = async (step: () => Promise<unknown>) => {
      const before = await commands();
      await step();
      const after = await commands();
      return Object.fromEntries(
        Object.entries(after)
          .map(([name, calls]) => [name, calls - (before[name] ?? 0)] as const)
          .filter(([, n]) => n > 0),
      );
    };
    expect(await ran(() => store.writeAttempts(job, state, 60_000))).toEqual({ set: 1 });
    expect(await ran(() => store.readAttempts(job))).toEqual({ mget: 1 });
    expect(await store.readAttempts(job)).toEqual(state);
    const key = `${queueTag(store.prefix, 'index')}:att:7:1000`;
    expect(await redis.pttl(key)).toBeGreaterThan(59_000);
    expect(await ran(() => store.clearAttempts(job))).toEqual({ del: 1 });
    expect(await store.readAttempts(job)).toBeUndefined();

    // Reads and clears asked while one is in flight share the next command: the first goes alone, the
    // four asked meanwhile go together.
    const jobs = [1, 2, 3, 4, 5].map((n) => ({ queue: 'index', jobId: `j${n}`, createdAt: n }));
    await Promise.all(jobs.map((j, n) => store.writeAttempts(j, { attempts: n, deferrals: 0 }, 60_000)));
    let read: unknown[] = [];
    expect(
      await ran(async () => {
        read = await Promise.all(jobs.map((j) => store.readAttempts(j)));
      }),
    ).toEqual({ mget: 2 });
    expect(read).toEqual(jobs.map((_, n) => ({ attempts: n, deferrals: 0 })));
    expect(await ran(() => Promise.all(jobs.map((j) => store.clearAttempts(j))))).toEqual({ del: 2 });
    expect(await Promise.all(jobs.map((j) => store.readAttempts(j)))).toEqual(jobs.map(() => undefined));
  });

  it('reads attempt state across the server-time and test-clock paths, and earlier values', async () => {
    const prefix = freshPrefix();
    const server = new RedisDeadLetterStore({ redis, prefix });
    const clocked = new RedisDeadLetterStore({ redis, prefix, clock: new FakeClock(Date.now()) });
    const a = { queue: 'index', jobId: 'a', createdAt: 1 };
    const b = { queue: 'index', jobId: 'b', createdAt: 1 };
    await server.writeAttempts(a, { attempts: 1, deferrals: 0 }, 60_000);
    await clocked.writeAttempts(b, { attempts: 3, deferrals: 1 }, 60_000);
    expect(await clocked.readAttempts(a)).toEqual({ attempts: 1, deferrals: 0 });
    expect(await server.readAttempts(b)).toEqual({ attempts: 3, deferrals: 1 });
    // The form every earlier version wrote (its expiry from the server's TIME) reads as it did.
    const key = (jobId: string) => `${queueTag(prefix, 'index')}:att:${jobId}:1`;
    await redis.set(key('c'), `${Date.now() + 60_000}|{"attempts":4,"deferrals":0}`, 'PX', 60_000);
    expect(await server.readAttempts({ queue: 'index', jobId: 'c', createdAt: 1 })).toEqual({
      attempts: 4,
      deferrals: 0,
    });
    // A value that is not the stored form is no state, as the script reads it.
    await redis.set(key('d'), 'no bar here', 'PX', 60_000);
    expect(await server.readAttempts({ queue: 'index', jobId: 'd', createdAt: 1 })).toBeUndefined();
  });

  it('refuses keys written by a newer layout', async () => {
    const store = new RedisDeadLetterStore({ redis, prefix: freshPrefix() });
    await redis.set(`{${store.prefix}:g}:dlq-schema`, '99');
    await expect(store.queues()).rejects.toThrow(/layout version 99.*upgrade stormguard/);
  });

  it('lists the newest few of many records with a name filter in one page', async () => {
    const store = new RedisDeadLetterStore({ redis, prefix: freshPrefix(), clock: new FakeClock(0) });
    const state = { attempts: 1, deferrals: 0 };
    for (let i = 0; i < 300; i++)
      await store.file(
        sampleDeadLetter(`j${i}`, { name: i % 100 === 99 ? 'rare' : 'common', deadLetteredAt: i }),
        state,
        60_000,
      );
    const page = await store.list('index', { name: 'rare', limit: 10, newestFirst: true });
    expect(page.records.map((r: StoredDeadLetter) => r.jobId)).toEqual(['j299', 'j199', 'j99']);
    expect(page.next).toBeUndefined();
  });
});
