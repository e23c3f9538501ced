import { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { FakeClock } from '../../src/common/clock.js';
import { isInvalidInputError } from '../../src/errors/invalid-input-error.js';
import { isValidationError } from '../../src/errors/validation-error.js';
import { deadLetter, redisForFile, uniqueQueue } from './dlq-fixtures.js';

const env = redisForFile();

/** A dead-letter queue for a fresh source queue, closed at the end of the test. */
async function withDlq<T>(
  run: (dlq: ReturnType<typeof deadLetterQueue>, queue: string) => Promise<T>,
  clock?: FakeClock,
): Promise<T> {
  // The records' source queue is 'index' (as the fixture files them); each test gets its own dead-letter queue.
  const queue = 'index';
  const dlq = deadLetterQueue(queue, { connection: env.connection, clock, name: uniqueQueue('index-dlq') });
  try {
    return await run(dlq, queue);
  } finally {
    await dlq.close();
  }
}

describe('deadLetterQueue', () => {
  it('is named <queue>-dlq unless told otherwise', async () => {
    const byDefault = deadLetterQueue('index', { connection: env.connection });
    expect([byDefault.name, byDefault.prefix, byDefault.sourceQueue]).toEqual(['index-dlq', 'bull', 'index']);
    await byDefault.close();
    const named = deadLetterQueue('index', { connection: env.connection, name: 'graveyard', prefix: 'sg' });
    expect([named.name, named.prefix]).toEqual(['graveyard', 'sg']);
    await named.close();
  });

  it('stores the record as given and returns it by the original job id', async () => {
    await withDlq(async (dlq) => {
      const record = deadLetter('42', {
        idempotencyKey: 'doc-42',
        data: { docId: 42, nested: { a: [1, 2] } },
      });
      await dlq.add(record);
      expect(await dlq.get('42')).toEqual(record);
      expect(await dlq.get('43')).toBeUndefined();
    });
  });

  it('keeps one record when the same job is dead-lettered twice', async () => {
    await withDlq(async (dlq) => {
      await dlq.add(deadLetter('7', { detail: 'first' }));
      await dlq.add(deadLetter('7', { detail: 'second' }));
      expect(await dlq.count()).toBe(1);
      expect((await dlq.get('7'))?.detail).toBe('first');
    });
  });

  it('accepts the integer ids BullMQ generates', async () => {
    await withDlq(async (dlq) => {
      await dlq.add(deadLetter('1'));
      await dlq.add(deadLetter('2'));
      expect((await dlq.list()).map((r) => r.jobId)).toEqual(['1', '2']);
    });
  });

  it('lists oldest first and filters by reason, dependency, name and age', async () => {
    const clock = new FakeClock(100_000);
    await withDlq(async (dlq) => {
      await dlq.add(
        deadLetter('a', { reason: 'budget-exhausted', dependency: 'search', deadLetteredAt: 10_000 }),
      );
      await dlq.add(deadLetter('b', { reason: 'permanent', dependency: 'mail', name: 'welcome' }));
      await dlq.add(
        deadLetter('c', { reason: 'budget-exhausted', dependency: 'mail', deadLetteredAt: 95_000 }),
      );
      await dlq.add(
        deadLetter('d', { reason: 'budget-exhausted', dependency: 'search', deadLetteredAt: 99_000 }),
      );
      const ids = async (filter: Parameters<typeof dlq.list>[0]) =>
        (await dlq.list(filter)).map((r) => r.jobId);
      expect(await ids({})).toEqual(['a', 'b', 'c', 'd']);
      expect(await ids({ reason: 'budget-exhausted' })).toEqual(['a', 'c', 'd']);
      expect(await ids({ reason: 'budget-exhausted', dependency: 'search' })).toEqual(['a', 'd']);
      expect(await ids({ name: 'welcome' })).toEqual(['b']);
      expect(await ids({ sinceMs: 10_000 })).toEqual(['c', 'd']);
      expect(await ids({ since: 99_000 })).toEqual(['d']);
      expect(await ids({ offset: 1, limit: 2 })).toEqual(['b', 'c']);
      expect(await dlq.count({ dependency: 'mail' })).toBe(2);
      expect(await dlq.count()).toBe(4);
    }, clock);
  });

  it('pages through more records than one read returns', async () => {
    await withDlq(async (dlq) => {
      for (let i = 0; i < 1_100; i += 100)
        await Promise.all(Array.from({ length: 100 }, (_, j) => dlq.add(deadLetter(`job-${i + j}`))));
      const all = await dlq.list();
      expect(all).toHaveLength(1_100);
      expect(new Set(all.map((r) => r.jobId)).size).toBe(1_100);
      expect(await dlq.count({ reason: 'max-attempts' })).toBe(1_100);
    });
  });

  it('purges what the filter selects and nothing else', async () => {
    await withDlq(async (dlq) => {
      await dlq.add(deadLetter('a', { reason: 'permanent' }));
      await dlq.add(deadLetter('b'));
      await dlq.add(deadLetter('c', { reason: 'permanent' }));
      expect(await dlq.purge({ reason: 'permanent' })).toBe(2);
      expect((await dlq.list()).map((r) => r.jobId)).toEqual(['b']);
      expect(await dlq.purge()).toBe(1);
      expect(await dlq.count()).toBe(0);
    });
  });

  it('is paused, so a worker attached to it by mistake takes nothing', async () => {
    await withDlq(async (dlq) => {
      await dlq.add(deadLetter('a'));
      expect(await dlq.queue.isPaused()).toBe(true);
      // A manually fetching worker asks once, deterministically: an unpaused queue would hand it record a.
      const worker = new Worker(dlq.name, null, { connection: env.connection, autorun: false });
      try {
        expect(await worker.getNextJob('token', { block: false })).toBeUndefined();
      } finally {
        await worker.close();
      }
      expect(await dlq.get('a')).toBeDefined();
    });
  });

  it('names the problem when a filter or a record is wrong', async () => {
    await withDlq(async (dlq) => {
      await expect(dlq.list({ reason: 'bored' as never })).rejects.toSatisfy(
        (e: unknown) => isValidationError(e) && /reason/.test((e as Error).message),
      );
      await expect(dlq.list({ limit: -1 })).rejects.toSatisfy(isInvalidInputError);
      await expect(dlq.add(deadLetter(''))).rejects.toThrow(/jobId/);
      await expect(dlq.add(deadLetter('x', { queue: 'elsewhere' }))).rejects.toThrow(
        /comes from queue "elsewhere"/,
      );
    });
    expect(() => deadLetterQueue('a:b', { connection: env.connection })).toThrow(/queue name/);
  });
});
