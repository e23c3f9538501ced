import type { Job } from 'bullmq';
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
  return {
    ref: { queue, jobId: job.id ?? '', createdAt: job.timestamp },
    name: job.name,
    data: job.data,
    get opts() {
      return plainJson(job.opts) as Record<string, unknown>;
    },
    starts: job.attemptsStarted ?? 0,
    finishes: job.attemptsMade ?? 0,
    stalls: job.stalledCounter ?? 0,
    get replays() {
      return replayOrigin(job).replays;
    },
    moveToDelayed: (dueAtMs) => job.moveToDelayed(dueAtMs, token),
  };
}

function plainJson(value: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(value ?? {}));
  } catch {
    return {};
  }
}
