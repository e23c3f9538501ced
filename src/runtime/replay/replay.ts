import { z } from 'zod';
import type { AuditLog } from '../../audit/types.js';
import { type Clock, systemClock } from '../../common/clock.js';
import { parseWith } from '../../common/validation.js';
import type { DeadLetterReason } from '../../policy/types.js';
import type { DeadLetterStore, StoredDeadLetter } from '../contracts.js';
import { isMalformedDeadLetter, isWithheldDeadLetter, matchesFilter } from '../dead-letter-record.js';
import type { WorkerEvents } from '../worker-events.js';
import { type DeadLetterFilter, resolveFilter } from './dead-letter-filter.js';
import { type HealthGate, Pacer, realSleep, type Sleep, waitUntilHealthy } from './replay-pacing.js';
import type { ReplayQueue } from './replay-queue.js';

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
  /**
   * Replay these records only (by record id, in this order), those of them the filter matches: a
   * snapshot taken earlier, such as the console's bulk-replay preview. Records gone meanwhile are
   * skipped. Default: every record the filter matches.
   */
  ids?: readonly string[];
  /**
   * How long the queue keeps each replay job's deduplication key, ms, where it has one (BullMQ): a replay
   * interrupted and run again within this time never adds a job twice, even one that already completed and
   * was removed. Default: 7 days.
   */
  dedupTtlMs?: number;
  /** Aborting stops the replay between two records; the report says `interrupted`. */
  signal?: AbortSignal;
  /** Called after every record and whenever the replay starts waiting for a dependency. */
  onProgress?: (progress: ReplayProgress) => void;
  /** Time source for the rate limit and `sinceMs`. Default: the system clock. */
  clock?: Clock;
  /**
   * Where a replay that moved anything is recorded (`replay.run`: who, the filter and the counts). A log
   * that cannot be written never fails the replay: the report's `auditError` says so. Default none.
   */
  audit?: AuditLog;
  /** Who runs the replay, for the audit log. Default `anonymous`. */
  by?: string;
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
 * report.moved[0]; // { id: '17', jobId: '42', replayJobId: '42-r1.17', name: 'reindex', reason: 'max-attempts', dependency: 'search' }
 */
export interface ReplayedJob {
  /** The dead-letter record's id. */
  id: string;
  /** The original job id. */
  jobId: string;
  /** The replay job's id on the queue. */
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
  dryRun: boolean;
  /** Records that matched the filter (capped by `limit`), malformed ones not included. */
  matched: number;
  /** Jobs put back on the queue (in a dry run: the jobs that would be). */
  moved: ReplayedJob[];
  /** Records that were gone by the time their turn came (replayed or purged meanwhile). */
  skipped: { id: string; jobId?: string; why: string }[];
  /** Records that could not be moved; they stay in the store, claimed, for the next run. */
  failed: { id: string; jobId: string; error: string }[];
  /** Records that do not read: never replayed, listed with what is wrong, left in the store. */
  malformed: { id: string; problem: string }[];
  /** True when the signal stopped the replay before every record was handled. */
  interrupted: boolean;
  /** Why the replay stopped early, when it did. */
  stoppedBecause?: string;
  /** Set when the audit log could not record the replay (the replay itself stands). */
  auditError?: string;
}

/**
 * What a replay needs: the store and queue the records come from, and the queue they go back to.
 *
 * @example
 * const target: ReplayTarget = { store, queue: 'index', jobs: bullmqReplayQueue(new Queue('index', { connection })) };
 */
export interface ReplayTarget {
  store: DeadLetterStore;
  /** The queue's name in the store (the source queue). */
  queue: string;
  /** The queue jobs are put back on, through its port (see {@link ReplayQueue} for what it guarantees). */
  jobs: ReplayQueue;
  /** Receives `replayed` for every job put back. */
  events?: { emit(event: 'replayed', payload: WorkerEvents['replayed']): void };
}

const OptionsSchema = z.object({
  ratePerSecond: z.number().positive().optional(),
  ids: z.array(z.string()).optional(),
  limit: z.number().int().nonnegative().optional(),
  dryRun: z.boolean().optional(),
  dedupTtlMs: z.number().int().positive().optional(),
  whenHealthy: z.object({ pollMs: z.number().int().positive().optional() }).loose().optional(),
  by: z.string().trim().min(1).max(200).optional(),
});

