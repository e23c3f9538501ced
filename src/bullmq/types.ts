import type { DeadLetterReason } from '../policy/types.js';
import type { JobEvents } from '../runtime/events.js';
import type { FlowEvents } from '../runtime/flow-control/controller.js';

/** What the dead-letter store holds for one job (see `DeadLetterRecord` in the runtime contracts). */
export type { DeadLetterRecord } from '../runtime/contracts.js';

export type { JobLabels } from '../runtime/events.js';

/** Events a stormguard worker emits (the job runtime's, and replay's); metrics and logs subscribe. */
export interface WorkerEvents extends JobEvents, FlowEvents {
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
