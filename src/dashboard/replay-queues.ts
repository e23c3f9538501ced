import type { ChannelModel, ConfirmChannel } from 'amqplib';
import * as bullmq from 'bullmq';
import { amqpReplayKey } from '../amqp/replay-key.js';
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

/**
 * An open amqplib connection, as the console needs it (typed without amqplib, which a console without
 * RabbitMQ does not install).
 *
 * @example
 * const connection: AmqpConnectionLike = await amqplib.connect(url);
 */
export interface AmqpConnectionLike {
  createConfirmChannel(): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * RabbitMQ queues the console puts replayed messages back on (records a RabbitMQ consumer filed or an
 * import took): one confirm channel on `connection` (a URL the console connects to, or an open amqplib
 * connection, which stays the caller's), opened on first use and again after it closed.
 */
export function amqpReplayQueues(connection: string | AmqpConnectionLike): ReplayQueues {
  let opening: Promise<{ model: ChannelModel; channel: ConfirmChannel }> | undefined;
  const ready = () => {
    opening ??= (async () => {
      // Loaded only here: a console without RabbitMQ needs no amqplib.
      const model = (
        typeof connection === 'string'
          ? await (await import('amqplib')).default.connect(connection)
          : connection
      ) as ChannelModel;
      const channel = await model.createConfirmChannel();
      channel.on('error', () => {});
      // A channel that closes (the broker or the network went) is opened again by the next replay.
      channel.on('close', () => {
        opening = undefined;
      });
      return { model, channel };
    })();
    opening.catch(() => {
      opening = undefined;
    });
    return opening;
  };
  return {
    open(queue) {
      return {
        replayKey: amqpReplayKey,
        putBack: async (record, claim, options) => {
          const { amqpReplayQueue } = await import('../amqp/replay-queue.js');
          return amqpReplayQueue((await ready()).channel, queue).putBack(record, claim, options);
        },
      };
    },
    async close() {
      const opened = await opening?.catch(() => undefined);
      opening = undefined;
      if (!opened) return;
      await opened.channel.close().catch(() => {});
      if (typeof connection === 'string') await opened.model.close().catch(() => {});
    },
  };
}
