import type { DeadLetterReason } from '../policy/types.js';

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
  /** A job was dead-lettered. */
  'dead-letter': JobLabels & { reason: DeadLetterReason };
  /** A job ended completed. */
  completed: JobLabels & { attempts: number };
}
