import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../../audit/types.js';
import { type Clock, systemClock } from '../../common/clock.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { DeadLetterReason } from '../../policy/types.js';
import type { DeadLetterStore } from '../contracts.js';
import { isWithheldDeadLetter } from '../dead-letter-record.js';
import type { ReplayPreview, ReplayRun, ReplayRunStore } from '../replay-runs.js';
import { type DeadLetterFilter, resolveFilter } from './dead-letter-filter.js';
import { DEFAULT_DEDUP_TTL_MS, planOf, type ReplayTarget, type ReplayTurn, replayLoop } from './replay.js';
import { type HealthGate, realSleep, type Sleep } from './replay-pacing.js';

const PAGE = 500;
const MAX_FAILURES_KEPT = 1_000;
/** Progress is written at least every this many records (and at every stop). */
const SAVE_EVERY = 25;
/** …and at least this often, ms, so a page following the run sees it move. */
const SAVE_EVERY_MS = 1_000;
const DEFAULT_LEASE_MS = 30_000;

/** A snapshot of the records a filter matches now: their ids, and the preview of them. */
async function takeSnapshot(
  store: DeadLetterStore,
  queue: string,
  filter: DeadLetterFilter,
  ratePerSecond: number | undefined,
  clock: Clock,
  maxReplays = Number.POSITIVE_INFINITY,
): Promise<{ preview: ReplayPreview; ids: string[] }> {
  const resolved = resolveFilter(filter, clock.now());
  const ids: string[] = [];
  const byReason: Partial<Record<DeadLetterReason, number>> = {};
  const byDependency: Record<string, number> = {};
  let malformed = 0;
  let withheld = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await store.list(queue, { ...resolved, limit: PAGE, ...(cursor ? { cursor } : {}) });
    for (const r of page.records) {
      if (r.replays >= maxReplays) continue;
      if (isWithheldDeadLetter(r)) {
        withheld++;
        continue;
      }
      ids.push(r.id);
      byReason[r.reason] = (byReason[r.reason] ?? 0) + 1;
      byDependency[r.dependency] = (byDependency[r.dependency] ?? 0) + 1;
    }
    malformed += page.malformed.length;
    if (!page.next) break;
    cursor = page.next;
  }
  const preview: ReplayPreview = {
    queue,
    filter: resolved,
    total: ids.length,
    byReason,
    byDependency,
    malformed,
  };
  if (withheld > 0) preview.withheld = withheld;
  if (ratePerSecond !== undefined) {
    preview.ratePerSecond = ratePerSecond;
    preview.estimatedMs = Math.ceil((ids.length / ratePerSecond) * 1_000);
  }
  return { preview, ids };
}

/**
 * The dry run of a bulk replay: what the filter matches now, by reason and dependency, and how long it
 * would take at `ratePerSecond`. Moves nothing.
 *
 * @example
 * const preview = await previewReplay(store, 'index', { reason: 'breaker-open' }, { ratePerSecond: 20 });
 * console.log(`${preview.total} records, about ${Math.round(preview.estimatedMs! / 1000)} s`);
 */
export async function previewReplay(
  store: DeadLetterStore,
  queue: string,
  filter: DeadLetterFilter = {},
  options: { ratePerSecond?: number; clock?: Clock } = {},
): Promise<ReplayPreview> {
  checkRate(options.ratePerSecond);
  return (await takeSnapshot(store, queue, filter, options.ratePerSecond, options.clock ?? systemClock))
    .preview;
}

/**
 * Options of {@link createReplayRun}.
 *
 * @example
 * await createReplayRun({ store, runs }, 'index', { reason: 'breaker-open', ratePerSecond: 20, by: 'alice', why: 'search is back' });
 */