/** How long a queue keeps a replay's deduplication key by default, ms: 7 days. */
export const DEFAULT_DEDUP_TTL_MS = 7 * 86_400_000;
/** Stop after this many failures in a row: the store or the queue is likely gone. */
const MAX_FAILURES_IN_A_ROW = 3;
/** Records read per page while taking the snapshot. */
const PAGE = 500;

/** The part of a record the replay loop keeps from its snapshot; the rest is read when its turn comes. */
export type Planned = Pick<
  StoredDeadLetter,
  'id' | 'jobId' | 'name' | 'reason' | 'dependency' | 'replays' | 'replay'
>;

/**
 * Replays dead-letter records onto their queue, oldest first, through the queue's port: the original
 * name, data and options, as a new job (attempts start from zero), the idempotency key kept inside the
 * data. For each record:
 *
 * 1. claim it in the store under the port's `replayKey` (derived from the record's own id); a claim an
 *    earlier run left is reused as it is;
 * 2. `jobs.putBack(record, claim)`: the queue confirms it holds the job (see {@link ReplayQueue});
 * 3. remove the record.
 *
 * Why a replay interrupted anywhere (abort, Ctrl-C, SIGKILL, a lost connection) and run again never adds a
 * job twice: a record completed is gone, and one the stop left claimed is put back under the same claim,
 * which a queue that deduplicates (BullMQ: by job id, and by a deduplication key kept `dedupTtlMs` after
 * the job completes) ignores. Why it never loses one: a record is removed only after the queue confirmed
 * its job; until then it stays, so the next run picks it up. Two replays running at once add each job
 * once and remove each record once. Three records in a row that fail to move stop the replay (the store
 * or the queue is likely gone): the one failure rule of every replay loop, runs included.
 *
 * @example
 * const jobs = bullmqReplayQueue(new Queue('index', { connection }));
 * const report = await replayDeadLetters({ store, queue: 'index', jobs }, { reason: 'budget-exhausted', ratePerSecond: 50 });
 * console.log(`${report.moved.length} moved, ${report.failed.length} failed`);
 */
export async function replayDeadLetters(
  target: ReplayTarget,
  options: ReplayOptions = {},
): Promise<ReplayReport> {
  parseWith(OptionsSchema, options, 'replay options');
  const { ratePerSecond, whenHealthy, dryRun = false, limit, signal, onProgress } = options;
  const clock = options.clock ?? systemClock;
  const sleep = options.sleep ?? realSleep;
  const dedupTtlMs = options.dedupTtlMs ?? DEFAULT_DEDUP_TTL_MS;
  const { store, queue } = target;
  const report: ReplayReport = {
    queue,
    dryRun,
    matched: 0,
    moved: [],
    skipped: [],
    failed: [],
    malformed: [],
    interrupted: false,
  };

  // A snapshot first (of what the loop needs only): records dead-lettered again while this replay runs
  // wait for the next one. `sinceMs` is resolved once, on this replay's clock.
  const filter = resolveFilter(options, clock.now());
  const planned = options.ids
    ? await snapshotOf(store, queue, options.ids, filter, limit, report)
    : await snapshot(store, queue, filter, limit, report);
  report.matched = planned.length;
  const progress = (waitingFor?: string) =>
    onProgress?.({
      total: planned.length,
      moved: report.moved.length,
      skipped: report.skipped.length,
      failed: report.failed.length,
      ...(waitingFor ? { waitingFor } : {}),
    });

  if (dryRun) {
    report.moved = planned.map((r) => describe(r, r.replay?.jobId ?? target.jobs.replayKey(r)));
    return report;
  }

  const stop = await replayLoop(
    target,
    planned.map((plan) => ({ id: plan.id, plan })),
    {
      ...(ratePerSecond === undefined ? {} : { ratePerSecond }),
      ...(whenHealthy ? { whenHealthy } : {}),
      ...(signal ? { signal } : {}),
      clock,
      sleep,
      dedupTtlMs,
      onWaiting: (dependency) => {
        if (dependency !== undefined) progress(dependency);
      },
      after: (turn) => {
        if ('error' in turn) report.failed.push({ id: turn.id, jobId: turn.jobId, error: turn.error });
        else if (turn.outcome.moved)
          report.moved.push(describe(turn.outcome.record, turn.outcome.replayJobId));
        else
          report.skipped.push({
            id: turn.id,
            ...(turn.jobId === undefined ? {} : { jobId: turn.jobId }),
            why: turn.outcome.why,
          });
        if (!turn.stops) progress();
        return true;
      },
    },
  );
  if (stop.stoppedBecause) report.stoppedBecause = stop.stoppedBecause;
  const handled = report.moved.length + report.skipped.length + report.failed.length;
  report.interrupted = signal?.aborted === true && handled < planned.length;
  if (report.interrupted) report.stoppedBecause ??= 'interrupted';
  if (options.audit && handled > 0)
    await options.audit
      .append({
        by: options.by ?? 'anonymous',
        action: 'replay.run',
        target: queue,
        detail: {
          filter,
          moved: report.moved.length,
          skipped: report.skipped.length,
          failed: report.failed.length,
          interrupted: report.interrupted,
        },
      })
      .catch((error: unknown) => {
        report.auditError = error instanceof Error ? error.message : String(error);
      });
  return report;
}

