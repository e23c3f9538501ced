import type { ReplayClaim, StoredDeadLetter } from '../contracts.js';
import type { PutBackOptions, ReplayQueue } from './replay-queue.js';

/** The queue engines a dead letter can come from: its record's `opts.engine` ('amqp'), BullMQ otherwise. */
export type QueueEngine = 'bullmq' | 'amqp';

/**
 * The engine that filed a record: a RabbitMQ consumer (or an import from RabbitMQ) marks its records
 * `opts.engine: 'amqp'`; every other record is a BullMQ job's.
 *
 * @example
 * engineOf({ opts: { engine: 'amqp' } }); // 'amqp'
 */
export function engineOf(record: Pick<StoredDeadLetter, 'opts'>): QueueEngine {
  return record.opts?.engine === 'amqp' ? 'amqp' : 'bullmq';
}

/**
 * One replay port over the engines a queue's records may come from: each record goes back through the
 * engine that filed it, and a record whose engine is not given fails alone (it stays filed) with
 * `missing(engine)`'s words, instead of going back as the other engine's job (a BullMQ job of a
 * RabbitMQ message's kept bytes would be nobody's work). Ports are opened on first use.
 *
 * `replayKey` is the one key of a record whatever its engine (the engines' ports must accept it as an id:
 * BullMQ's `replayJobId` is accepted by both), so a dry run or a claim needs no port opened.
 *
 * @example
 * const jobs = replayQueueByEngine(
 *   { bullmq: () => bullmqReplayQueue(queue), amqp: () => amqpReplayQueue(channel, 'orders') },
 *   (engine) => `start the console with --${engine === 'amqp' ? 'amqp <url>' : 'redis'}`,
 *   (record) => replayJobId(record.jobId, record.replays + 1, record.id),
 * );
 */
export function replayQueueByEngine(
  engines: Partial<Record<QueueEngine, () => ReplayQueue>>,
  missing: (engine: QueueEngine) => string,
  replayKey: ReplayQueue['replayKey'],
): ReplayQueue {
  const opened = new Map<QueueEngine, ReplayQueue>();
  const port = (engine: QueueEngine): ReplayQueue | undefined => {
    const open = engines[engine];
    if (!open) return undefined;
    let jobs = opened.get(engine);
    if (!jobs) {
      jobs = open();
      opened.set(engine, jobs);
    }
    return jobs;
  };
  return {
    replayKey,
    putBack(record: StoredDeadLetter, claim: ReplayClaim, options: PutBackOptions): Promise<string> {
      const engine = engineOf(record);
      const jobs = port(engine);
      if (!jobs)
        return Promise.reject(
          new Error(
            `dead letter ${record.id} was filed by a ${engine === 'amqp' ? 'RabbitMQ consumer' : 'BullMQ worker'}: ${missing(engine)}`,
          ),
        );
      return jobs.putBack(record, claim, options);
    },
  };
}