export interface CreateReplayRunOptions extends DeadLetterFilter {
  ratePerSecond?: number;
  /** Wait while a record's dependency is unhealthy (the runner's `whenHealthy` gate). Default false. */
  whenHealthy?: boolean;
  /**
   * Only records whose lineage was replayed fewer times than this (their `replays`): automatic replay's
   * cap (`autoReplay.maxReplays`). Default: no cap.
   */
  maxReplays?: number;
  /** Who starts it (default `anonymous`) and why: recorded in the run and the audit log. */
  by?: string;
  why?: string;
  clock?: Clock;
}

/**
 * Creates a bulk replay run from a snapshot: the ids of the records the filter matches now (records
 * dead-lettered later are not swept up), its preview, and its progress, all stored in `runs`, so any
 * process can run it ({@link runReplay}), be stopped, and another go on. Appends `replay.create` to the
 * audit log when one is given.
 *
 * @example
 * const run = await createReplayRun({ store, runs, audit }, 'index', { dependency: 'search', ratePerSecond: 20, whenHealthy: true, by: 'alice' });
 * await runReplay({ store, runs, queue: 'index', jobs }, run.id);
 */
export async function createReplayRun(
  target: { store: DeadLetterStore; runs: ReplayRunStore; audit?: AuditLog },
  queue: string,
  options: CreateReplayRunOptions = {},
): Promise<ReplayRun> {
  const {
    ratePerSecond,
    whenHealthy = false,
    by = 'anonymous',
    why,
    clock = systemClock,
    maxReplays,
    ...filter
  } = options;
  checkRate(ratePerSecond);
  const { preview, ids } = await takeSnapshot(target.store, queue, filter, ratePerSecond, clock, maxReplays);
  const now = clock.now();
  const run = await target.runs.createRun(
    {
      queue,
      status: 'pending',
      preview,
      createdBy: by,
      ...(why === undefined ? {} : { reason: why }),
      createdAtMs: now,
      whenHealthy,
      ...(ratePerSecond === undefined ? {} : { ratePerSecond }),
      total: ids.length,
      cursor: 0,
      moved: 0,
      skipped: 0,
      failed: 0,
      failures: [],
      updatedAtMs: now,
    },
    ids,
  );
  await target.audit?.append({
    by,
    action: 'replay.create',
    target: queue,
    ...(why === undefined ? {} : { reason: why }),
    detail: { run: run.id, total: run.total, filter: preview.filter },
  });
  return run;
}

/**
 * Options of {@link runReplay}.
 *
 * @example
 * await runReplay(target, runId, { owner: 'console-1', signal, whenHealthy: { budget } });
 */
export interface RunReplayOptions {
  /** This process's name while it holds the run. Default: a random id. */
  owner?: string;
  /**
   * How long a claim on the run lasts without a write; another process takes over after it. The runner
   * renews it while it works and while it waits (for the rate or for a dependency). Default 30 s.
   */
  leaseMs?: number;
  /** The health gate of a run created with `whenHealthy: true`. */
  whenHealthy?: HealthGate;
  signal?: AbortSignal;
  onProgress?: (run: ReplayRun) => void;
  clock?: Clock;
  sleep?: Sleep;
  dedupTtlMs?: number;
}

/**
 * Runs (or goes on with) a stored bulk replay: takes the run's lease, then replays its snapshot from the
 * progress cursor, paced at its rate and, when it was created `whenHealthy`, waiting while a record's
 * dependency is unhealthy (`waitingFor` names it meanwhile); progress and each failure (with the reason)
 * are written back as it goes, at least every 25 records and every second, and the lease is renewed
 * while it waits. Stopped anywhere (the signal, a crash, a restart), the run can be run again by any
 * process: once the lease is free or has lapsed it goes on from the cursor. No record is ever moved
 * twice: each goes through the claim-add-remove of `replayDeadLetters` (a record claimed by an
 * interrupted run is put back under the same claim, which a deduplicating queue ignores), so even the records between
 * the last saved cursor and the stop are safe to handle again. A run cancelled or taken over meanwhile
 * is left at once. Three records in a row that fail to move stop the run too (the replay loop's one
 * failure rule): it is left pending, with the reason in `stoppedBecause`, for the next runner. Returns
 * the run as it was left; `undefined` when there is no such run.
 *
 * @example
 * const run = await runReplay({ store, runs, queue: 'index', jobs: bullmqReplayQueue(new Queue('index', { connection })) }, '3');
 * console.log(`${run?.moved} moved, ${run?.failed} failed`);
 */
