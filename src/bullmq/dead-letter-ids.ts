/**
 * How dead-lettered and replayed jobs are named in BullMQ. Deterministic ids are what make moving a job to
 * the dead-letter queue, and replaying it back, safe to repeat: BullMQ ignores an `add` whose job id
 * already exists.
 */

/**
 * The job option stormguard sets on a replayed job: the id the job had when it was first enqueued and how
 * many times it has been replayed. BullMQ keeps unknown options as they are, so it survives in `job.opts`
 * and the job's `data` stays exactly what the producer wrote.
 *
 * @example
 * job.opts[REPLAY_OPTION]; // { originalJobId: '42', replays: 1 } on job 42-r1
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
}

/**
 * The dead-letter job's BullMQ id for an original job id: `dl-<jobId>`. A prefix, because BullMQ refuses
 * integer custom ids and its own generated ids are integers.
 *
 * @example
 * deadLetterJobId('42'); // "dl-42"
 */
export function deadLetterJobId(jobId: string): string {
  return `dl-${jobId}`;
}

/**
 * The id a replay gives the job on its source queue: `<originalJobId>-r<n>` for the n-th replay. It is
 * new for each replay (a completed job with the original id would block re-adding it) and the same when
 * one replay is repeated (BullMQ then ignores the second add).
 *
 * @example
 * replayJobId('42', 1); // "42-r1"
 */
export function replayJobId(originalJobId: string, replay: number): string {
  return `${originalJobId}-r${replay}`;
}

/**
 * Where a job came from: its original id and how many replays it has been through. For a job that was
 * never replayed that is its own id and 0. A worker uses it to build a dead-letter record, so a replayed
 * job that fails again is filed under its original id with `replays` counted.
 *
 * @example
 * replayOrigin({ id: '42-r1', opts: { stormguardReplay: { originalJobId: '42', replays: 1 } } });
 * // { originalJobId: '42', replays: 1 }
 */
export function replayOrigin(job: { id?: string | undefined; opts?: object | undefined }): ReplayOrigin {
  const origin = (job.opts as Record<string, unknown> | undefined)?.[REPLAY_OPTION];
  if (isReplayOrigin(origin)) return { originalJobId: origin.originalJobId, replays: origin.replays };
  return { originalJobId: job.id ?? '', replays: 0 };
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
 * priority, retention…) minus placement and scheduling, plus the replay id and {@link REPLAY_OPTION}.
 * Attempts start again from zero because the replay is a new BullMQ job.
 *
 * @example
 * replayJobOptions({ jobId: '42', opts: { attempts: 5, delay: 1000 }, replays: 0 });
 * // { attempts: 5, jobId: '42-r1', stormguardReplay: { originalJobId: '42', replays: 1 } }
 */
export function replayJobOptions(record: {
  jobId: string;
  opts: Record<string, unknown>;
  replays: number;
}): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record.opts ?? {}))
    if (!NOT_REPLAYED.has(key)) options[key] = value;
  const replays = record.replays + 1;
  options.jobId = replayJobId(record.jobId, replays);
  options[REPLAY_OPTION] = { originalJobId: record.jobId, replays } satisfies ReplayOrigin;
  return options;
}
