import type { JobRef } from './contracts.js';
import type { JobNote } from './pending-outcome.js';

/**
 * One job as a queue adapter hands it to the job runtime: what the runtime reads, and the one queue
 * operation it needs. Everything else (ending the job, failing it, completing it) the adapter does with
 * the outcome the runtime returns, through its queue's own public API.
 *
 * @example
 * const handle: JobHandle = {
 *   ref: { queue: 'index', jobId: job.id, createdAt: job.timestamp },
 *   name: job.name, data: job.data, opts: job.opts,
 *   starts: job.attemptsStarted, finishes: job.attemptsMade, stalls: job.stalledCounter,
 *   moveToDelayed: (dueAtMs) => job.moveToDelayed(dueAtMs, token),
 * };
 */
export interface JobHandle {
  ref: JobRef;
  name: string;
  data: unknown;
  /** The job's queue options (plain JSON). */
  opts: Record<string, unknown>;
  /** Executions the queue has started, this one included (BullMQ's `attemptsStarted`). */
  starts: number;
  /** Times the queue recorded the job as finished, failed or completed (BullMQ's `attemptsMade`). */
  finishes: number;
  /** Times the queue found the job stalled: its worker died or blocked while running it. */
  stalls: number;
  /** How many replays the job's lineage went through (0 for a job never replayed). */
  replays?: number;
  /** The dead-letter record this job was replayed from. */
  replayedFrom?: string;
  /** The trace contexts of the attempts of the job this one was replayed from (its record's `traceLinks`). */
  replayedTraceLinks?: readonly string[];
  /** Reschedules the job to run again at `dueAtMs` (epoch ms) without the queue counting a failure. */
  moveToDelayed(dueAtMs: number): Promise<void>;
  /**
   * stormguard's note on the job as the queue handed it over (read with the job, no extra round trip), or
   * `undefined` when there is none. Holds an outcome stormguard decided and could not write yet, and how
   * often the processor ran again because of that. Adapters that keep notes implement both members.
   */
  readonly note?: JobNote | undefined;
  /**
   * Keeps `note` in the job's own record, where it survives a restart and whatever store refused:
   * BullMQ keeps it in the job's progress; a message-queue adapter (AMQP) in a header of the message it
   * requeues. `undefined` removes it (and gives the job's own value back). A handle without it gets the
   * bookkeeping retry alone (no pending outcome, no bound on reruns).
   */
  keepNote?(note: JobNote | undefined): Promise<void>;
}

/**
 * True when the job may have an attempt state: its queue started it before or recorded it as finished.
 * A job on its first start has none, so the success path of a job that never failed reads nothing.
 *
 * @example
 * mayHaveAttemptState({ starts: 1, finishes: 0 }); // false
 */
export function mayHaveAttemptState(job: Pick<JobHandle, 'starts' | 'finishes'>): boolean {
  return job.starts > 1 || job.finishes > 0;
}