export async function runReplay(
  target: ReplayTarget & { runs: ReplayRunStore; audit?: AuditLog },
  runId: string,
  options: RunReplayOptions = {},
): Promise<ReplayRun | undefined> {
  const clock = options.clock ?? systemClock;
  const owner = options.owner ?? randomUUID();
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const { runs, store, queue } = target;
  let run = await runs.getRun(runId);
  if (!run) return undefined;
  if (run.queue !== queue)
    throw new InvalidInputError(`replay run ${runId} is of queue "${run.queue}", not "${queue}"`);
  if (isReplayRunHeld(run, owner, clock.now()) || !isReplayRunOpen(run)) return run;
  const { waitingFor: _, stoppedBecause: __, ...unclaimed } = run;
  const claimed = await runs.updateRun({
    ...unclaimed,
    status: 'running',
    owner,
    startedAtMs: run.startedAtMs ?? clock.now(),
    startedBy: run.startedBy ?? run.createdBy,
    leaseUntilMs: clock.now() + leaseMs,
    updatedAtMs: clock.now(),
  });
  if (!claimed) return runs.getRun(runId); // another process took it first
  run = claimed;

  // Aborted by the caller's signal, or by a write that lost (cancelled, or taken over after a lapse).
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) stop.abort();
  let lost = false;
  let savedAt = clock.now();
  // The dependency the run waits for now, and the one its last write showed.
  let waitingFor: string | undefined;
  let savedWaitingFor: string | undefined;
  const save = async (changes: Partial<ReplayRun> = {}): Promise<boolean> => {
    const { waitingFor: _w, ...current } = run!;
    const next = await runs.updateRun({
      ...current,
      ...(waitingFor === undefined ? {} : { waitingFor }),
      ...changes,
      leaseUntilMs: changes.leaseUntilMs ?? clock.now() + leaseMs,
      updatedAtMs: clock.now(),
    });
    savedAt = clock.now();
    savedWaitingFor = waitingFor;
    if (!next) {
      lost = true;
      stop.abort();
      return false;
    }
    run = next;
    options.onProgress?.(next);
    return true;
  };
  // Waits in steps short enough to renew the lease before it lapses; a new wait for a dependency is
  // written first, so a page following the run shows what it waits for.
  const baseSleep = options.sleep ?? realSleep;
  const step = Math.max(1, Math.floor(leaseMs / 3));
  const sleep: Sleep = async (ms, signal) => {
    if (waitingFor !== savedWaitingFor && !(await save())) signal?.throwIfAborted();
    for (let left = ms; left > 0; left -= step) {
      await baseSleep(Math.min(step, left), signal);
      // Renewed by the time since the last write, so many short waits (a health poll) renew it too.
      if (clock.now() - savedAt >= step && !(await save())) signal?.throwIfAborted();
    }
  };
  const signal = stop.signal;
  let pending = 0;

  // The run's snapshot from its cursor, read page by page; each record when its turn comes.
  async function* turns(): AsyncGenerator<ReplayTurn> {
    while (run!.cursor < run!.total) {
      const ids = await runs.runRecordIds(run!.id, run!.cursor, PAGE);
      if (ids.length === 0) return;
      for (const id of ids) {
        if (signal.aborted) return;
        const record = await store.get(queue, id);
        yield { id, plan: record && !('malformed' in record) ? planOf(record) : undefined };
      }
    }
  }
  let stoppedBecause: string | undefined;
  try {
    const current = run;
    ({ stoppedBecause } = await replayLoop(target, turns(), {
      ...(current.ratePerSecond === undefined ? {} : { ratePerSecond: current.ratePerSecond }),
      ...(current.whenHealthy && options.whenHealthy ? { whenHealthy: options.whenHealthy } : {}),
      signal,
      clock,
      sleep,
      dedupTtlMs: options.dedupTtlMs ?? DEFAULT_DEDUP_TTL_MS,
      onWaiting: (dependency) => {
        waitingFor = dependency;
      },
      after: async (turn) => {
        const at = run!;
        const progress: Partial<ReplayRun> = { cursor: at.cursor + 1 };
        if ('error' in turn) {
          progress.failed = at.failed + 1;
          progress.failures = [...at.failures, { id: turn.id, jobId: turn.jobId, error: turn.error }].slice(
            -MAX_FAILURES_KEPT,
          );
        } else if (turn.outcome.moved) progress.moved = at.moved + 1;
        else progress.skipped = at.skipped + 1;
        // Kept in memory between saves; a stop in between re-handles at most SAVE_EVERY records, safely.
        run = { ...at, ...progress };
        if (
          ++pending >= SAVE_EVERY ||
          progress.failed !== undefined ||
          savedWaitingFor !== undefined ||
          clock.now() - savedAt >= SAVE_EVERY_MS
        ) {
          pending = 0;
          return save();
        }
        return true;
      },
    }));
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
  if (lost) return runs.getRun(runId);
  const done = run.cursor >= run.total;
  const finished: Partial<ReplayRun> = done
    ? { status: 'done', finishedAtMs: clock.now() }
    : { status: 'pending', stoppedBecause: stoppedBecause ?? 'interrupted' };
  // The lease is given back, so another process may go on at once.
  if (!(await save({ ...finished, leaseUntilMs: 0 }))) return runs.getRun(runId);
  if (done)
    await target.audit?.append({
      by: run.createdBy,
      action: 'replay.finish',
      target: queue,
      detail: { run: run.id, moved: run.moved, skipped: run.skipped, failed: run.failed },
    });
  return run;
}

