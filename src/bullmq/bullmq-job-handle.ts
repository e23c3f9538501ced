import type { Job } from 'bullmq';
import type { JobRef } from '../runtime/contracts.js';
import type { JobHandle } from '../runtime/job-handle.js';
import type { JobNote } from '../runtime/pending-outcome.js';
import { replayOrigin } from './dead-letter-ids.js';

/**
 * The job runtime's view of a BullMQ job, through BullMQ's public job API only. The same fields on BullMQ
 * 5 and 6, on Redis and on PostgreSQL: `attemptsStarted` counts every move to active, `attemptsMade` every
 * finish (a `moveToDelayed` does not count one), `stalledCounter` every stalled-job recovery. The options
 * are copied to plain JSON only when read, which only the failure path does.
 *
 * stormguard's {@link JobNote} (an outcome still to be written) lives in the job's progress, which BullMQ
 * loads with the job (reading it costs nothing) and keeps in the job's own record on Redis and PostgreSQL
 * alike. The processor never runs while a note holds an outcome; the job's own progress is kept inside
 * the note and given back when the note goes.
 *
 * @example
 * const outcome = await runtime.run(bullmqJobHandle(job, token, 'index'), (ctx) => processor(job, ctx));
 */
export function bullmqJobHandle(job: Job, token: string | undefined, queue: string): JobHandle {
  return new BullmqJobHandle(job, token, queue);
}

/** A class, not an object literal with getters: the hot path builds one per job, and shapes stay stable. */
class BullmqJobHandle implements JobHandle {
  readonly ref: JobRef;
  readonly name: string;
  readonly data: unknown;
  readonly starts: number;
  readonly finishes: number;
  readonly stalls: number;

  constructor(
    private readonly job: Job,
    private readonly token: string | undefined,
    queue: string,
  ) {
    this.ref = { queue, jobId: job.id ?? '', createdAt: job.timestamp };
    this.name = job.name;
    this.data = job.data;
    this.starts = job.attemptsStarted ?? 0;
    this.finishes = job.attemptsMade ?? 0;
    this.stalls = job.stalledCounter ?? 0;
  }

  get opts(): Record<string, unknown> {
    return plainJson(this.job.opts) as Record<string, unknown>;
  }

  get replays(): number {
    return replayOrigin(this.job).replays;
  }

  /** The record a replay re-added this job from: a replayed job dead-lettered again keeps its lineage. */
  get replayedFrom(): string | undefined {
    return replayOrigin(this.job).recordId;
  }

  get replayedTraceLinks(): readonly string[] | undefined {
    return replayOrigin(this.job).traceLinks;
  }

  moveToDelayed(dueAtMs: number): Promise<void> {
    return this.job.moveToDelayed(dueAtMs, this.token);
  }

  get note(): JobNote | undefined {
    return noteOf(this.job.progress);
  }

  async keepNote(note: JobNote | undefined): Promise<void> {
    const current = this.job.progress;
    const own = isNoted(current) ? current.progress : current;
    if (note === undefined) {
      if (isNoted(current)) await this.job.updateProgress((own ?? 0) as number | object);
      return;
    }
    const noted: NotedProgress = { [NOTE_KEY]: note, progress: own ?? 0 };
    await this.job.updateProgress(noted);
  }
}

/** Where in a job's progress stormguard keeps its note. */
const NOTE_KEY = 'stormguard.note';

/** A job's progress while stormguard keeps a note in it: the note, and the job's own progress. */
interface NotedProgress {
  [NOTE_KEY]: JobNote;
  progress: unknown;
}

function isNoted(progress: unknown): progress is NotedProgress {
  return typeof progress === 'object' && progress !== null && NOTE_KEY in progress;
}

function noteOf(progress: unknown): JobNote | undefined {
  if (!isNoted(progress)) return undefined;
  const note = progress[NOTE_KEY];
  return typeof note === 'object' && note !== null ? note : undefined;
}

function plainJson(value: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(value ?? {}));
  } catch {
    return {};
  }
}
