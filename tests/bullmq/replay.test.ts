import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { BudgetSnapshot } from '../../src/budget/types.js';
import { replayJobOptions, replayOrigin } from '../../src/bullmq/dead-letter-ids.js';
import { type DeadLetterQueue, deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import type { Sleep } from '../../src/bullmq/replay-pacing.js';
import { FakeClock } from '../../src/common/clock.js';
import { isValidationError } from '../../src/errors/validation-error.js';
import { deadLetter, redisForFile, uniqueQueue } from './dlq-fixtures.js';

const env = redisForFile();

interface Fixture {
  dlq: DeadLetterQueue;
  source: Queue;
  /** Every job on the source queue, whatever its state. */
  sourceJobs(): Promise<{ id: string; originalJobId: string; name: string; data: unknown; opts: object }[]>;
}

async function withQueues(records: number, run: (f: Fixture) => Promise<void>): Promise<void> {
  const queue = uniqueQueue('replay');
  const dlq = deadLetterQueue(queue, { connection: env.connection });
  const source = new Queue(queue, { connection: env.connection });
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
    await run({ dlq, source, sourceJobs });
  } finally {
    await source.close();
    await dlq.close();
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

describe('dlq.replay', () => {
  it('puts each record back with its name, data and options, under a new id, attempts reset', async () => {
    await withQueues(0, async ({ dlq, source, sourceJobs }) => {
      await dlq.add(
        deadLetter('42', {
          queue: dlq.sourceQueue,
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
      });
      expect(report.moved).toEqual([
        { jobId: '42', replayJobId: '42-r1', name: 'reindex', reason: 'max-attempts', dependency: 'search' },
      ]);
      const job = await source.getJob('42-r1');
      expect(job?.name).toBe('reindex');
      expect(job?.data).toEqual({ docId: 42, idempotencyKey: 'doc-42' });
      expect(job?.attemptsMade).toBe(0);
      expect(job?.opts).toMatchObject({ attempts: 5, priority: 3, removeOnComplete: 100 });
      expect(job?.opts.delay ?? 0).toBe(0);
      expect(await job?.getState()).toBe('prioritized');
      expect(replayOrigin(job as never)).toEqual({ originalJobId: '42', replays: 1 });
      expect(await dlq.count()).toBe(0);
      expect(await sourceJobs()).toHaveLength(1);
    });
  });

  it('emits replayed for each job it puts back, and nothing on a dry run', async () => {
    await withQueues(2, async ({ dlq }) => {
      const events: unknown[] = [];
      const sub = dlq.events.on('replayed', (e) => events.push(e));
      await dlq.replay({ dryRun: true });
      expect(events).toEqual([]);
      await dlq.replay();
      sub.dispose();
      const replayed = { queue: dlq.sourceQueue, task: 'reindex', reason: 'max-attempts' };
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

  it('re-run after a crash that left the replay job on the queue and its record behind: no duplicate', async () => {
    await withQueues(3, async ({ dlq, source, sourceJobs }) => {
      // The state a crash between "add to the source queue" and "remove the record" would leave.
      const record = (await dlq.get('job-1'))!;
      await source.add(record.name, record.data, replayJobOptions(record) as never);
      const report = await dlq.replay();
      expect(report.moved.map((m) => m.replayJobId)).toEqual(['job-0-r1', 'job-1-r1', 'job-2-r1']);
      expectEachOnce(await sourceJobs(), 3);
      expect(await dlq.count()).toBe(0);
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

  it('a replayed job dead-lettered again is replayed under the next id', async () => {
    await withQueues(1, async ({ dlq, source }) => {
      await dlq.replay();
      const replayed = (await source.getJob('job-0-r1'))!;
      const origin = replayOrigin(replayed);
      await dlq.add(deadLetter(origin.originalJobId, { queue: dlq.sourceQueue, replays: origin.replays }));
      const report = await dlq.replay();
      expect(report.moved.map((m) => m.replayJobId)).toEqual(['job-0-r2']);
      expect(replayOrigin((await source.getJob('job-0-r2'))!)).toEqual({
        originalJobId: 'job-0',
        replays: 2,
      });
    });
  });

  it('replays only what the filters select, up to the limit, oldest first', async () => {
    await withQueues(0, async ({ dlq, sourceJobs }) => {
      const q = dlq.sourceQueue;
      await dlq.add(deadLetter('a', { queue: q, reason: 'budget-exhausted', dependency: 'search' }));
      await dlq.add(deadLetter('b', { queue: q, reason: 'permanent', dependency: 'search' }));
      await dlq.add(deadLetter('c', { queue: q, reason: 'budget-exhausted', dependency: 'mail' }));
      await dlq.add(deadLetter('d', { queue: q, reason: 'budget-exhausted', dependency: 'search' }));
      await dlq.add(deadLetter('e', { queue: q, reason: 'budget-exhausted', dependency: 'search' }));
      const report = await dlq.replay({ reason: 'budget-exhausted', dependency: 'search', limit: 2 });
      expect(report.moved.map((m) => m.jobId)).toEqual(['a', 'd']);
      expect((await sourceJobs()).map((j) => j.originalJobId).sort()).toEqual(['a', 'd']);
      expect((await dlq.list()).map((r) => r.jobId)).toEqual(['b', 'c', 'e']);
    });
  });

  it('selects by age on its own clock', async () => {
    await withQueues(0, async ({ dlq }) => {
      await dlq.add(deadLetter('old', { queue: dlq.sourceQueue, deadLetteredAt: 1_000 }));
      await dlq.add(deadLetter('new', { queue: dlq.sourceQueue, deadLetteredAt: 9_000 }));
      const report = await dlq.replay({ sinceMs: 5_000, clock: new FakeClock(10_000) });
      expect(report.moved.map((m) => m.jobId)).toEqual(['new']);
    });
  });

  it('a dry run reports what would move and moves nothing', async () => {
    await withQueues(4, async ({ dlq, sourceJobs }) => {
      const report = await dlq.replay({ dryRun: true });
      expect(report.dryRun).toBe(true);
      expect(report.moved.map((m) => m.replayJobId)).toEqual([
        'job-0-r1',
        'job-1-r1',
        'job-2-r1',
        'job-3-r1',
      ]);
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

  it('keeps a record it cannot move and reports why', async () => {
    await withQueues(0, async ({ dlq }) => {
      // BullMQ refuses fractional priorities: this record cannot be enqueued as it is.
      await dlq.add(deadLetter('bad', { queue: dlq.sourceQueue, opts: { priority: 1.5 } }));
      await dlq.add(deadLetter('good', { queue: dlq.sourceQueue }));
      const report = await dlq.replay();
      expect(report.failed).toEqual([{ jobId: 'bad', error: expect.stringMatching(/[Pp]riority/) }]);
      expect(report.moved.map((m) => m.jobId)).toEqual(['good']);
      expect((await dlq.list()).map((r) => r.jobId)).toEqual(['bad']);
    });
  });

  it("keeps the record when BullMQ's add fails half-way, and replays it once the queue is sound again", async () => {
    await withQueues(1, async ({ dlq, source, sourceJobs }) => {
      // A wait list of the wrong type makes BullMQ's add script fail after it wrote the job hash.
      const client = await source.client;
      await client.set(source.toKey('wait'), 'not a list');
      const broken = await dlq.replay();
      expect(broken.failed).toEqual([{ jobId: 'job-0', error: expect.stringMatching(/WRONGTYPE/) }]);
      expect(await dlq.get('job-0')).toBeDefined();
      expect(await source.getJob('job-0-r1')).toBeUndefined();
      await client.del(source.toKey('wait'));
      const fixed = await dlq.replay();
      expect(fixed.moved.map((m) => m.replayJobId)).toEqual(['job-0-r1']);
      expect(await (await source.getJob('job-0-r1'))?.getState()).toBe('waiting');
      expectEachOnce(await sourceJobs(), 1);
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
});
