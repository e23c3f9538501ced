/**
 * Automatic replay finds the fleet's open run of a reason in the run store however many runs came after
 * it (console previews, other queues' runs), so a worker goes on with the run a stopped worker left
 * instead of leaving it open for ever beside a second one.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { bullmqReplayQueue } from '../../src/bullmq/bullmq-replay-queue.js';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { systemClock } from '../../src/common/clock.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import { AUTO_REPLAY_BY, AutoReplay } from '../../src/runtime/replay/auto-replay.js';
import { createReplayRun, startReplayRun } from '../../src/runtime/replay/replay-runs.js';
import { waitFor } from '../helpers/redis-server.js';
import { deadLetter, redisForFile, uniqueQueue } from './dlq-fixtures.js';

const env = redisForFile();

describe('automatic replay runs', () => {
  it("goes on with the open run a stopped worker left, though 100 newer runs hide it from the store's listing", async () => {
    const queue = uniqueQueue('auto');
    const prefix = `auto-${process.pid}`;
    const redis = new Redis(env.server.connection);
    const store = new RedisDeadLetterStore({ redis, prefix });
    const runs = new RedisReplayRunStore({ redis, prefix });
    const jobs = new Queue(queue, { connection: env.connection });
    const budget = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix }) });
    const dlq = deadLetterQueue(queue, { store, queue: jobs });
    for (let i = 0; i < 3; i++)
      await dlq.add(deadLetter(`job-${i}`, { queue, reason: 'breaker-open', deadLetteredAt: 10_000 + i }));
    // The fleet's run, started by a worker that stopped before running it.
    const left = await createReplayRun({ store, runs }, queue, {
      reason: 'breaker-open',
      whenHealthy: true,
      by: AUTO_REPLAY_BY,
    });
    await startReplayRun({ runs }, left.id, { by: AUTO_REPLAY_BY });
    // Then 100 runs of another queue, newer.
    for (let i = 0; i < 100; i++) await createReplayRun({ store, runs }, 'elsewhere', {});

    const errors: unknown[] = [];
    const auto = new AutoReplay(
      { runs, reasons: ['breaker-open'], ratePerSecond: 100, pollMs: 50 },
      {
        queue,
        store,
        jobs: () => bullmqReplayQueue(jobs),
        budget,
        clock: systemClock,
        report: (e) => errors.push(e),
      },
    );
    auto.start();
    try {
      await waitFor(
        async () => (await runs.getRun(left.id))?.status === 'done',
        10_000,
        'the run the stopped worker left to be run to its end',
      );
      expect(await runs.getRun(left.id)).toMatchObject({ moved: 3 });
      // No second run of the queue was made: the newest 100 are still the other queue's.
      expect((await runs.listRuns()).filter((r) => r.queue === queue)).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await auto.stop();
      await budget.close();
      await jobs.close();
      redis.disconnect();
    }
  });
});
