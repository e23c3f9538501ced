import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { FakeClock } from '../../src/common/clock.js';
import { queueTag } from '../../src/common/keys.js';
import { isInvalidInputError } from '../../src/errors/invalid-input-error.js';
import { isValidationError } from '../../src/errors/validation-error.js';
import { deadLetter, redisForFile } from './dlq-fixtures.js';

const env = redisForFile();

/** The dead letters of queue `index` in a fresh store. */
function freshDlq(clock?: FakeClock) {
  const store = env.store();
  return {
    store,
    dlq: deadLetterQueue('index', { store, connection: env.connection, ...(clock ? { clock } : {}) }),
  };
}

describe('deadLetterQueue', () => {
  it('files a record and returns it by the id the store gave it, once per job', async () => {
    const { dlq } = freshDlq();
    const record = deadLetter('42', { idempotencyKey: 'doc-42', data: { docId: 42, nested: { a: [1, 2] } } });
    const id = await dlq.add(record);
    expect(await dlq.get(id)).toEqual({ ...record, id });
    expect(await dlq.add(deadLetter('42', { detail: 'again' }))).toBe(id);
    expect(await dlq.count()).toBe(1);
    expect(dlq.name).toBe('index dead letters');
    await dlq.close();
  });

  it('keeps both records of two jobs that share a custom id', async () => {
    const { dlq } = freshDlq();
    const first = await dlq.add(deadLetter('order-7', { createdAt: 1_000, detail: 'first' }));
    const second = await dlq.add(deadLetter('order-7', { createdAt: 2_000, detail: 'second' }));
    expect(second).not.toBe(first);
    const { records } = await dlq.list();
    expect(records.map((r) => [r.jobId, r.detail])).toEqual([
      ['order-7', 'first'],
      ['order-7', 'second'],
    ]);
  });

  it('lists oldest or newest first, page by page, and filters by reason, dependency, name and age', async () => {
    const clock = new FakeClock(100_000);
    const { dlq } = freshDlq(clock);
    await dlq.add(
      deadLetter('a', { reason: 'budget-exhausted', dependency: 'search', deadLetteredAt: 10_000 }),
    );
    await dlq.add(
      deadLetter('b', { reason: 'permanent', dependency: 'mail', name: 'welcome', deadLetteredAt: 20_000 }),
    );
    await dlq.add(
      deadLetter('c', { reason: 'budget-exhausted', dependency: 'mail', deadLetteredAt: 95_000 }),
    );
    await dlq.add(
      deadLetter('d', { reason: 'budget-exhausted', dependency: 'search', deadLetteredAt: 99_000 }),
    );
    const ids = async (options: Parameters<typeof dlq.list>[0]) =>
      (await dlq.list(options)).records.map((r) => r.jobId);
    expect(await ids({})).toEqual(['a', 'b', 'c', 'd']);
    expect(await ids({ newestFirst: true })).toEqual(['d', 'c', 'b', 'a']);
    expect(await ids({ reason: 'budget-exhausted', dependency: 'search' })).toEqual(['a', 'd']);
    expect(await ids({ name: 'welcome' })).toEqual(['b']);
    expect(await ids({ sinceMs: 10_000 })).toEqual(['c', 'd']);
    expect(await ids({ since: 99_000 })).toEqual(['d']);
    const first = await dlq.list({ limit: 3 });
    expect(first.records.map((r) => r.jobId)).toEqual(['a', 'b', 'c']);
    expect(await ids({ limit: 3, cursor: first.next })).toEqual(['d']);
    expect(await dlq.count({ dependency: 'mail' })).toBe(2);
    expect(await dlq.count({ sinceMs: 10_000 })).toBe(2);
  });

  it('purges what the filter selects, malformed records too, and nothing else', async () => {
    const { dlq, store } = freshDlq();
    await dlq.add(deadLetter('a', { reason: 'permanent' }));
    await dlq.add(deadLetter('b'));
    const c = await dlq.add(deadLetter('c', { reason: 'permanent' }));
    await env.redis.hset(`${queueTag(store.prefix, 'index')}:dl:rec`, c, 'not json');
    expect(await dlq.purge({ reason: 'permanent' })).toBe(2);
    expect((await dlq.list()).records.map((r) => r.jobId)).toEqual(['b']);
    expect(await dlq.purge()).toBe(1);
    expect(await dlq.count()).toBe(0);
  });

  it('purges more records than one page holds', async () => {
    const { dlq } = freshDlq();
    for (let i = 0; i < 1_100; i += 100)
      await Promise.all(Array.from({ length: 100 }, (_, j) => dlq.add(deadLetter(`job-${i + j}`))));
    expect(await dlq.count({ reason: 'max-attempts' })).toBe(1_100);
    expect(await dlq.purge({ reason: 'max-attempts' })).toBe(1_100);
    expect(await dlq.count()).toBe(0);
  });

  it('names the problem when a filter, a record or the queue is wrong', async () => {
    const { dlq, store } = freshDlq();
    await expect(dlq.list({ reason: 'bored' as never })).rejects.toSatisfy(
      (e: unknown) => isValidationError(e) && /reason/.test((e as Error).message),
    );
    await expect(dlq.list({ limit: -1 })).rejects.toSatisfy(isInvalidInputError);
    await expect(dlq.add(deadLetter(''))).rejects.toThrow(/jobId/);
    await expect(dlq.add(deadLetter('x', { queue: 'elsewhere' }))).rejects.toThrow(
      /comes from queue "elsewhere"/,
    );
    expect(() => deadLetterQueue('', { store })).toThrow(/queue name/);
    expect(() => deadLetterQueue('index', {} as never)).toThrow(/store/);
    const other = new Queue('other', { connection: env.connection });
    expect(() => deadLetterQueue('index', { store, queue: other })).toThrow(/"other"/);
    await other.close();
    await expect(deadLetterQueue('index', { store }).replay()).rejects.toThrow(
      /options.queue or options.connection/,
    );
  });
});
