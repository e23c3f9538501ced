import type { Classification, DeadLetterReason } from '../policy/types.js';
import type { JobEvents } from '../runtime/events.js';

/**
 * What the dead-letter queue holds for one job: enough to understand the failure and to replay the job
 * exactly as it was enqueued. Plain JSON.
 */
export interface DeadLetterRecord {
  /** The original job's id. Also the dead-letter job's id, so moving the same job twice is a no-op. */
  jobId: string;
  /** The source queue the job came from and is replayed to. */
  queue: string;
  /** The original job name. */
  name: string;
  /** The original job data, unchanged. */
  data: unknown;
  /** The original BullMQ job options (plain JSON), so a replay enqueues the job as it was. */
  opts: Record<string, unknown>;
  reason: DeadLetterReason;
  /** One line that says why, for people: "5 of 5 attempts used", "budget for search exhausted". */
  detail: string;
  lastError: { name: string; message: string; stack?: string; classification: Classification };
  attemptsMade: number;
  dependency: string;
  idempotencyKey?: string;
  /** Epoch ms: when the job was created, when it first failed, when it was dead-lettered. */
  createdAt: number;
  firstFailedAt?: number;
  deadLetteredAt: number;
  /** How many times this job was replayed before (0 on its first dead-lettering). */
  replays: number;
}

export type { JobLabels } from '../runtime/events.js';

/** Events a stormguard worker emits (the job runtime's, and replay's); metrics and logs subscribe. */
export interface WorkerEvents extends JobEvents {
  /** A dead-lettered job was put back on its queue. */
  replayed: { queue: string; task: string; reason: DeadLetterReason };
}
