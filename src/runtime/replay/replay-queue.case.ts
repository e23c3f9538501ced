/**
 * The replay queue port's contract ({@link ReplayQueue}), written once and run against every implementation
 * (memory, BullMQ; later AMQP) with no branch for any of them. The one thing that differs between queues is
 * declared, not detected: whether the queue refuses a duplicate (`deduplicates`). No case reads a job back
 * through the port: a queue that cannot (AMQP) passes the same cases, and the harness reads what the queue
 * holds by its own means. Records come from a memory dead-letter store: the store is not under test here,
 * its claim is what "never twice" rests on.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../common/clock.js';
import type { DeadLetterRecord, StoredDeadLetter } from '../contracts.js';
import { sampleDeadLetter } from '../dead-letter-store.case.js';
import { MemoryDeadLetterStore } from '../memory-dead-letter-store.js';
import { DEFAULT_DEDUP_TTL_MS, planOf, replayDeadLetters, replayOne } from './replay.js';
import type { ReplayQueue } from './replay-queue.js';

/**
 * A job the queue under test holds, as the harness reads it (BullMQ: `getJobs`; AMQP: a consumer).
 *
 * @example
 * const held: HeldReplayJob = { id: '42-r1.1', name: 'reindex', data: {}, origin: { originalJobId: '42', replays: 1, recordId: '1' } };
 */
export interface HeldReplayJob {
  id: string;
  name: string;
  data: unknown;
  origin: { originalJobId: string; replays: number; recordId?: string; claimedAt?: number };
}

/**
 * One fresh, empty queue behind the port, and what the suite needs to look inside it.
 *
 * @example
 * const harness: ReplayQueueHarness = { jobs, down, held: async () => [], close: async () => {} };
 */
export interface ReplayQueueHarness {
  /** The port under test. */
  jobs: ReplayQueue;
  /** The same queue through a connection that is down: every put back fails, unconfirmed. */
  down: ReplayQueue;
  /** Every job the queue holds now, read by the harness's own means (never through the port). */
  held(): Promise<HeldReplayJob[]>;
  close(): Promise<void>;
}

/**
 * What a queue declares about itself.
 *
 * @example
 * const traits: ReplayQueueTraits = { deduplicates: false }; // AMQP
 */
export interface ReplayQueueTraits {
  /** The same record and claim put back twice add one job (the port's guarantee 3). */
  deduplicates: boolean;
}

const QUEUE = 'index';
const T0 = 1_700_000_000_000;

