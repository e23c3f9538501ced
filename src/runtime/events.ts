import type { DeadLetterReason } from '../policy/types.js';
import type { DeadLetterEvictions } from './contracts.js';

/**
 * Labels every job event carries; bounded values only (never a job id or an error message).
 *
 * @example
 * const labels: JobLabels = { queue: 'index', task: 'reindex', dependency: 'search' };
 */
export interface JobLabels {
  queue: string;
  /** The job name (the task). */
  task: string;
  dependency: string;
}

/**
 * What the job runtime tells about each job it runs, whatever queue runs it; metrics and logs subscribe.
 *
 * @example
 * worker.events.on('retry', (e) => console.log(`${e.dependency}: retry ${e.retry} in ${e.delayMs} ms`));
 */
export interface JobEvents {
  /** An attempt started. */
  attempt: JobLabels & { attempt: number };
  /** A downstream call (or a whole job with no ctx.call) succeeded. */
  success: JobLabels;
  /** A retry was scheduled. `chargesAttempt` is false for breaker and budget deferrals. */
  retry: JobLabels & {
    delayMs: number;
    retry: number;
    cause: string;
    chargesAttempt: boolean;
    errorClass: string;
  };
  /**
   * A run was refused before it called anything: the job held no grant and the breaker (open) or the
   * budget (denied) refused it. It is deferred or dead-lettered (a 'retry' or 'dead-letter' event follows).
   */
  refused: JobLabels & { by: 'breaker' | 'budget' };
  /**
   * A job was dead-lettered. `safeForm`: its record was refused for good (a redaction hook that threw, a
   * value the store cannot hold), so what was refused was replaced by a marker that says why.
   */
  'dead-letter': JobLabels & { reason: DeadLetterReason; safeForm?: true };
  /**
   * stormguard could not write a job's outcome yet (a store refused: down, slow): the outcome is kept in
   * the job's own record and written at the job's next run, `delayMs` from now, without running the
   * processor. `tries` counts the refused tries; `errorClass` is the refusal's class.
   */
  'outcome-pending': JobLabels & { tries: number; delayMs: number; errorClass: string };
  /**
   * A job's outcome could not be recorded anywhere: its dead letter (safe form included) was refused for
   * good, or still refused at the job's max age. The job ends in the queue's own failed set, never re-run.
   * `refusal` says why (class and kind of refusal, redacted; never a value).
   */
  unfiled: JobLabels & { reason: DeadLetterReason | 'bookkeeping'; errorClass: string; refusal: string };
  /** A job ended completed. */
  completed: JobLabels & { attempts: number };
  /**
   * Filing a job's record evicted other records of its queue (retention: `maxAgeMs`, `maxCount`). Not the
   * filing job's labels: the evicted records are others'. `evicted` counts them by their dead-letter
   * reason and by the limit; `recordId` is the record whose filing evicted them.
   */
  'dead-letters-evicted': { queue: string; recordId: string; evicted: DeadLetterEvictions };
}
