import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import type { AuditLog } from '../audit/types.js';
import { type Clock, systemClock } from '../common/clock.js';
import { parseWith } from '../common/validation.js';
import type { DeadLetterReason } from '../policy/types.js';
import type { DeadLetterStore, ReplayClaim, StoredDeadLetter } from '../runtime/contracts.js';
import { isMalformedDeadLetter, isWithheldDeadLetter, matchesFilter } from '../runtime/dead-letter-record.js';
import type { WorkerEvents } from '../runtime/worker-events.js';
import { type DeadLetterFilter, resolveFilter } from './dead-letter-filter.js';
import { replayJobCandidate, replayJobId, replayJobOptions, replayOrigin } from './dead-letter-ids.js';
import { type HealthGate, Pacer, realSleep, type Sleep, waitUntilHealthy } from './replay-pacing.js';

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
   * How long BullMQ keeps each replay job's deduplication key, ms: a replay interrupted and run again
   * within this time never adds a job twice, even one that already completed and was removed. Default:
   * 7 days.
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

/** What a replay needs: the store and queue the records come from, and the BullMQ queue they go back to. */
export interface ReplayTarget {
  store: DeadLetterStore;
  /** The queue's name in the store (the source queue). */
  queue: string;
  /** The BullMQ queue jobs are re-added to: any backend, through its public API only. */
  jobs: ReplayQueue;
  /** Receives `replayed` for every job put back. */
  events?: { emit(event: 'replayed', payload: WorkerEvents['replayed']): void };
}

/**
 * The part of a BullMQ `Queue` a replay uses.
 *
 * @example
 * const jobs: ReplayQueue = new Queue('index', { connection });
 */
export interface ReplayQueue {
  add(name: string, data: unknown, opts?: JobsOptions): Promise<{ id?: string | undefined }>;
  getJob(id: string): Promise<{ id?: string | undefined; opts?: object } | undefined>;
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

const DEFAULT_DEDUP_TTL_MS = 7 * 86_400_000;
/** Stop after this many failures in a row: the store or the queue is likely gone. */
const MAX_FAILURES_IN_A_ROW = 3;
/** Candidate ids tried per record before it counts as failed (see `replayJobCandidate`). */
const MAX_CANDIDATES = 5;
/** Records read per page while taking the snapshot. */
const PAGE = 500;

/** The part of a record the replay loop keeps from its snapshot; the rest is read when its turn comes. */
export type Planned = Pick<
  StoredDeadLetter,
  'id' | 'jobId' | 'name' | 'reason' | 'dependency' | 'replays' | 'replay'
>;

/**
 * Replays dead-letter records onto their queue, oldest first, through BullMQ's public API only: the
 * original name, data and options, as a new BullMQ job (attempts start from zero), the idempotency key
 * kept inside the data. For each record:
 *
 * 1. claim it in the store under a replay job id derived from the record's own id (`replayJobId`); a
 *    claim an earlier run left is reused as it is;
 * 2. `queue.add(name, data, { ...opts, jobId, deduplication: { id: jobId, ttl: dedupTtlMs } })`, and check
 *    that the job now under that id is this replay's (its `stormguardReplay` option names this record and
 *    claim); if another job holds the id, try the next candidate id (`replayJobCandidate`);
 * 3. remove the record.
 *
 * Why a replay interrupted anywhere (abort, Ctrl-C, SIGKILL, a lost connection) and run again never adds a
 * job twice: the second run reuses the claim, so it re-adds under the same id; BullMQ ignores an add
 * whose job id exists, and the deduplication key (kept `dedupTtlMs` after the job completes, even when
 * `removeOnComplete` removed it) ignores one whose job is gone. Why it never loses one: a record is
 * removed only after its job is in the queue, checked by id and origin; until then it stays, so the
 * next run picks it up. Two replays running at once add each job once and remove each record once.
 *
 * @example
 * const report = await replayDeadLetters({ store, queue: 'index', jobs: new Queue('index', { connection }) }, {
 *   reason: 'budget-exhausted', ratePerSecond: 50 });
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
    report.moved = planned.map((r) =>
      describe(r, r.replay?.jobId ?? replayJobId(r.jobId, r.replays + 1, r.id)),
    );
    return report;
  }

  const pacer = new Pacer(ratePerSecond, clock, sleep);
  let failuresInARow = 0;
  for (const plan of planned) {
    if (signal?.aborted) break;
    try {
      if (whenHealthy)
        await waitUntilHealthy(plan.dependency, whenHealthy, sleep, signal, () => progress(plan.dependency));
      await pacer.next(signal);
    } catch (error) {
      if (signal?.aborted) break;
      throw error;
    }
    try {
      const outcome = await replayOne(target, plan, dedupTtlMs);
      if (outcome.moved) {
        report.moved.push(describe(outcome.record, outcome.replayJobId));
        target.events?.emit('replayed', { queue, task: outcome.record.name, reason: outcome.record.reason });
      } else report.skipped.push({ id: plan.id, jobId: plan.jobId, why: outcome.why });
      failuresInARow = 0;
    } catch (error) {
      report.failed.push({
        id: plan.id,
        jobId: plan.jobId,
        error: error instanceof Error ? error.message : String(error),
      });
      if (++failuresInARow >= MAX_FAILURES_IN_A_ROW) {
        report.stoppedBecause = `${failuresInARow} records in a row failed to move; last: ${report.failed.at(-1)?.error}`;
        break;
      }
    }
    progress();
  }
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

export type Outcome =
  | { moved: true; record: StoredDeadLetter; replayJobId: string }
  | { moved: false; why: string };

/** Claim, add (once), remove: see {@link replayDeadLetters} for why each step is safe to repeat. */
export async function replayOne(target: ReplayTarget, plan: Planned, dedupTtlMs: number): Promise<Outcome> {
  const { store, queue } = target;
  const record = await store.get(queue, plan.id);
  if (!record) return { moved: false, why: 'no longer in the dead-letter store' };
  if (isMalformedDeadLetter(record)) return { moved: false, why: `malformed: ${record.problem}` };
  if (isWithheldDeadLetter(record)) return { moved: false, why: WITHHELD };
  const claim = await store.claimReplay(
    queue,
    record.id,
    replayJobId(record.jobId, record.replays + 1, record.id),
  );
  if (!claim) return { moved: false, why: 'no longer in the dead-letter store' };
  const jobId = await addOnce(target, record, claim, dedupTtlMs);
  if (!(await store.completeReplay(queue, record.id)))
    return { moved: false, why: 'replayed by another run at the same time' };
  return { moved: true, record, replayJobId: jobId };
}

/** Adds the record's job under the first candidate id no other job holds; returns the id it is under. */
async function addOnce(
  target: ReplayTarget,
  record: StoredDeadLetter,
  claim: ReplayClaim,
  dedupTtlMs: number,
): Promise<string> {
  for (let attempt = 1; attempt <= MAX_CANDIDATES; attempt++) {
    const jobId = replayJobCandidate(claim.jobId, attempt);
    const opts = replayJobOptions(record, { jobId, claimedAt: claim.claimedAt }, dedupTtlMs);
    const added = await target.jobs.add(record.name, record.data, opts as JobsOptions);
    // Another id back: the deduplication key names another job, so this id is not this replay's.
    if (added.id !== undefined && String(added.id) !== jobId) continue;
    const held = await target.jobs.getJob(jobId);
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
