import type { DeadLetterReason } from '../policy/types.js';
import type { JobEvents } from './events.js';
import type { FlowEvents } from './flow-control/controller.js';
import type { LimitEvents } from './limits/events.js';

/**
 * Events a stormguard worker emits (the job runtime's, flow control's, limits' and replay's), whatever queue engine
 * runs it; metrics and logs subscribe.
 *
 * @example
 * worker.events.on('replayed', (e) => console.log(`${e.queue}/${e.task}: replayed (${e.reason})`));
 */
export interface WorkerEvents extends JobEvents, FlowEvents, LimitEvents {
  /**
   * The queue engine's server rolled back one of the engine's own writes for a transaction conflict
   * (BullMQ 6 on PostgreSQL: SQLSTATE 40P01, a deadlock between workers, or 40001). `write` says which:
   * `completion` (a job whose processor succeeded), `failure` (a move to failed) or `fetch` (the claim
   * of the next job). `again` is true when the write is tried again at once, and false when its tries ran
   * out: a completion then ends dead-lettered (`completion-failed`), a move to failed is left to the
   * stalled-job check, and fetches back off like any failed fetch. Nothing is lost either way; a steady
   * count says the database is contended (docs/postgres.md: Transaction conflicts).
   */
  'write-conflict': {
    queue: string;
    write: 'completion' | 'failure' | 'fetch';
    /** The SQLSTATE the server gave. */
    code: string;
    again: boolean;
  };
  /** A dead-lettered job was put back on its queue. */
  replayed: { queue: string; task: string; reason: DeadLetterReason };
  /**
   * Automatic replay left a dead letter where it is: its lineage has gone round `maxReplays` times
   * (`replays`, the record's count, is at least `maxReplays`). Told once per record by each worker that
   * finds it; a person replays it (`stormguard dlq replay`, the console), uncapped.
   */
  'auto-replay-skipped': {
    queue: string;
    task: string;
    reason: DeadLetterReason;
    dependency: string;
    recordId: string;
    jobId: string;
    replays: number;
    maxReplays: number;
  };
}
