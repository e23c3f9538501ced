import { readFleetStatus } from '../status/read-fleet-status.js';
import type { FleetStatus } from '../status/types.js';
import type { ConsoleBackend } from './backend.js';

/**
 * What the overview shows at one moment: the fleet-status read model's `FleetStatus`, as it is.
 *
 * @example
 * const snapshot: OverviewSnapshot = await readOverview(backend);
 * snapshot.needsAttention; // ['search']
 */
export type OverviewSnapshot = FleetStatus;

/**
 * Reads the fleet's state once, through `readFleetStatus`: every count is an index count, so one read
 * follows the number of queues, dependencies and reasons, never the number of dead letters.
 */
export function readOverview(backend: ConsoleBackend): Promise<OverviewSnapshot> {
  return readFleetStatus(backend.status);
}
