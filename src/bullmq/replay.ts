import type { ConnectionOptions } from 'bullmq';
import { z } from 'zod';
import { type Clock, systemClock } from '../common/clock.js';
import { parseWith } from '../common/validation.js';
import type { DeadLetterReason } from '../policy/types.js';
import type { DeadLetterFilter } from './dead-letter-filter.js';
import { replayJobId } from './dead-letter-ids.js';
import type { DeadLetterQueue } from './dead-letter-queue.js';
import { ReplayMover } from './replay-move.js';
import { type HealthGate, Pacer, realSleep, type Sleep, waitUntilHealthy } from './replay-pacing.js';
import type { DeadLetterRecord } from './types.js';

/**
 * Options of a replay: a filter on the records, and how fast and when to put them back.
 *
 * @example
 * await dlq.replay({ reason: 'budget-exhausted', ratePerSecond: 50, whenHealthy: { budget }, signal });
 */
export interface ReplayOptions extends DeadLetterFilter {
  /** At most this many jobs per second. Default: no limit. */
  ratePerSecond?: number;
  /** Before each record, wait while its dependency is unhealthy by this gate. Default: no waiting. */
  whenHealthy?: HealthGate;
  /** Report what would move and move nothing. Default: false. */
  dryRun?: boolean;
  /** Replay at most this many records (oldest first). Default: all that match. */
  limit?: number;
  /** Aborting stops the replay between two records; the report says `interrupted`. */
  signal?: AbortSignal;
  /** Called after every record and whenever the replay starts waiting for a dependency. */
  onProgress?: (progress: ReplayProgress) => void;
  /** Time source for the rate limit and `sinceMs`. Default: the system clock. */
  clock?: Clock;
  /** How the replay waits. Default: real timers. Tests pass a sleep that advances a FakeClock. */
  sleep?: Sleep;
}

/**
 * Where a replay is.
 *
 * @example
 * await dlq.replay({ onProgress: (p) => bar.update(p.moved + p.skipped + p.failed) });
 */
export interface ReplayProgress {
  total: number;
  moved: number;
  skipped: number;
  failed: number;
  /** Set while waiting for this dependency to become healthy. */
  waitingFor?: string;
}

/**
 * One job a replay moved (or, in a dry run, would move).
 *
 * @example
 * report.moved[0]; // { jobId: '42', replayJobId: '42-r1', name: 'reindex', reason: 'max-attempts', dependency: 'search' }
 */
export interface ReplayedJob {
  /** The original job id. */
  jobId: string;
  /** The replay job's id on the source queue. */
  replayJobId: string;
  name: string;
  reason: DeadLetterReason;
  dependency: string;
}

/**
 * What a replay did. Plain JSON.
 *
 * @example
 * const report = await dlq.replay();
 * if (report.interrupted) console.log('run it again to replay the rest');
 */
export interface ReplayReport {
  queue: string;
  deadLetterQueue: string;
  dryRun: boolean;
  /** Records that matched the filter (capped by `limit`). */
  matched: number;
  /** Jobs put back on the source queue (in a dry run: the jobs that would be). */
  moved: ReplayedJob[];
  /** Records that were gone by the time their turn came (replayed or purged meanwhile). */
  skipped: { jobId: string; why: string }[];
  /** Records that could not be moved; they stay in the dead-letter queue. */
  failed: { jobId: string; error: string }[];
  /** True when the signal stopped the replay before every record was handled. */
  interrupted: boolean;
  /** Why the replay stopped early, when it did. */
  stoppedBecause?: string;
}

const OptionsSchema = z.object({
  ratePerSecond: z.number().positive().optional(),
  limit: z.number().int().nonnegative().optional(),
  dryRun: z.boolean().optional(),
  whenHealthy: z.object({ pollMs: z.number().int().positive().optional() }).loose().optional(),
});

/** Stop after this many failures in a row: Redis is likely gone, and every further record would fail too. */
const MAX_FAILURES_IN_A_ROW = 3;

/**
 * Replays dead-letter records onto their source queue, oldest first: the original name, data and
 * options, a new BullMQ job (so attempts start from zero) with the deterministic id `<jobId>-r<n>`, the
 * idempotency key kept inside the data. Each record moves in one atomic step (see {@link ReplayMover}), so
 * an interrupted replay (abort, Ctrl-C, a crash, a lost connection) can be run again: records already
 * moved are gone from the dead-letter queue, the rest are moved once.
 *
 * @example
 * const report = await replayDeadLetters(dlq, connection, { reason: 'budget-exhausted', ratePerSecond: 50 });
 * console.log(`${report.moved.length} moved, ${report.failed.length} failed`);
 */