/**
 * One record's turn in the replay loop: its id, and its plan from the snapshot (none when the record is
 * gone or does not read by the time its turn comes: it is skipped with `why`).
 */
export interface ReplayTurn {
  id: string;
  plan: Planned | undefined;
  why?: string;
}

/** What became of one turn: moved or skipped (`outcome`), or failed (`error`). */
export type ReplayTurnResult = { id: string; stops: boolean } & (
  | { jobId: string | undefined; outcome: Outcome }
  | { jobId: string; error: string }
);

/**
 * Options of {@link replayLoop}.
 *
 * @example
 * const loop: ReplayLoopOptions = { clock, sleep, dedupTtlMs, after: () => true };
 */
export interface ReplayLoopOptions {
  ratePerSecond?: number;
  /** Wait before each record while its dependency is unhealthy by this gate. */
  whenHealthy?: HealthGate;
  /** Stops the loop between two records (and any wait). */
  signal?: AbortSignal;
  clock: Clock;
  sleep: Sleep;
  dedupTtlMs: number;
  /** Called with the dependency on every look while waiting for it, and with `undefined` once it is healthy. */
  onWaiting?: (dependency: string | undefined) => void;
  /**
   * Called after each turn (a failure too, before the failure rule stops the loop: `stops` says so);
   * false stops the loop at once (a run taken over or cancelled).
   */
  after: (turn: ReplayTurnResult) => boolean | Promise<boolean>;
}

/**
 * The replay loop of every replay (`replayDeadLetters`, `runReplay`, automatic replay): per record, wait
 * for its dependency and the rate, then claim, put back and remove it ({@link replayOne}), emit
 * `replayed`, and report the turn. Its one failure rule: {@link MAX_FAILURES_IN_A_ROW} records in a row
 * that fail to move stop it, with the reason in `stoppedBecause`. A turn's failure never throws; an abort
 * during a wait ends the loop quietly.
 */
export async function replayLoop(
  target: ReplayTarget,
  turns: Iterable<ReplayTurn> | AsyncIterable<ReplayTurn>,
  options: ReplayLoopOptions,
): Promise<{ stoppedBecause?: string }> {
  const { whenHealthy, signal, sleep, onWaiting } = options;
  const pacer = new Pacer(options.ratePerSecond, options.clock, sleep);
  let failuresInARow = 0;
  for await (const { id, plan, why } of turns) {
    if (signal?.aborted) break;
    if (plan)
      try {
        if (whenHealthy) {
          await waitUntilHealthy(plan.dependency, whenHealthy, sleep, signal, () =>
            onWaiting?.(plan.dependency),
          );
          onWaiting?.(undefined);
        }
        await pacer.next(signal);
      } catch (error) {
        if (signal?.aborted) break;
        throw error;
      }
    let result: ReplayTurnResult;
    if (!plan)
      result = {
        id,
        jobId: undefined,
        stops: false,
        outcome: { moved: false, why: why ?? 'no longer in the dead-letter store' },
      };
    else
      try {
        const outcome = await replayOne(target, plan, options.dedupTtlMs);
        if (outcome.moved)
          target.events?.emit('replayed', {
            queue: target.queue,
            task: outcome.record.name,
            reason: outcome.record.reason,
          });
        result = { id, jobId: plan.jobId, stops: false, outcome };
      } catch (error) {
        result = {
          id,
          jobId: plan.jobId,
          stops: failuresInARow + 1 >= MAX_FAILURES_IN_A_ROW,
          error: error instanceof Error ? error.message : String(error),
        };
      }
    failuresInARow = 'error' in result ? failuresInARow + 1 : 0;
    if (!(await options.after(result))) break;
    if ('error' in result && result.stops)
      return {
        stoppedBecause: `${failuresInARow} records in a row failed to move; last: ${result.error}`,
      };
  }
  return {};
}

