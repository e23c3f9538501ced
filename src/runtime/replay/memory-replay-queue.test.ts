import { MemoryReplayQueue } from './memory-replay-queue.js';
import { describeReplayQueue } from './replay-queue.case.js';
import type { ReplayQueue } from './replay-queue.js';

/** The same queue, down: every put back fails, unconfirmed. */
function downed(queue: MemoryReplayQueue): ReplayQueue {
  return {
    replayKey: (record) => queue.replayKey(record),
    putBack: async (record, claim, options) => {
      queue.failNext();
      return queue.putBack(record, claim, options);
    },
  };
}

for (const deduplicate of [true, false])
  describeReplayQueue(
    deduplicate ? 'MemoryReplayQueue' : 'MemoryReplayQueue without deduplication (as AMQP)',
    async () => {
      const jobs = new MemoryReplayQueue({ deduplicate });
      return {
        jobs,
        down: downed(jobs),
        held: async () => jobs.jobs.map(({ id, name, data, origin }) => ({ id, name, data, origin })),
        close: async () => {},
      };
    },
    { deduplicates: deduplicate },
  );