/** Registers the replay queue port's conformance cases under `describe(name)`. */
export function describeReplayQueue(
  name: string,
  open: () => Promise<ReplayQueueHarness>,
  traits: ReplayQueueTraits,
): void {
  describe(`${name} (replay queue port contract)`, () => {
    let harness: ReplayQueueHarness;
    let store: MemoryDeadLetterStore;
    let clock: FakeClock;

    beforeEach(async () => {
      clock = new FakeClock(T0);
      store = new MemoryDeadLetterStore({ clock });
      harness = await open();
    });
    afterEach(async () => {
      await harness.close();
    });

    const file = async (
      jobId: string,
      overrides: Partial<DeadLetterRecord> = {},
    ): Promise<StoredDeadLetter> => {
      const { id } = await store.file(
        sampleDeadLetter(jobId, overrides),
        { attempts: 5, deferrals: 0 },
        60_000,
      );
      const stored = await store.get(QUEUE, id);
      if (!stored || 'malformed' in stored) throw new Error(`record ${id} did not read back`);
      return stored;
    };
    const target = (jobs: ReplayQueue = harness.jobs) => ({ store, queue: QUEUE, jobs });
    const options = { dedupTtlMs: DEFAULT_DEDUP_TTL_MS };

    it('gives each replay of each record its own key, the same every time it is asked', async () => {
      const { jobs } = harness;
      const key = jobs.replayKey({ id: '1', jobId: '42', replays: 0 });
      expect(typeof key).toBe('string');
      expect(jobs.replayKey({ id: '1', jobId: '42', replays: 0 })).toBe(key);
      const others = [
        jobs.replayKey({ id: '2', jobId: '42', replays: 0 }), // a reused job id: another record
        jobs.replayKey({ id: '1', jobId: '42', replays: 1 }), // the next replay of the lineage
        jobs.replayKey({ id: '1', jobId: '43', replays: 0 }),
        jobs.replayKey({ id: '1', jobId: 'a:b', replays: 0 }),
      ];
      expect(new Set([key, ...others]).size).toBe(5);
    });

    it('puts a record back as it was, marked as its replay, under the id it resolves with', async () => {
      const record = await file('42', { data: { docId: '42', text: 'é "quoted"' }, replays: 1 });
      const outcome = await replayOne(target(), planOf(record), options.dedupTtlMs);
      expect(outcome).toMatchObject({ moved: true });
      const held = await harness.held();
      expect(held).toEqual([
        {
          id: outcome.moved ? outcome.replayJobId : '',
          name: record.name,
          data: { docId: '42', text: 'é "quoted"' },
          origin: expect.objectContaining({ originalJobId: '42', replays: 2, recordId: record.id }),
        },
      ]);
      expect(await store.get(QUEUE, record.id)).toBeUndefined();
    });

    it('puts a key with a colon back (a hand-made or migrated job id)', async () => {
      const record = await file('tenant:7:42');
      expect(await replayOne(target(), planOf(record), options.dedupTtlMs)).toMatchObject({ moved: true });
      expect((await harness.held()).map((job) => job.origin.originalJobId)).toEqual(['tenant:7:42']);
    });

    it('never puts a record back twice once its replay completed: the claim, whatever the queue can tell', async () => {
      for (const jobId of ['1', '2', '3']) await file(jobId);
      const first = await replayDeadLetters(target(), { clock });
      const second = await replayDeadLetters(target(), { clock });
      expect(first.moved).toHaveLength(3);
      expect(second).toMatchObject({ matched: 0, moved: [], failed: [] });
      expect((await harness.held()).map((job) => job.origin.originalJobId).sort()).toEqual(['1', '2', '3']);
    });

    it('never loses one: a put back the queue did not confirm keeps the record, claimed, for the next run', async () => {
      const record = await file('42');
      await expect(replayOne(target(harness.down), planOf(record), options.dedupTtlMs)).rejects.toThrow();
      const kept = await store.get(QUEUE, record.id);
      expect(kept).toMatchObject({ id: record.id, replay: { jobId: harness.jobs.replayKey(record) } });
      expect(await harness.held()).toEqual([]);
      expect(await replayOne(target(), planOf(record), options.dedupTtlMs)).toMatchObject({ moved: true });
      expect(await harness.held()).toHaveLength(1);
    });

    it('stops a replay after three records in a row the queue does not confirm, every record kept', async () => {
      for (const jobId of ['1', '2', '3', '4']) await file(jobId);
      const report = await replayDeadLetters(target(harness.down), { clock });
      expect(report.failed).toHaveLength(3);
      expect(report.stoppedBecause).toMatch(/^3 records in a row failed to move; last: /);
      expect(await store.count(QUEUE)).toBe(4);
    });

    it(`${traits.deduplicates ? 'adds nothing' : 'may add the job again'} when a replay stopped between the put back and the removal is run again`, async () => {
      const record = await file('42');
      const claim = await store.claimReplay(QUEUE, record.id, harness.jobs.replayKey(record));
      if (!claim) throw new Error('no claim');
      const id = await harness.jobs.putBack(record, claim, options);
      // The process stops here: the record is still in the store, claimed. The next run goes on with it.
      const rerun = await replayDeadLetters(target(), { clock });
      expect(rerun.moved).toEqual([expect.objectContaining({ id: record.id, replayJobId: id })]);
      expect(await store.get(QUEUE, record.id)).toBeUndefined();
      const held = await harness.held();
      expect(held.every((job) => job.origin.recordId === record.id)).toBe(true);
      expect(held).toHaveLength(traits.deduplicates ? 1 : 2);
    });

    it(`${traits.deduplicates ? 'adds one job' : 'removes each record once'} when two replays run at once`, async () => {
      for (const jobId of ['1', '2', '3', '4', '5']) await file(jobId);
      const [a, b] = await Promise.all([
        replayDeadLetters(target(), { clock }),
        replayDeadLetters(target(), { clock }),
      ]);
      const moved = [...a.moved, ...b.moved].map((job) => job.id).sort();
      expect(moved).toEqual([...new Set(moved)]);
      expect(moved).toHaveLength(5);
      expect(await store.count(QUEUE)).toBe(0);
      const held = await harness.held();
      const records = new Set(held.map((job) => job.origin.recordId));
      expect(records.size).toBe(5);
      if (traits.deduplicates) expect(held).toHaveLength(5);
    });
  });
}
