import type { FlowStore } from '../runtime/flow-control/store.js';
import type { FlowMarkStatus, FlowStatusSource, ParkedJobsStatus, PausedWorkerStatus } from './types.js';

/**
 * A flow store (`MemoryFlowStore`, `RedisFlowStore`, `PostgresFlowStore`) as the read model's flow source:
 * the fleet-wide kill switch (one read), each listed dependency's down mark and recovery time (one `read`
 * per dependency, which never writes), and for each dependency the status lists, the workers holding a queue paused for it (each worker records
 * its pause in the store while it holds it: one `pausedWorkers` read per dependency, any queue) and the
 * jobs parked for it in each queue the status reads (one `parked` count per pair).
 *
 * @example
 * await readFleetStatus({ budget, breaker, deadLetters, flow: flowStatusOf(new RedisFlowStore({ redis })) });
 */
export function flowStatusOf(
  store: Pick<FlowStore, 'parked' | 'pausedWorkers' | 'read' | 'switchedOff'>,
): FlowStatusSource {
  return {
    switchedOff: async () => store.switchedOff(),
    marks: async ({ dependencies }) => {
      const rows: FlowMarkStatus[] = [];
      for (const dependency of dependencies) {
        const { down, recoveredAtMs, nowMs } = await store.read(dependency);
        rows.push({ dependency, down, nowMs, ...(recoveredAtMs === undefined ? {} : { recoveredAtMs }) });
      }
      return rows;
    },
    pausedWorkers: async ({ dependencies }) => {
      const rows: PausedWorkerStatus[] = [];
      for (const dependency of dependencies)
        for (const entry of await store.pausedWorkers(dependency))
          rows.push({
            queue: entry.queue,
            dependency,
            worker: entry.worker,
            sinceMs: entry.sinceMs,
            untilMs: entry.untilMs,
          });
      return rows;
    },
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
