import type { Job, Queue } from 'bullmq';
import type { DeadLetterRecord, DeadLetterStore, RetentionLimits } from '../runtime/contracts.js';
import { assertDeadLetterRecord } from '../runtime/dead-letter-record.js';

/**
 * What moving a queue's old BullMQ dead-letter queue (`<queue>-dlq`) into the store did. Plain JSON.
 *
 * @example
 * const report: LegacyMoveReport = { queue: 'index', from: 'index-dlq', moved: 120, alreadyFiled: 3, kept: [] };
 */
export interface LegacyMoveReport {
  queue: string;
  /** The BullMQ queue the records came from. */
  from: string;
  /** Records filed in the store (their BullMQ jobs removed). */
  moved: number;
  /** Records an interrupted earlier run had filed already: their BullMQ jobs are removed now. */
  alreadyFiled: number;
  /** Jobs that do not read as a dead-letter record: left in the BullMQ queue, with what is wrong. */
  kept: { jobId: string; problem: string }[];
  /** Records of the queue retention evicted while these were filed (absent when none). */
  evicted?: number;
}

/**
 * What moving an old BullMQ dead-letter queue would let the target queue's retention drop, counted before
 * anything is moved. Plain JSON.
 *
 * @example
 * const preview: LegacyMovePreview = { queue: 'index', from: 'index-dlq', records: 5,
 *   retention: { maxAgeMs: 2_592_000_000 }, wouldEvict: { total: 3, pastMaxAge: 3, overMaxCount: 0 } };
 */
export interface LegacyMovePreview {
  queue: string;
  from: string;
  /** Records the move would file (records an earlier run filed already are not counted). */
  records: number;
  /** The target queue's retention now. */
  retention: RetentionLimits;
  /**
   * Records retention would drop once they are filed: `pastMaxAge`, records (moved or held) dead-lettered
   * more than `maxAgeMs` ago, which the next filing drops; `overMaxCount`, the oldest of the rest beyond
   * `maxCount`. `total` is their sum.
   */
  wouldEvict: { total: number; pastMaxAge: number; overMaxCount: number };
}

/** How long the attempt state written with a moved record lives: what makes a re-run file it once. */
const MOVED_STATE_TTL_MS = 7 * 86_400_000;
const PAGE = 200;
/** Where stormguard before the dead-letter store kept records: paused (BullMQ 5), or waiting. */
// biome-ignore lint/suspicious/noExplicitAny: 'paused' is a job type of BullMQ 5 only; BullMQ 6 still reads it.
const HELD = ['paused', 'wait'] as any[];

/**
 * Counts what moving an old BullMQ dead-letter queue (`<queue>-dlq`) into `store` would let the queue's
 * retention drop, without moving or writing anything: records already past `maxAgeMs` (by their own
 * `deadLetteredAt`, whether they are in the old queue or held by the store) are dropped by the next
 * filing, and what remains beyond `maxCount` goes oldest first. `now` is the time to measure age against
 * (default the system clock).
 *
 * @example
 * const preview = await previewLegacyMove({ from: new Queue('index-dlq', { connection }), queue: 'index', store });
 * if (preview.wouldEvict.total > 0) console.log(`retention would drop ${preview.wouldEvict.total} record(s)`);
 */
export async function previewLegacyMove(options: {
  from: Pick<Queue, 'name' | 'getJobs'>;
  queue: string;
  store: DeadLetterStore;
  now?: number;
}): Promise<LegacyMovePreview> {
  const { from, queue, store } = options;
  const summary = await store.queue(queue);
  const retention = summary?.retention ?? {};
  const cutoff =
    retention.maxAgeMs === undefined ? undefined : (options.now ?? Date.now()) - retention.maxAgeMs;
  let records = 0;
  let incomingOld = 0;
  for (let start = 0; ; start += PAGE) {
    const jobs: (Job | undefined)[] = await from.getJobs(HELD, start, start + PAGE - 1, true);
    if (jobs.length === 0) break;
    for (const job of jobs) {
      const record = job ? legacyRecord(job.data, queue) : 'gone';
      if (typeof record === 'string') continue;
      if ((await store.readAttempts(record))?.deadLettered) continue;
      records += 1;
      if (cutoff !== undefined && record.deadLetteredAt < cutoff) incomingOld += 1;
    }
  }
  const held = summary?.count ?? 0;
  const heldOld = cutoff === undefined || held === 0 ? 0 : await store.count(queue, { before: cutoff });
  const pastMaxAge = incomingOld + heldOld;
  const kept = held + records - pastMaxAge;
  const overMaxCount = retention.maxCount === undefined ? 0 : Math.max(0, kept - retention.maxCount);
  return {
    queue,
    from: from.name,
    records,
    retention,
    wouldEvict: { total: pastMaxAge + overMaxCount, pastMaxAge, overMaxCount },
  };
}

/**
 * Moves the records of an old BullMQ dead-letter queue (`<queue>-dlq`, as stormguard kept them before the
 * dead-letter store) into `store`, through BullMQ's public API only: `getJobs`, then `job.remove()` once
 * the record is filed. Safe to interrupt and run again: a record filed before its job was removed is
 * filed once (filing is idempotent per job id and creation time), and its job is removed on the next run.
 * A job that is not a record is left where it is and reported. It moves whatever the queue's retention
 * drops as a result (counted in `evicted`): ask {@link previewLegacyMove} first, as `stormguard migrate`
 * does.
 *
 * @example
 * const from = new Queue('index-dlq', { connection });
 * const report = await moveLegacyDeadLetters({ from, queue: 'index', store });
 */
export async function moveLegacyDeadLetters(options: {
  from: Pick<Queue, 'name' | 'getJobs'>;
  queue: string;
  store: DeadLetterStore;
  onProgress?: (report: LegacyMoveReport) => void;
}): Promise<LegacyMoveReport> {
  const { from, queue, store } = options;
  const report: LegacyMoveReport = { queue, from: from.name, moved: 0, alreadyFiled: 0, kept: [] };
  await store.registerQueue(queue);
  for (;;) {
    // Moved jobs leave the list; the ones kept stay at its start, so the next page starts after them.
    const jobs: (Job | undefined)[] = await from.getJobs(
      HELD,
      report.kept.length,
      report.kept.length + PAGE - 1,
      true,
    );
    if (jobs.length === 0) return report;
    for (const job of jobs) {
      if (!job) continue;
      const record = legacyRecord(job.data, queue);
      if (typeof record === 'string') {
        report.kept.push({ jobId: String(job.id), problem: record });
        continue;
      }
      const { created, evicted } = await store.file(
        record,
        { attempts: record.attemptsMade, deferrals: 0 },
        MOVED_STATE_TTL_MS,
      );
      await job.remove();
      if (evicted) report.evicted = (report.evicted ?? 0) + evicted.count;
      if (created) report.moved += 1;
      else report.alreadyFiled += 1;
    }
    options.onProgress?.(report);
  }
}

/** The record an old dead-letter job holds, for `queue`, or what keeps it from being one. */
function legacyRecord(data: unknown, queue: string): DeadLetterRecord | string {
  if (typeof data !== 'object' || data === null) return 'the job data is not a dead-letter record';
  const old = data as Partial<DeadLetterRecord>;
  const record = { ...old, queue, replays: old.replays ?? 0, opts: old.opts ?? {} } as DeadLetterRecord;
  try {
    assertDeadLetterRecord(record);
    return record;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
