import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { EventBus } from '../../src/common/events.js';
import type { WorkerEvents } from '../../src/jobs/types.js';

/** A queue name no other test uses. */
export function uniqueQueue(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** Every event a worker emits, in order, for assertions. */
export interface EventLog {
  of<K extends keyof WorkerEvents>(event: K): WorkerEvents[K][];
  count(event: keyof WorkerEvents): number;
}

/** Subscribes to every worker event and keeps them. */
export function recordEvents(events: EventBus<WorkerEvents>): EventLog {
  const seen = new Map<keyof WorkerEvents, unknown[]>();
  const names: (keyof WorkerEvents)[] = [
    'attempt',
    'success',
    'retry',
    'dead-letter',
    'completed',
    'replayed',
  ];
  for (const name of names) {
    seen.set(name, []);
    events.on(name, (payload) => seen.get(name)?.push(payload));
  }
  return {
    of: <K extends keyof WorkerEvents>(event: K) => (seen.get(event) ?? []) as WorkerEvents[K][],
    count: (event) => seen.get(event)?.length ?? 0,
  };
}

/** Jobs still waiting, delayed, active or prioritized: zero once every job has ended. */
export async function unfinished(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts(
    'wait',
    'delayed',
    'active',
    'prioritized',
    'paused',
    'waiting-children',
  );
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
