import type { FlowStore } from '../runtime/flow-control/store.js';
import type { FlowStatusSource, ParkedJobsStatus } from './types.js';

/**
 * A flow store (`MemoryFlowStore`, `RedisFlowStore`, `PostgresFlowStore`) as the read model's flow source: the jobs parked for
 * each dependency the status lists, in each queue it reads (one `parked` count per pair). Paused workers
 * are each worker's own state and are not in the store: pass them from a worker's flow controller.
 *
 * @example
 * await readFleetStatus({ budget, breaker, deadLetters, flow: flowStatusOf(new RedisFlowStore({ redis })) });
 */
export function flowStatusOf(store: Pick<FlowStore, 'parked'>): FlowStatusSource {
  return {
    parkedJobs: async ({ dependencies, queues }) => {
      const rows: ParkedJobsStatus[] = [];
      for (const dependency of dependencies)
        for (const queue of queues) {
          const count = await store.parked(dependency, queue);
          if (count > 0) rows.push({ queue, dependency, count });
        }
      return rows;
    },
  };
}
