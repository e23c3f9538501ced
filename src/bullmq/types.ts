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
}
