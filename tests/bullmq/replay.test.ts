import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { BudgetSnapshot } from '../../src/budget/types.js';
import { REPLAY_OPTION, replayJobOptions, replayOrigin } from '../../src/bullmq/dead-letter-ids.js';
import { type DeadLetterQueue, deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { FakeClock } from '../../src/common/clock.js';
import { queueTag } from '../../src/common/keys.js';
import { isValidationError } from '../../src/errors/validation-error.js';
import type { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { StoredDeadLetter } from '../../src/runtime/contracts.js';
import type { Sleep } from '../../src/runtime/replay/replay-pacing.js';
import { waitFor } from '../helpers/redis-server.js';
import { deadLetter, redisForFile, uniqueQueue } from './dlq-fixtures.js';

const env = redisForFile();

interface Fixture {
  dlq: DeadLetterQueue;
  store: RedisDeadLetterStore;
  source: Queue;
  queue: string;
  /** Every job on the source queue, whatever its state. */
  sourceJobs(): Promise<{ id: string; originalJobId: string; name: string; data: unknown; opts: object }[]>;
}

async function withQueues(records: number, run: (f: Fixture) => Promise<void>): Promise<void> {
  const queue = uniqueQueue('replay');
  const store = env.store();
  const source = new Queue(queue, { connection: env.connection });
  const dlq = deadLetterQueue(queue, { store, queue: source });
  for (let i = 0; i < records; i++)
    await dlq.add(deadLetter(`job-${i}`, { queue, deadLetteredAt: 10_000 + i }));
  const sourceJobs = async () =>
    (await source.getJobs()).map((job) => ({
      id: String(job.id),
      originalJobId: replayOrigin(job).originalJobId,
      name: job.name,
      data: job.data,
      opts: job.opts,
    }));
  try {
    await run({ dlq, store, source, queue, sourceJobs });
  } finally {
    await dlq.close();
    await source.close();
  }
}

/** A sleep on virtual time: it advances the clock instead of waiting. */
function virtualSleep(clock: FakeClock, log: number[] = []): Sleep {
  return async (ms, signal) => {
    signal?.throwIfAborted();
    log.push(ms);
    clock.advance(ms);
  };
}

function expectEachOnce(jobs: { originalJobId: string }[], count: number): void {
  const originals = jobs.map((j) => j.originalJobId).sort();
  expect(originals).toEqual(Array.from({ length: count }, (_, i) => `job-${i}`).sort());
}

async function onlyRecord(dlq: DeadLetterQueue): Promise<StoredDeadLetter> {
  const { records } = await dlq.list();
  expect(records).toHaveLength(1);
  return records[0] as StoredDeadLetter;
}

describe('dlq.replay', () => {
  it('puts each record back with its name, data and options, under an id of its own, attempts reset', async () => {
    await withQueues(0, async ({ dlq, source, sourceJobs, queue }) => {
      const id = await dlq.add(
        deadLetter('42', {
          queue,
          data: { docId: 42, idempotencyKey: 'doc-42' },
          idempotencyKey: 'doc-42',
          opts: { attempts: 5, priority: 3, delay: 60_000, jobId: '42', removeOnComplete: 100 },
        }),
      );
      const report = await dlq.replay();
      expect(report).toMatchObject({
        matched: 1,
        dryRun: false,
        interrupted: false,
        skipped: [],
        failed: [],
        malformed: [],
      });
      const replayJobId = `42-r1.${id}`;
      expect(report.moved).toEqual([
        { id, jobId: '42', replayJobId, name: 'reindex', reason: 'max-attempts', dependency: 'search' },
      ]);
      const job = await source.getJob(replayJobId);
      expect(job?.name).toBe('reindex');
      expect(job?.data).toEqual({ docId: 42, idempotencyKey: 'doc-42' });
      expect(job?.attemptsMade).toBe(0);
      expect(job?.opts).toMatchObject({ attempts: 5, priority: 3, removeOnComplete: 100 });
      expect(job?.opts.delay ?? 0).toBe(0);
      expect(await job?.getState()).toBe('prioritized');
      expect(replayOrigin(job as never)).toMatchObject({ originalJobId: '42', replays: 1, recordId: id });
      expect(await dlq.count()).toBe(0);
      expect(await sourceJobs()).toHaveLength(1);
    });
  });

  it('emits replayed for each job it puts back, and nothing on a dry run', async () => {
    await withQueues(2, async ({ dlq, queue }) => {
      const events: unknown[] = [];
      const sub = dlq.events.on('replayed', (e) => events.push(e));
      await dlq.replay({ dryRun: true });
      expect(events).toEqual([]);
      await dlq.replay();
      sub.dispose();
      const replayed = { queue, task: 'reindex', reason: 'max-attempts' };
      expect(events).toEqual([replayed, replayed]);
    });
  });

  it('run twice moves every record once: the second run finds nothing', async () => {
    await withQueues(8, async ({ dlq, sourceJobs }) => {
      expect((await dlq.replay()).moved).toHaveLength(8);
      const again = await dlq.replay();
      expect([again.matched, again.moved.length]).toEqual([0, 0]);
      expectEachOnce(await sourceJobs(), 8);
    });
  });

  it('stopped half-way by the signal, then run again: every record replayed exactly once', async () => {
    await withQueues(10, async ({ dlq, sourceJobs }) => {
      const controller = new AbortController();
      const first = await dlq.replay({
        signal: controller.signal,
        onProgress: (p) => {
          if (p.moved === 4) controller.abort();
        },
      });
      expect(first.interrupted).toBe(true);
      expect(first.moved).toHaveLength(4);
      expect(await dlq.count()).toBe(6);
      const second = await dlq.replay();
      expect([second.interrupted, second.moved.length]).toEqual([false, 6]);
      expectEachOnce(await sourceJobs(), 10);
      expect(await dlq.count()).toBe(0);
    });
  });

  it('re-run after a crash that left the claim and the job behind, but not the removal: no duplicate', async () => {
    await withQueues(3, async ({ dlq, store, source, queue, sourceJobs }) => {
      // The state a crash between "add to the queue" and "remove the record" leaves.
      const record = (await dlq.list()).records[1] as StoredDeadLetter;
      const claim = (await store.claimReplay(queue, record.id, `job-1-r1.${record.id}`))!;
      await source.add(record.name, record.data, replayJobOptions(record, claim, 60_000) as never);
      const report = await dlq.replay();
      expect(report.moved.map((m) => m.jobId)).toEqual(['job-0', 'job-1', 'job-2']);
      expect(report.moved[1]?.replayJobId).toBe(claim.jobId);
      expectEachOnce(await sourceJobs(), 3);
      expect(await dlq.count()).toBe(0);
    });
  });

  it('re-run after a crash whose job already ran and was removed (removeOnComplete): it is not added again', async () => {
    await withQueues(0, async ({ dlq, store, source, queue }) => {
      await dlq.add(deadLetter('once', { queue, opts: { removeOnComplete: true } }));
      const record = await onlyRecord(dlq);
      const claim = (await store.claimReplay(queue, record.id, `once-r1.${record.id}`))!;
      await source.add(record.name, record.data, replayJobOptions(record, claim, 60_000) as never);
      let runs = 0;
      const worker = new Worker(queue, async () => void runs++, { connection: env.connection });
      try {
        await waitFor(
          async () => runs === 1 && (await source.getJob(claim.jobId)) === undefined,
          10_000,
          'the job to run and go',
        );
        const report = await dlq.replay();
        expect(report.moved.map((m) => m.replayJobId)).toEqual([claim.jobId]);
        expect(await dlq.count()).toBe(0);
        // Give the worker every chance to run a second copy, then check there is none.
        await worker.close();
        expect(await source.getJobCounts('wait', 'active', 'delayed', 'prioritized')).toEqual({
          wait: 0,
          active: 0,
          delayed: 0,
          prioritized: 0,
        });
        expect(runs).toBe(1);
      } finally {
        await worker.close();
      }
    });
  });

  it('two replays running at once move each record once', async () => {
    await withQueues(30, async ({ dlq, sourceJobs }) => {
      const [a, b] = await Promise.all([dlq.replay(), dlq.replay()]);
      expect(a.moved.length + b.moved.length).toBe(30);
      expect(a.skipped.length + b.skipped.length).toBe(30);
      expect([...a.failed, ...b.failed]).toEqual([]);
      expectEachOnce(await sourceJobs(), 30);
    });
  });

  it('a reused job id: two jobs with one custom id, both dead-lettered, both records kept, both replayed', async () => {
    await withQueues(0, async ({ dlq, store, source, queue }) => {
      // A producer that deduplicates with its own ids and removes failed jobs: the second job reuses the id.
      const worker = new Worker(
        queue,
        async (job) => {
          if (replayOrigin(job).replays > 0) return 'done';
          await store.file(
            deadLetter(String(job.id), { queue, createdAt: job.timestamp, data: job.data, opts: {} }),
            { attempts: 1, deferrals: 0 },
            60_000,
          );
          throw new UnrecoverableError('dead-lettered');
        },
        { connection: env.connection },
      );
      try {
        for (const round of [1, 2]) {
          await source.add('charge', { round }, { jobId: 'order-1', removeOnFail: true });
          await waitFor(
            async () => (await dlq.count()) === round && !(await source.getJob('order-1')),
            10_000,
            `order-1 #${round} to be dead-lettered and removed`,
          );
        }
        const { records } = await dlq.list();
        expect(records.map((r) => [r.jobId, r.data])).toEqual([
          ['order-1', { round: 1 }],
          ['order-1', { round: 2 }],
        ]);
        const report = await dlq.replay();
        expect(report.moved).toHaveLength(2);
        const ids = report.moved.map((m) => m.replayJobId);
        expect(new Set(ids).size).toBe(2);
        const replayed = await Promise.all(ids.map((id) => source.getJob(id)));
        expect(replayed.map((j) => j?.data)).toEqual([{ round: 1 }, { round: 2 }]);
      } finally {
        await worker.close();
      }
    });
  });

  it("a replay whose derived id an older replay's job still holds uses the next id, never skips", async () => {
    await withQueues(0, async ({ dlq, source, queue }) => {
      await dlq.add(deadLetter('doc-9', { queue, data: { v: 'old' } }));
      const old = await dlq.replay();
      const oldJobId = old.moved[0]?.replayJobId as string;
      expect(await source.getJob(oldJobId)).toBeDefined();
      // The store starts afresh (a new prefix, say), so record ids start again and the derived id repeats.
      const fresh = deadLetterQueue(queue, { store: env.store(), queue: source });
      await fresh.add(deadLetter('doc-9', { queue, data: { v: 'new' } }));
      const report = await fresh.replay();
      expect(report.skipped).toEqual([]);
      expect(report.moved.map((m) => m.replayJobId)).toEqual([`${oldJobId}~2`]);
      expect((await source.getJob(`${oldJobId}~2`))?.data).toEqual({ v: 'new' });
      expect((await source.getJob(oldJobId))?.data).toEqual({ v: 'old' });
      expect(await fresh.count()).toBe(0);
      // Run again: nothing left, nothing added.
      expect((await fresh.replay()).moved).toEqual([]);
      expect(await source.getJob(`${oldJobId}~3`)).toBeUndefined();
    });
  });

  it('replays only what the filters select, up to the limit, oldest first', async () => {
    await withQueues(0, async ({ dlq, sourceJobs, queue }) => {
      await dlq.add(
        deadLetter('a', { queue, reason: 'budget-exhausted', dependency: 'search', deadLetteredAt: 1 }),
      );
      await dlq.add(deadLetter('b', { queue, reason: 'permanent', dependency: 'search', deadLetteredAt: 2 }));
      await dlq.add(
        deadLetter('c', { queue, reason: 'budget-exhausted', dependency: 'mail', deadLetteredAt: 3 }),
      );
      await dlq.add(
        deadLetter('d', { queue, reason: 'budget-exhausted', dependency: 'search', deadLetteredAt: 4 }),
      );
      await dlq.add(
        deadLetter('e', { queue, reason: 'budget-exhausted', dependency: 'search', deadLetteredAt: 5 }),
      );
      const report = await dlq.replay({ reason: 'budget-exhausted', dependency: 'search', limit: 2 });
      expect(report.moved.map((m) => m.jobId)).toEqual(['a', 'd']);
      expect((await sourceJobs()).map((j) => j.originalJobId).sort()).toEqual(['a', 'd']);
      expect((await dlq.list()).records.map((r) => r.jobId)).toEqual(['b', 'c', 'e']);
    });
  });

  it('selects by age on its own clock', async () => {
    await withQueues(0, async ({ dlq, queue }) => {
      await dlq.add(deadLetter('old', { queue, deadLetteredAt: 1_000 }));
      await dlq.add(deadLetter('new', { queue, deadLetteredAt: 9_000 }));
      const report = await dlq.replay({ sinceMs: 5_000, clock: new FakeClock(10_000) });
      expect(report.moved.map((m) => m.jobId)).toEqual(['new']);
    });
  });

  it('a dry run reports what would move and moves nothing', async () => {
    await withQueues(4, async ({ dlq, sourceJobs }) => {
      const ids = (await dlq.list()).records.map((r) => r.id);
      const report = await dlq.replay({ dryRun: true });
      expect(report.dryRun).toBe(true);
      expect(report.moved.map((m) => m.replayJobId)).toEqual(ids.map((id, i) => `job-${i}-r1.${id}`));
      expect(await sourceJobs()).toEqual([]);
      expect(await dlq.count()).toBe(4);
    });
  });

  it('keeps to the rate limit (virtual time)', async () => {
    await withQueues(6, async ({ dlq }) => {
      const clock = new FakeClock(0);
      const sleeps: number[] = [];
      const movedAt: number[] = [];
      await dlq.replay({
        ratePerSecond: 5,
        clock,
        sleep: virtualSleep(clock, sleeps),
        onProgress: () => movedAt.push(clock.now()),
      });
      expect(movedAt).toEqual([0, 200, 400, 600, 800, 1_000]);
      expect(sleeps).toEqual([200, 200, 200, 200, 200]);
    });
  });

  it('--when-healthy waits while the budget is denying, then proceeds', async () => {
    await withQueues(3, async ({ dlq, sourceJobs }) => {
      const clock = new FakeClock(0);
      const snapshot = (denying: boolean): BudgetSnapshot => ({
        dependency: 'search',
        allowance: 10,
        spent: denying ? 10 : 2,
        denied: denying ? 7 : 0,
        successes: 50,
        windowMs: 60_000,
        degraded: false,
      });
      const asked: string[] = [];
      // Denying for the first three looks (three polls of 500 ms), healthy after.
      const budget = {
        state: (dependency: string) => {
          asked.push(dependency);
          return snapshot(asked.length <= 3);
        },
      };
      const waits: string[] = [];
      let movedAt: number | undefined;
      const report = await dlq.replay({
        whenHealthy: { budget, pollMs: 500 },
        clock,
        sleep: virtualSleep(clock),
        onProgress: (p) => {
          if (p.waitingFor) waits.push(`${p.waitingFor}@${clock.now()}`);
          else if (p.moved === 1) movedAt ??= clock.now();
        },
      });
      expect(waits).toEqual(['search@0', 'search@500', 'search@1000']);
      expect(movedAt).toBe(1_500);
      expect(report.moved).toHaveLength(3);
      expectEachOnce(await sourceJobs(), 3);
    });
  });

  it('an abort while waiting for health stops cleanly and moves nothing', async () => {
    await withQueues(2, async ({ dlq }) => {
      const controller = new AbortController();
      const clock = new FakeClock(0);
      const report = await dlq.replay({
        whenHealthy: { isHealthy: () => false, pollMs: 100 },
        signal: controller.signal,
        clock,
        sleep: virtualSleep(clock),
        onProgress: (p) => {
          if (p.waitingFor && clock.now() >= 300) controller.abort();
        },
      });
      expect(report).toMatchObject({ interrupted: true, stoppedBecause: 'interrupted', moved: [] });
      expect(await dlq.count()).toBe(2);
    });
  });

  it('keeps a record it cannot move, claimed, and reports why; the next run tries it again', async () => {
    await withQueues(0, async ({ dlq, queue }) => {
      // BullMQ refuses fractional priorities: this record cannot be enqueued as it is.
      const bad = await dlq.add(deadLetter('bad', { queue, opts: { priority: 1.5 }, deadLetteredAt: 1 }));
      await dlq.add(deadLetter('good', { queue, deadLetteredAt: 2 }));
      const report = await dlq.replay();
      expect(report.failed).toEqual([{ id: bad, jobId: 'bad', error: expect.stringMatching(/[Pp]riority/) }]);
      expect(report.moved.map((m) => m.jobId)).toEqual(['good']);
      const kept = await onlyRecord(dlq);
      expect([kept.jobId, kept.replay?.jobId]).toEqual(['bad', `bad-r1.${bad}`]);
      expect((await dlq.replay()).failed.map((f) => f.id)).toEqual([bad]);
    });
  });

  it('skips a malformed record with what is wrong, and replays the good ones', async () => {
    await withQueues(3, async ({ dlq, store, queue, sourceJobs }) => {
      const ids = (await dlq.list()).records.map((r) => r.id);
      await env.redis.hset(`${queueTag(store.prefix, queue)}:dl:rec`, ids[1] as string, '{"jobId":');
      const report = await dlq.replay();
      expect(report.malformed).toEqual([{ id: ids[1], problem: expect.stringMatching(/not JSON/) }]);
      expect(report.moved.map((m) => m.jobId)).toEqual(['job-0', 'job-2']);
      expect((await sourceJobs()).map((j) => j.originalJobId).sort()).toEqual(['job-0', 'job-2']);
      expect(await dlq.count()).toBe(1);
    });
  });

  it('leaves a record filed in its safe form (its data withheld) where it is, saying why, and replays the others', async () => {
    await withQueues(2, async ({ dlq, queue, sourceJobs }) => {
      const withheld = await dlq.add(
        deadLetter('job-w', {
          queue,
          data: { stormguard: 'withheld', why: 'the redaction hook failed (TypeError)' },
        }),
      );
      const report = await dlq.replay();
      expect(report.moved.map((m) => m.jobId).sort()).toEqual(['job-0', 'job-1']);
      expect(report.skipped).toEqual([
        {
          id: withheld,
          jobId: 'job-w',
          why: expect.stringMatching(/^withheld: the job's data was not kept/),
        },
      ]);
      expect((await sourceJobs()).map((j) => j.originalJobId).sort()).toEqual(['job-0', 'job-1']);
      expect((await dlq.list()).records.map((r) => r.id)).toEqual([withheld]);
    });
  });

  it('refuses a bad rate or limit, naming it', async () => {
    await withQueues(0, async ({ dlq }) => {
      await expect(dlq.replay({ ratePerSecond: 0 })).rejects.toSatisfy(
        (e: unknown) => isValidationError(e) && /ratePerSecond/.test((e as Error).message),
      );
      await expect(dlq.replay({ limit: 1.5 })).rejects.toSatisfy(isValidationError);
    });
  });

  it('marks its jobs with where they came from', async () => {
    await withQueues(1, async ({ dlq, source }) => {
      const [moved] = (await dlq.replay()).moved;
      const job = await source.getJob(moved?.replayJobId as string);
      expect(job?.opts).toMatchObject({
        [REPLAY_OPTION]: { originalJobId: 'job-0', replays: 1, recordId: moved?.id },
      });
    });
  });
});
