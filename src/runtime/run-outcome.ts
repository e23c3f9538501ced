import type { DeadLetterReason } from '../policy/types.js';
import type { JobEvents } from './events.js';

/**
 * Where the runtime tells about jobs: an `EventBus` of {@link JobEvents} (or of a map that extends it).
 *
 * @example
 * const events: JobEventSink = new EventBus<JobEvents>();
 */
export interface JobEventSink {
  emit<K extends keyof JobEvents>(event: K, payload: JobEvents[K]): void;
  /** True when someone listens: events nobody hears cost nothing to build. */
  has(event: keyof JobEvents): boolean;
}

/**
 * What running a job came to; the adapter turns it into its queue's terms.
 *
 * - `completed`: the processor returned `value`.
 * - `delayed`: the job was rescheduled (a retry, a deferral, or bookkeeping that must be tried again).
 * - `dead-lettered`: its record is filed (`recordId`); end the job so it never runs again.
 * - `failed`: a terminal decision with nowhere to file it; end the job as failed with `message`.
 * - `pass-through`: the processor threw an error the adapter asked to get back untouched.
 * - `paused`: flow control holds the whole queue: stop taking its jobs for `forMs` and put this one back
 *   unchanged (BullMQ: the worker's rate limit).
 *
 * @example
 * const outcome: RunOutcome<string> = await runtime.run(handle, async () => 'indexed');
 * if (outcome.type === 'delayed') throw new DelayedError();
 */
export type RunOutcome<Result> =
  | { type: 'completed'; value: Result }
  | { type: 'delayed' }
  | { type: 'dead-lettered'; recordId: string; reason: DeadLetterReason; message: string }
  | { type: 'failed'; message: string }
  | { type: 'pass-through'; error: unknown }
  | { type: 'paused'; forMs: number };
