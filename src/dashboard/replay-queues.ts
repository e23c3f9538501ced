import * as bullmq from 'bullmq';
import { bullmqReplayQueue } from '../bullmq/bullmq-replay-queue.js';
import type { QueueBackendFactory } from '../bullmq/worker-options.js';
import type { PostgresFleet } from '../postgres/fleet.js';
import type { RedisFleet } from '../redis/fleet.js';
import type { ReplayQueue } from '../runtime/replay/replay-queue.js';
import type { Fleet } from '../status/fleet.js';

/** The BullMQ queues the console puts replayed jobs back on, opened on first use. */
export interface ReplayQueues {
  open(queue: string): ReplayQueue;
  /** Closes every queue opened (never the fleet's connection). */
  close(): Promise<void>;
}

/**
 * BullMQ queues on the fleet's own connection: on Redis, the fleet's client with BullMQ's key prefix
 * `bullPrefix`; on PostgreSQL, BullMQ 6's PostgreSQL backend on `queueUrl`, else the connection string
 * the fleet was built from. Without either (BullMQ 5 on PostgreSQL, a fleet built from a pool, a fleet
 * of another backend), opening one throws, saying what replay needs: the console reads everything and
 * refuses replays.
 */
export function bullmqReplayQueues(
  fleet: Fleet,
  options: { bullPrefix?: string; queueUrl?: string },
): ReplayQueues {
  const queues = new Map<string, bullmq.Queue>();
  const create = queueFactory(fleet, options);
  return {
    open(queue) {
      let opened = queues.get(queue);
      if (!opened) {
        opened = create(queue);
        queues.set(queue, opened);
      }
      return bullmqReplayQueue(opened);
    },
    async close() {
      const open = [...queues.values()];
      queues.clear();
      await Promise.all(open.map((q) => q.close()));
    },
  };
}

function queueFactory(
  fleet: Fleet,
  options: { bullPrefix?: string; queueUrl?: string },
): (queue: string) => bullmq.Queue {
  if (isRedisFleet(fleet))
    return (queue) =>
      new bullmq.Queue(queue, { connection: fleet.redis as never, prefix: options.bullPrefix ?? 'bull' });
  // BullMQ 5 has no PostgreSQL backend; read from the namespace, so its absence is no import error.
  const factory = (bullmq as { createPostgresBackend?: QueueBackendFactory }).createPostgresBackend;
  const url = options.queueUrl ?? (isPostgresFleet(fleet) ? fleet.connectionString : undefined);
  return (queue) => {
    if (!isPostgresFleet(fleet) && options.queueUrl === undefined)
      throw new Error(
        `replay needs a queue to put jobs back on: a "${fleet.backend}" fleet has none; give createDashboard a replayQueue`,
      );
    if (!url || !factory)
      throw new Error(
        'replay on PostgreSQL needs BullMQ 6 (createPostgresBackend) and the queue connection (queueUrl)',
      );
    const args = [queue, { connection: url }, factory] as unknown as ConstructorParameters<
      typeof bullmq.Queue
    >;
    return new bullmq.Queue(...args);
  };
}

function isRedisFleet(fleet: Fleet): fleet is RedisFleet {
  return fleet.backend === 'redis' && 'redis' in fleet;
}

function isPostgresFleet(fleet: Fleet): fleet is PostgresFleet {
  return fleet.backend === 'postgres' && 'pool' in fleet;
}
