import type { JobsOptions } from 'bullmq';
import type { ReplayClaim, StoredDeadLetter } from '../runtime/contracts.js';
import type { PutBackOptions, ReplayQueue } from '../runtime/replay/replay-queue.js';
import { replayJobCandidate, replayJobId, replayJobOptions, replayOrigin } from './dead-letter-ids.js';

/**
 * The part of a BullMQ `Queue` replay uses: add a job, and read one back by id.
 *
 * @example
 * const jobs: BullMQReplayJobs = new Queue('index', { connection });
 */
export interface BullMQReplayJobs {
  add(name: string, data: unknown, opts?: JobsOptions): Promise<{ id?: string | undefined }>;
  getJob(id: string): Promise<{ id?: string | undefined; opts?: object } | undefined>;
}

/** Candidate ids tried per record before it counts as failed (see `replayJobCandidate`). */
const MAX_CANDIDATES = 5;

/**
 * The replay port on a BullMQ queue (any backend, through its public API only). Its key is
 * `replayJobId` (`<originalJobId>-r<n>.<recordId>`), and it puts a record back with
 * `queue.add(name, data, { ...opts, jobId, deduplication: { id: jobId, ttl: dedupTtlMs } })`, then reads
 * the job under that id to check it is this replay's (its `stormguardReplay` option names this record and
 * claim); when another job holds the id it tries the next candidate (`replayJobCandidate`). BullMQ
 * ignores an add whose job id exists, and the deduplication key (kept `dedupTtlMs` after the job
 * completes, even when `removeOnComplete` removed it) ignores one whose job is gone: the same record and
 * claim put back twice add one job.
 *
 * @example
 * const jobs = bullmqReplayQueue(new Queue('index', { connection }));
 * await runReplay({ store, runs, queue: 'index', jobs }, runId);
 */
export function bullmqReplayQueue(queue: BullMQReplayJobs): ReplayQueue {
  return {
    replayKey: (record) => replayJobId(record.jobId, record.replays + 1, record.id),
    putBack: (record, claim, options) => addOnce(queue, record, claim, options),
  };
}

/** Adds the record's job under the first candidate id no other job holds; returns the id it is under. */
async function addOnce(
  queue: BullMQReplayJobs,
  record: StoredDeadLetter,
  claim: ReplayClaim,
  { dedupTtlMs }: PutBackOptions,
): Promise<string> {
  for (let attempt = 1; attempt <= MAX_CANDIDATES; attempt++) {
    const jobId = replayJobCandidate(claim.jobId, attempt);
    const opts = replayJobOptions(record, { jobId, claimedAt: claim.claimedAt }, dedupTtlMs);
    const added = await queue.add(record.name, record.data, opts as JobsOptions);
    // Another id back: the deduplication key names another job, so this id is not this replay's.
    if (added.id !== undefined && String(added.id) !== jobId) continue;
    const held = await queue.getJob(jobId);
    // Gone already: this replay's job ran and was removed (a job that is not ours does not vanish between
    // two calls of one replay). Present: ours only if it names this record and this claim.
    if (!held) return jobId;
    const origin = replayOrigin(held);
    if (origin.recordId === record.id && origin.claimedAt === claim.claimedAt) return jobId;
  }
  throw new Error(
    `replay of record ${record.id} (job ${record.jobId}): other jobs hold ids ${replayJobCandidate(claim.jobId, 1)} to ${replayJobCandidate(claim.jobId, MAX_CANDIDATES)}; the record is kept, remove those jobs or purge the record`,
  );
}