/**
 * The runs to show or pick from: the store's newest (previews and finished runs included) and every run
 * started and not finished however many came after it, newest first.
 *
 * @example
 * const open = (await listReplayRuns(runs)).filter(isReplayRunOpen);
 */
export async function listReplayRuns(runs: ReplayRunStore): Promise<ReplayRun[]> {
  const [started, newest] = await Promise.all([runs.startedRuns(), runs.listRuns()]);
  const byId = new Map<string, ReplayRun>();
  for (const run of [...newest, ...started]) if (!byId.has(run.id)) byId.set(run.id, run);
  return [...byId.values()].sort((a, b) => Number(b.id) - Number(a.id) || b.id.localeCompare(a.id));
}

/**
 * True when the run is neither done nor cancelled: some process may (go on and) run it.
 *
 * @example
 * const open = (await runs.listRuns()).filter(isReplayRunOpen);
 */
export function isReplayRunOpen(run: ReplayRun): boolean {
  return run.status === 'pending' || run.status === 'running';
}

/**
 * True while another process than `owner` holds the run's lease (at `nowMs`, on the runners' clock).
 *
 * @example
 * if (!isReplayRunHeld(run, 'console-1', Date.now())) await runReplay(target, run.id, { owner: 'console-1' });
 */
export function isReplayRunHeld(run: ReplayRun, owner: string, nowMs: number): boolean {
  return run.owner !== undefined && run.owner !== owner && (run.leaseUntilMs ?? 0) > nowMs;
}

/**
 * Options of {@link startReplayRun}.
 *
 * @example
 * await startReplayRun({ runs, audit }, '3', { ratePerSecond: 10, whenHealthy: true, by: 'alice' });
 */
