import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../common/clock.js';
import { sampleDeadLetter } from '../dead-letter-store.case.js';
import { MemoryDeadLetterStore } from '../memory-dead-letter-store.js';
import { MemoryReplayRunStore } from '../replay-runs.js';
import { MemoryReplayQueue } from './memory-replay-queue.js';
import { replayDeadLetters } from './replay.js';
import { createReplayRun, runReplay } from './replay-runs.js';

/** dlq.replay() and runs go through one loop, with one failure rule: 3 in a row that fail stop it. */
describe('the replay loop', () => {
  const setUp = async (records: number) => {
    const clock = new FakeClock(1_700_000_000_000);
    const store = new MemoryDeadLetterStore({ clock });
    for (let i = 1; i <= records; i++)
      await store.file(sampleDeadLetter(String(i)), { attempts: 5, deferrals: 0 }, 60_000);
    return { clock, store, jobs: new MemoryReplayQueue(), runs: new MemoryReplayRunStore() };
  };

  it('stops a replay after 3 records in a row fail to move, and goes on past fewer', async () => {
    const { clock, store, jobs } = await setUp(8);
    jobs.failNext(2);
    const first = await replayDeadLetters({ store, queue: 'index', jobs }, { clock, limit: 4 });
    expect(first).toMatchObject({ failed: [{ jobId: '1' }, { jobId: '2' }] });
    expect(first.stoppedBecause).toBeUndefined();
    expect(first.moved.map((job) => job.jobId)).toEqual(['3', '4']);
    jobs.failNext(3);
    const second = await replayDeadLetters({ store, queue: 'index', jobs }, { clock });
    expect(second.failed).toHaveLength(3);
    expect(second.stoppedBecause).toMatch(/^3 records in a row failed to move; last: memory replay queue/);
    expect(second.moved).toEqual([]);
  });

  it('stops a run by the same rule and leaves it pending, with the reason, for the next runner', async () => {
    const { clock, store, jobs, runs } = await setUp(6);
    const run = await createReplayRun({ store, runs }, 'index', { clock });
    jobs.failNext(3);
    const stopped = await runReplay({ store, runs, queue: 'index', jobs }, run.id, { clock, owner: 'a' });
    expect(stopped).toMatchObject({ status: 'pending', failed: 3, moved: 0, cursor: 3 });
    expect(stopped?.stoppedBecause).toMatch(/^3 records in a row failed to move; last: memory replay queue/);
    const done = await runReplay({ store, runs, queue: 'index', jobs }, run.id, { clock, owner: 'b' });
    expect(done).toMatchObject({ status: 'done', failed: 3, moved: 3, cursor: 6 });
    expect(jobs.jobs.map((job) => job.origin.originalJobId)).toEqual(['4', '5', '6']);
  });
});
