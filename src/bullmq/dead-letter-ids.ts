/**
 * How replayed jobs are named in BullMQ. A replay job's id is derived from the dead-letter record's own
 * id (unique per queue in the store, never reused), never from the original job id alone: a producer
 * that reuses its job ids, or an older replay's job still in the queue, can never make BullMQ take a
 * replay for a duplicate and skip it.
 */

/**
 * The job option stormguard sets on a replayed job: where it comes from. BullMQ keeps unknown options as
 * they are, so it survives in `job.opts` and the job's `data` stays exactly what the producer wrote.
 *
 * @example
 * job.opts[REPLAY_OPTION]; // { originalJobId: '42', replays: 1, recordId: '17', claimedAt: 1700000000000 }
 */
export const REPLAY_OPTION = 'stormguardReplay';

/**
 * What {@link REPLAY_OPTION} holds.
 *
 * @example
 * const origin: ReplayOrigin = { originalJobId: '42', replays: 1 };
 */
export interface ReplayOrigin {
  /** The id of the job as first enqueued (never a replay id). */
  originalJobId: string;
  /** 0 for a job that was never replayed, n for the n-th replay. */
  replays: number;
  /** The dead-letter record this job was replayed from. */
  recordId?: string;
  /** When the replay claimed that record (store time): with `recordId`, what tells this replay's job apart. */
  claimedAt?: number;
  /** The trace contexts of the record's attempts (its `traceLinks`): the replayed job's trace links to them. */
  traceLinks?: string[];
}

/** BullMQ refuses `:` in custom ids; a record may carry any id (a hand-made or migrated one). */
const NOT_IN_IDS = /:/g;

/**
 * The id a replay gives the job on its queue: `<originalJobId>-r<n>.<recordId>` for the n-th replay of
 * the record `recordId`. The same for every run of one replay of one record (BullMQ then ignores a second
 * add), and new for every record, whatever job ids repeat.
 *
 * @example
 * replayJobId('42', 1, '17'); // "42-r1.17"
 */
export function replayJobId(originalJobId: string, replay: number, recordId: string): string {
  return `${originalJobId.replace(NOT_IN_IDS, '_')}-r${replay}.${recordId}`;
}

/**
 * The candidate ids of one replay, in the order it tries them: the claimed id, then `<id>~2`, `<id>~3`…
 * A later one is used only when a job that is not this replay's already holds an earlier one (a store that
 * was reset, a hand-added job). The order is fixed, so a replay run again finds the job it added.
 *
 * @example
 * replayJobCandidate('42-r1.17', 1); // "42-r1.17"
 * replayJobCandidate('42-r1.17', 2); // "42-r1.17~2"
 */
export function replayJobCandidate(claimedJobId: string, attempt: number): string {
  return attempt <= 1 ? claimedJobId : `${claimedJobId}~${attempt}`;
}

/**
 * Where a job came from: its original id and how many replays it has been through. For a job that was
 * never replayed that is its own id and 0. A worker uses it to build a dead-letter record, so a replayed
 * job that fails again is filed under its original id with `replays` counted.
 *
 * @example
 * replayOrigin({ id: '42-r1.17', opts: { stormguardReplay: { originalJobId: '42', replays: 1, recordId: '17' } } });
 * // { originalJobId: '42', replays: 1, recordId: '17' }
 */
export function replayOrigin(job: { id?: string | undefined; opts?: object | undefined }): ReplayOrigin {
  const origin = (job.opts as Record<string, unknown> | undefined)?.[REPLAY_OPTION];
  if (!isReplayOrigin(origin)) return { originalJobId: job.id ?? '', replays: 0 };
  const read: ReplayOrigin = { originalJobId: origin.originalJobId, replays: origin.replays };
  if (typeof origin.recordId === 'string') read.recordId = origin.recordId;
  if (typeof origin.claimedAt === 'number') read.claimedAt = origin.claimedAt;
  const { traceLinks } = origin as { traceLinks?: unknown };
  if (Array.isArray(traceLinks) && traceLinks.every((link) => typeof link === 'string'))
    read.traceLinks = traceLinks;
  return read;
}

function isReplayOrigin(value: unknown): value is ReplayOrigin {
  if (typeof value !== 'object' || value === null) return false;
  const { originalJobId, replays } = value as Record<string, unknown>;
  return typeof originalJobId === 'string' && Number.isInteger(replays) && (replays as number) >= 0;
}

/**
 * Job options that describe where a job sits or how it was scheduled rather than what it is. A replay
 * drops them: it runs now, on its own, under a new id, and a deduplication key still held by another job
 * must not swallow it.
 */
const NOT_REPLAYED = new Set([
  'jobId',
  'delay',
  'timestamp',
  'repeat',
  'repeatJobKey',
  'prevMillis',
  'parent',
  'deduplication',
  'debounce',
  'failParentOnFailure',
  'continueParentOnFailure',
  'ignoreDependencyOnFailure',
  'removeDependencyOnFailure',
  REPLAY_OPTION,
]);

/**
 * The BullMQ options a replay enqueues a dead-lettered job with: the original options (attempts, backoff,
 * priority, retention…) minus placement and scheduling, plus the replay's job id, a deduplication key of
 * the same id that outlives the job for `dedupTtlMs`, and {@link REPLAY_OPTION}. Attempts start again from
 * zero because the replay is a new BullMQ job.
 *
 * @example
 * replayJobOptions({ id: '17', jobId: '42', opts: { attempts: 5, delay: 1000 }, replays: 0 }, { jobId: '42-r1.17', claimedAt: 5 }, 86_400_000);
 * // { attempts: 5, jobId: '42-r1.17', deduplication: { id: '42-r1.17', ttl: 86400000 },
 * //   stormguardReplay: { originalJobId: '42', replays: 1, recordId: '17', claimedAt: 5 } }
 */
export function replayJobOptions(
  record: {
    id: string;
    jobId: string;
    opts: Record<string, unknown>;
    replays: number;
    traceLinks?: string[];
  },
  replay: { jobId: string; claimedAt: number },
  dedupTtlMs: number,
): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record.opts ?? {}))
    if (!NOT_REPLAYED.has(key)) options[key] = value;
  options.jobId = replay.jobId;
  options.deduplication = { id: replay.jobId, ttl: dedupTtlMs };
  options[REPLAY_OPTION] = {
    originalJobId: record.jobId,
    replays: record.replays + 1,
    recordId: record.id,
    claimedAt: replay.claimedAt,
    ...(record.traceLinks && record.traceLinks.length > 0 ? { traceLinks: record.traceLinks } : {}),
  } satisfies ReplayOrigin;
  return options;
}