export async function replayDeadLetters(
  dlq: DeadLetterQueue,
  connection: ConnectionOptions,
  options: ReplayOptions = {},
): Promise<ReplayReport> {
  parseWith(OptionsSchema, options, 'replay options');
  const { ratePerSecond, whenHealthy, dryRun = false, limit, signal, onProgress } = options;
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? realSleep;
  // `sinceMs` is resolved here, on this replay's clock, so the listing and the replay share one cut-off.
  const cutoffs = [options.since, options.sinceMs === undefined ? undefined : clock.now() - options.sinceMs];
  const defined = cutoffs.filter((c): c is number => c !== undefined);
  const filter: DeadLetterFilter = {
    reason: options.reason,
    dependency: options.dependency,
    name: options.name,
    since: defined.length > 0 ? Math.max(0, ...defined) : undefined,
  };

  // A snapshot first: records dead-lettered again while this replay runs wait for the next one. Only what
  // the loop needs is kept; the mover reads each record afresh when its turn comes.
  const records: Pick<DeadLetterRecord, 'jobId' | 'name' | 'reason' | 'dependency' | 'replays'>[] = [];
  for await (const { jobId, name, reason, dependency, replays } of dlq.scan(filter)) {
    if (limit !== undefined && records.length >= limit) break;
    records.push({ jobId, name, reason, dependency, replays });
  }
  const report: ReplayReport = {
    queue: dlq.sourceQueue,
    deadLetterQueue: dlq.name,
    dryRun,
    matched: records.length,
    moved: [],
    skipped: [],
    failed: [],
    interrupted: false,
  };
  const progress = (waitingFor?: string) =>
    onProgress?.({
      total: records.length,
      moved: report.moved.length,
      skipped: report.skipped.length,
      failed: report.failed.length,
      ...(waitingFor ? { waitingFor } : {}),
    });

  if (dryRun) {
    report.moved = records.map((record) => describe(record, replayJobId(record.jobId, record.replays + 1)));
    return report;
  }

  const mover =
    records.length > 0 ? await ReplayMover.open(dlq.sourceQueue, dlq.queue, connection) : undefined;
  const pacer = new Pacer(ratePerSecond, clock, sleep);
  let failuresInARow = 0;
  try {
    for (const record of records) {
      if (signal?.aborted) break;
      try {
        if (whenHealthy)
          await waitUntilHealthy(record.dependency, whenHealthy, sleep, signal, () =>
            progress(record.dependency),
          );
        await pacer.next(signal);
      } catch (error) {
        if (signal?.aborted) break;
        throw error;
      }
      try {
        const result = await (mover as ReplayMover).move(record.jobId);
        if (result.status === 'moved') {
          report.moved.push(describe(result.record, result.replayJobId));
          dlq.events.emit('replayed', {
            queue: dlq.sourceQueue,
            task: result.record.name,
            reason: result.record.reason,
          });
        } else report.skipped.push({ jobId: record.jobId, why: 'no longer in the dead-letter queue' });
        failuresInARow = 0;
      } catch (error) {
        report.failed.push({
          jobId: record.jobId,
          error: error instanceof Error ? error.message : String(error),
        });
        if (++failuresInARow >= MAX_FAILURES_IN_A_ROW) {
          report.stoppedBecause = `${failuresInARow} records in a row failed to move; last: ${report.failed.at(-1)?.error}`;
          break;
        }
      }
      progress();
    }
  } finally {
    await mover?.close();
  }
  const handled = report.moved.length + report.skipped.length + report.failed.length;
  report.interrupted = signal?.aborted === true && handled < records.length;
  if (report.interrupted) report.stoppedBecause ??= 'interrupted';
  return report;
}

function describe(
  record: Pick<DeadLetterRecord, 'jobId' | 'name' | 'reason' | 'dependency'>,
  replayJobId: string,
): ReplayedJob {
  return {
    jobId: record.jobId,
    replayJobId,
    name: record.name,
    reason: record.reason,
    dependency: record.dependency,
  };
}