/**
 * The plan of a record read from the store: what the loop keeps of it.
 *
 * @example
 * const plan = planOf(record);
 */
export function planOf(record: StoredDeadLetter): Planned {
  const { id, jobId, name, reason, dependency, replays, replay } = record;
  return { id, jobId, name, reason, dependency, replays, ...(replay ? { replay } : {}) };
}

async function snapshot(
  store: DeadLetterStore,
  queue: string,
  filter: ReturnType<typeof resolveFilter>,
  limit: number | undefined,
  report: ReplayReport,
): Promise<Planned[]> {
  const planned: Planned[] = [];
  let cursor: string | undefined;
  while (limit === undefined || planned.length < limit) {
    const page = await store.list(queue, { ...filter, limit: PAGE, ...(cursor ? { cursor } : {}) });
    for (const { id, jobId, name, reason, dependency, replays, replay } of page.records) {
      if (limit !== undefined && planned.length >= limit) break;
      planned.push({ id, jobId, name, reason, dependency, replays, ...(replay ? { replay } : {}) });
    }
    for (const { id, problem } of page.malformed) report.malformed.push({ id, problem });
    if (!page.next) break;
    cursor = page.next;
  }
  return planned;
}

/** The plan for given record ids: each read once, kept when it still reads and matches the filter. */
async function snapshotOf(
  store: DeadLetterStore,
  queue: string,
  ids: readonly string[],
  filter: ReturnType<typeof resolveFilter>,
  limit: number | undefined,
  report: ReplayReport,
): Promise<Planned[]> {
  const planned: Planned[] = [];
  for (const id of ids) {
    if (limit !== undefined && planned.length >= limit) break;
    const record = await store.get(queue, id);
    if (!record) {
      report.skipped.push({ id, why: 'no longer in the dead-letter store' });
      continue;
    }
    if (isMalformedDeadLetter(record)) {
      report.malformed.push({ id, problem: record.problem });
      continue;
    }
    if (!matchesFilter({ ...record, at: record.deadLetteredAt }, filter)) continue;
    const { jobId, name, reason, dependency, replays, replay } = record;
    planned.push({ id, jobId, name, reason, dependency, replays, ...(replay ? { replay } : {}) });
  }
  return planned;
}

/** Why a safe-form record stays: its job's data was not kept, so the job cannot be put back as it was. */
const WITHHELD =
  "withheld: the job's data was not kept when it was filed (see the record's data.why); re-enqueue the job by hand from your own source, then purge the record";

/**
 * What became of one record: moved (under `replayJobId`), or skipped, with why.
 *
 * @example
 * const outcome: Outcome = { moved: false, why: 'no longer in the dead-letter store' };
 */
export type Outcome =
  | { moved: true; record: StoredDeadLetter; replayJobId: string }
  | { moved: false; why: string };

/**
 * Claim, put back, remove: see {@link replayDeadLetters} for why each step is safe to repeat. Throws when
 * the queue does not confirm the job (the record stays, claimed).
 */
export async function replayOne(target: ReplayTarget, plan: Planned, dedupTtlMs: number): Promise<Outcome> {
  const { store, queue, jobs } = target;
  const record = await store.get(queue, plan.id);
  if (!record) return { moved: false, why: 'no longer in the dead-letter store' };
  if (isMalformedDeadLetter(record)) return { moved: false, why: `malformed: ${record.problem}` };
  if (isWithheldDeadLetter(record)) return { moved: false, why: WITHHELD };
  const claim = await store.claimReplay(queue, record.id, jobs.replayKey(record));
  if (!claim) return { moved: false, why: 'no longer in the dead-letter store' };
  const replayJobId = await jobs.putBack(record, claim, { dedupTtlMs });
  if (!(await store.completeReplay(queue, record.id)))
    return { moved: false, why: 'replayed by another run at the same time' };
  return { moved: true, record, replayJobId };
}

function describe(
  record: Pick<StoredDeadLetter, 'id' | 'jobId' | 'name' | 'reason' | 'dependency'>,
  replayJobId: string,
): ReplayedJob {
  return {
    id: record.id,
    jobId: record.jobId,
    replayJobId,
    name: record.name,
    reason: record.reason,
    dependency: record.dependency,
  };
}
