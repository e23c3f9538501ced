import type { ReplayClaim, StoredDeadLetter } from '../contracts.js';
import type { PutBackOptions, ReplayQueue } from './replay-queue.js';

/**
 * A job a {@link MemoryReplayQueue} holds: what a worker would take from a real queue.
 *
 * @example
 * queue.jobs[0]; // { id: '42-r1.17', name: 'reindex', data: { docId: '42' }, origin: { originalJobId: '42', replays: 1, recordId: '17', claimedAt: 5 } }
 */
export interface MemoryReplayedJob {
  /** The id it went back under (the claim's). */
  id: string;
  name: string;
  data: unknown;
  /** The record's job options, as they were. */
  opts: Record<string, unknown>;
  /** Which replay of which record, under which claim. */
  origin: { originalJobId: string; replays: number; recordId: string; claimedAt: number };
}

/**
 * Options of {@link MemoryReplayQueue}.
 *
 * @example
 * new MemoryReplayQueue({ deduplicate: false }); // behaves as a queue that cannot refuse a duplicate (AMQP)
 */
export interface MemoryReplayQueueOptions {
  /**
   * Refuse a duplicate: the same claim put back twice adds one job, as BullMQ's job ids do (the key is
   * kept for good, not `dedupTtlMs`). False: every put back adds a job, as on AMQP. Default true.
   */
  deduplicate?: boolean;
}

/**
 * The replay port in memory, for tests and the simulator: `jobs` is what it holds, in the order put back.
 * `failNext(n)` makes the next `n` put backs fail unconfirmed, as a queue that is down.
 *
 * @example
 * const jobs = new MemoryReplayQueue();
 * await replayDeadLetters({ store, queue: 'index', jobs });
 * jobs.jobs.length; // how many went back
 */
export class MemoryReplayQueue implements ReplayQueue {
  /** The jobs put back, oldest first. */
  readonly jobs: MemoryReplayedJob[] = [];
  readonly #deduplicate: boolean;
  readonly #keys = new Set<string>();
  #failures = 0;

  constructor(options: MemoryReplayQueueOptions = {}) {
    this.#deduplicate = options.deduplicate ?? true;
  }

  /** `<originalJobId>-r<n>.<recordId>`, as on BullMQ. */
  replayKey(record: Pick<StoredDeadLetter, 'id' | 'jobId' | 'replays'>): string {
    return `${record.jobId}-r${record.replays + 1}.${record.id}`;
  }

  async putBack(record: StoredDeadLetter, claim: ReplayClaim, _options: PutBackOptions): Promise<string> {
    if (this.#failures > 0) {
      this.#failures--;
      throw new Error(`memory replay queue: job ${claim.jobId} was not confirmed (the queue is down)`);
    }
    if (this.#deduplicate && this.#keys.has(claim.jobId)) return claim.jobId;
    this.#keys.add(claim.jobId);
    this.jobs.push({
      id: claim.jobId,
      name: record.name,
      data: structuredClone(record.data),
      opts: structuredClone(record.opts ?? {}),
      origin: {
        originalJobId: record.jobId,
        replays: record.replays + 1,
        recordId: record.id,
        claimedAt: claim.claimedAt,
      },
    });
    return claim.jobId;
  }

  /** The next `count` put backs fail, unconfirmed. */
  failNext(count = 1): void {
    this.#failures += count;
  }
}
