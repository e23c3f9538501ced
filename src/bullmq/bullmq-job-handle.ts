import type { Job } from 'bullmq';
import type { JobRef } from '../runtime/contracts.js';
import type { JobHandle } from '../runtime/job-handle.js';
import { replayOrigin } from './dead-letter-ids.js';

/**
 * The job runtime's view of a BullMQ job, through BullMQ's public job API only. The same fields on BullMQ
 * 5 and 6, on Redis and on PostgreSQL: `attemptsStarted` counts every move to active, `attemptsMade` every
 * finish (a `moveToDelayed` does not count one), `stalledCounter` every stalled-job recovery. The options
 * are copied to plain JSON only when read, which only the failure path does.
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
}

function plainJson(value: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(value ?? {}));
  } catch {
    return {};
  }
}