export interface StartReplayRunOptions {
  /** The rate to run at, chosen when starting (replaces the preview's). Unset: the preview's. */
  ratePerSecond?: number | null;
  /** Wait while a record's dependency is unhealthy. Unset: as created. */
  whenHealthy?: boolean;
  /** Who starts it. Default `anonymous`. */
  by?: string;
  clock?: Clock;
}

/**
 * Marks a previewed run started, with the rate and the health wait chosen at that moment, so any
 * runner ({@link runReplay}) takes it up, and a process that restarts goes on with it. Appends
 * `replay.start` to the audit log when one is given. Returns `undefined` when there is no such run;
 * throws when it has started already.
 *
 * @example
 * const run = await createReplayRun({ store, runs }, 'index', { reason: 'breaker-open' }); // the preview
 * await startReplayRun({ runs, audit }, run.id, { ratePerSecond: 10, whenHealthy: true, by: 'alice' });
 * await runReplay({ store, runs, queue: 'index', jobs }, run.id, { whenHealthy: gate });
 */
export async function startReplayRun(
  target: { runs: ReplayRunStore; audit?: AuditLog },
  runId: string,
  options: StartReplayRunOptions = {},
): Promise<ReplayRun | undefined> {
  const clock = options.clock ?? systemClock;
  const by = options.by ?? 'anonymous';
  const rate = options.ratePerSecond;
  checkRate(rate ?? undefined);
  const run = await target.runs.getRun(runId);
  if (!run) return undefined;
  if (run.startedAtMs !== undefined || run.status !== 'pending')
    throw new InvalidInputError(`replay run ${runId} has started already`);
  const { ratePerSecond: _, ...rest } = run;
  const ratePerSecond = rate === undefined ? run.ratePerSecond : (rate ?? undefined);
  const { ratePerSecond: _r, estimatedMs: _e, ...preview } = run.preview;
  const started = await target.runs.updateRun({
    ...rest,
    ...(ratePerSecond === undefined ? {} : { ratePerSecond }),
    preview:
      ratePerSecond === undefined
        ? preview
        : { ...preview, ratePerSecond, estimatedMs: Math.ceil((run.total / ratePerSecond) * 1_000) },
    whenHealthy: options.whenHealthy ?? run.whenHealthy,
    startedAtMs: clock.now(),
    startedBy: by,
    updatedAtMs: clock.now(),
  });
  if (!started) throw new InvalidInputError(`replay run ${runId} has started already`);
  await target.audit?.append({
    by,
    action: 'replay.start',
    target: run.queue,
    detail: {
      run: run.id,
      records: run.total,
      filter: run.preview.filter,
      ratePerSecond: ratePerSecond ?? null,
      whenHealthy: started.whenHealthy,
    },
  });
  return started;
}

/**
 * Cancels a run: whoever runs it stops at its next save; records already moved stay moved.
 *
 * @example
 * await cancelReplayRun({ runs, audit }, '3', { by: 'alice', reason: 'wrong filter' });
 */
export async function cancelReplayRun(
  target: { runs: ReplayRunStore; audit?: AuditLog },
  runId: string,
  request: { by?: string; reason?: string } = {},
): Promise<ReplayRun | undefined> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const run = await target.runs.getRun(runId);
    if (!run || run.status === 'done' || run.status === 'cancelled') return run;
    const cancelled = await target.runs.updateRun({ ...run, status: 'cancelled', leaseUntilMs: 0 });
    if (cancelled) {
      await target.audit?.append({
        by: request.by ?? 'anonymous',
        action: 'replay.cancel',
        target: run.queue,
        ...(request.reason === undefined ? {} : { reason: request.reason }),
        detail: { run: run.id, moved: run.moved },
      });
      return cancelled;
    }
  }
  throw new Error(`replay run ${runId} kept changing while being cancelled; try again`);
}

function checkRate(rate: number | undefined): void {
  if (rate !== undefined && !(Number.isFinite(rate) && rate > 0))
    throw new InvalidInputError(`ratePerSecond: ${JSON.stringify(rate)} must be a number above 0, like 20`);
}
