import type { ReplayClaim, StoredDeadLetter } from '../contracts.js';

/**
 * The queue a replay puts dead-lettered work back on: the one thing the replay engine asks of a queue
 * engine. BullMQ implements it with `Queue.add` and `getJob` (`bullmqReplayQueue` in `stormguard/bullmq`);
 * `MemoryReplayQueue` implements it for tests and the simulator; a queue that can neither read a message
 * back nor refuse a duplicate (AMQP) can implement it too.
 *
 * How the engine uses it, for each record: `key = replayKey(record)`; `claim = store.claimReplay(queue,
 * record.id, key)` (a claim an interrupted replay left is reused as it was); `putBack(record, claim)`;
 * then `store.completeReplay(queue, record.id)` removes the record. So:
 *
 * - **Never lost** rests on the engine: a record is removed only after `putBack` resolved.
 * - **Never twice** rests first on the store's claim: a record replayed and completed is gone, so no
 *   later run puts it back again, and two runs at once complete it once. The one gap the claim leaves
 *   is a replay stopped after `putBack` resolved and before `completeReplay`: the next run finds the
 *   claim and calls `putBack` again with the same claim. A queue that can refuse a duplicate closes
 *   that gap (guarantee 3); one that cannot (AMQP) may deliver that record's work a second time, and the
 *   job's idempotency key (kept inside its data) is what makes the second delivery harmless.
 *
 * @example
 * const jobs: ReplayQueue = bullmqReplayQueue(new Queue('index', { connection }));
 * await runReplay({ store, runs, queue: 'index', jobs }, runId);
 */
export interface ReplayQueue {
  /**
   * The deduplication key the next replay of `record` is claimed under, and the id its work goes back
   * under (the first choice: see `putBack`). An implementation must make it
   *
   * 1. deterministic: the same record id, job id and `replays` give the same key, in any process;
   * 2. unique per record: two records (of one queue) never share a key, whatever their job ids, and a
   *    record replayed again later (`replays` one higher) gets a new one;
   * 3. acceptable to the queue as an id or deduplication key as it is.
   *
   * Called with no I/O; a dry run shows it as the id a record would go back under.
   */
  replayKey(record: Pick<StoredDeadLetter, 'id' | 'jobId' | 'replays'>): string;

  /**
   * Puts the record's work back on the queue: its `name` and `data` exactly as stored (the idempotency
   * key is inside the data), with the queue's own options as they were minus placement and scheduling,
   * as a new job whose attempts start from zero, marked as the `replays + 1`-th replay of `record.id` under
   * `claim` (so a worker files it again under its original job id if it fails again). An implementation
   * must:
   *
   * 1. resolve only once the queue has confirmed it holds the work (a write acknowledged, a publisher
   *    confirm), never on a send that may still be lost; and reject when it cannot tell, so the engine
   *    keeps the record (claimed) for the next run;
   * 2. resolve with the id the work is under, for reports: `claim.jobId`, or one derived from it when the
   *    queue made it choose another (a job that is not this replay's already holds that id);
   * 3. where the queue can refuse a duplicate id or deduplicate by key: called again with the same record
   *    and claim (any process, any time within `dedupTtlMs`), add nothing and resolve with the same id,
   *    even when the first work already ran and was removed. A queue that cannot (AMQP) adds it again and
   *    says so in its documentation: the engine's claim keeps that to the stop-and-rerun gap above;
   * 4. never touch the dead-letter store: claiming and removing records is the engine's.
   */
  putBack(record: StoredDeadLetter, claim: ReplayClaim, options: PutBackOptions): Promise<string>;
}

/**
 * What the engine passes to {@link ReplayQueue.putBack}.
 *
 * @example
 * await jobs.putBack(record, claim, { dedupTtlMs: 7 * 86_400_000 });
 */
export interface PutBackOptions {
  /**
   * How long the queue keeps the deduplication key after the work, ms, where it has one: a replay run
   * again within it never adds the work twice. Queues without deduplication ignore it.
   */
  dedupTtlMs: number;
}
