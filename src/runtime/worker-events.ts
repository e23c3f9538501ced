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
