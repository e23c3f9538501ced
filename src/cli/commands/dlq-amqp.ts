import type { DeadLetterQueue } from '../../bullmq/dead-letter-queue.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { StoredDeadLetter } from '../../runtime/contracts.js';
import type { ReplayOptions, ReplayReport } from '../../runtime/replay/replay.js';
import type { ReplayQueue } from '../../runtime/replay/replay-queue.js';
import { checkAmqpUrl, connectAmqp } from '../connect-amqp.js';

/** `dlq replay`'s `--amqp` option: its flag and help. */
export const AMQP_REPLAY_OPTION = [
  '--amqp <url>',
  'replay to a RabbitMQ queue (records filed by a RabbitMQ consumer or imported with `dlq import`): amqp://user:password@host:5672/vhost',
] as const;

/** How many records are looked at to tell which engine filed a queue's dead letters. */
const SAMPLE = 20;

/**
 * The dead-letter queue `dlq replay` works with, replaying through the engine that filed its records:
 * with `--amqp`, a RabbitMQ queue (`amqpReplayQueue` on a confirm channel, the queue checked to exist,
 * since RabbitMQ confirms a message no queue took); without it, BullMQ as before, refusing records a
 * RabbitMQ consumer filed (a BullMQ job of their kept bytes would be nobody's work). A replay whose
 * first records are of the other engine is bad input (exit 2), saying which flag to use; a record of
 * the other engine met later fails alone and stays in the store.
 *
 * Everything but `replay`, `replayQueue` and `close` is the facade's own: the replay engine and its
 * runs are the same for both.
 *
 * @example
 * const dlq = await replayingThrough(deadLetterQueue(queue, { store, connection }), flags.amqp);
 */
export async function replayingThrough(
  facade: DeadLetterQueue,
  amqpUrl: string | undefined,
): Promise<DeadLetterQueue> {
  const queue = facade.sourceQueue;
  if (amqpUrl === undefined) {
    // Opened when first needed, and before any record moves: a queue BullMQ cannot reach (a Cluster on
    // BullMQ's default prefix) is bad input for the whole replay, not a failure of each record.
    let guarded: ReplayQueue | undefined;
    const open = () => {
      guarded ??= refusingAmqpRecords(facade.replayQueue());
      return guarded;
    };
    return overriding(facade, {
      replayQueue: open,
      replay: async (options) => {
        await checkEngine(facade, 'bullmq');
        return replayWith(facade, open(), options);
      },
    });
  }
  checkAmqpUrl(amqpUrl, '--amqp');
  const [{ amqpReplayQueue }, connection] = await Promise.all([
    import('../../amqp/replay-queue.js'),
    connectAmqp(amqpUrl),
  ]);
  try {
    await checkQueueExists(connection, queue);
    const channel = await connection.createConfirmChannel();
    channel.on('error', () => {});
    const jobs = amqpReplayQueue(channel, queue);
    return overriding(facade, {
      replayQueue: () => jobs,
      replay: async (options) => {
        await checkEngine(facade, 'amqp');
        return replayWith(facade, jobs, options);
      },
      close: async () => {
        await connection.close().catch(() => {});
        await facade.close();
      },
    });
  } catch (error) {
    await connection.close().catch(() => {});
    throw error;
  }
}

/** The facade's own replay, through `jobs`. */
async function replayWith(
  facade: DeadLetterQueue,
  jobs: ReplayQueue,
  options: ReplayOptions | undefined,
): Promise<ReplayReport> {
  const { replayDeadLetters } = await import('../../runtime/replay/replay.js');
  return replayDeadLetters(
    { store: facade.store, queue: facade.sourceQueue, jobs, events: facade.events },
    options,
  );
}

/**
 * The facade with some methods replaced; the others are its own, called on it (it keeps private state,
 * so they are bound to it rather than inherited).
 */
function overriding(facade: DeadLetterQueue, methods: Partial<DeadLetterQueue>): DeadLetterQueue {
  return new Proxy(facade, {
    get(target, name) {
      if (Object.hasOwn(methods, name)) return methods[name as keyof DeadLetterQueue];
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function filedByAmqp(record: Pick<StoredDeadLetter, 'opts'>): boolean {
  return record.opts?.engine === 'amqp';
}

/** Refuses, by its oldest records, a replay through the engine that did not file them. */
async function checkEngine(facade: DeadLetterQueue, engine: 'amqp' | 'bullmq'): Promise<void> {
  const { records } = await facade.store.list(facade.sourceQueue, { limit: SAMPLE });
  const other = records.filter((record) => filedByAmqp(record) !== (engine === 'amqp'));
  if (other.length === 0) return;
  const queue = facade.sourceQueue;
  throw new InvalidInputError(
    engine === 'amqp'
      ? `--amqp: the dead letters of "${queue}" were filed by a BullMQ worker (record ${other[0]?.id} among them); replay them without --amqp`
      : `the dead letters of "${queue}" were filed by a RabbitMQ consumer or imported from RabbitMQ (record ${other[0]?.id} among them); replay them with --amqp <url>`,
  );
}

/** BullMQ's replay port, refusing a record of a RabbitMQ consumer (it fails alone, and stays filed). */
function refusingAmqpRecords(jobs: ReplayQueue): ReplayQueue {
  return {
    replayKey: (record) => jobs.replayKey(record),
    putBack: async (record, claim, options) => {
      if (filedByAmqp(record))
        throw new Error(`record ${record.id} was filed by a RabbitMQ consumer: replay it with --amqp <url>`);
      return jobs.putBack(record, claim, options);
    },
  };
}

/**
 * RabbitMQ confirms a message that no queue took (the default exchange drops what it cannot route), so a
 * replay to a queue that does not exist would confirm work into nothing: refused up front.
 */
async function checkQueueExists(
  connection: Awaited<ReturnType<typeof connectAmqp>>,
  queue: string,
): Promise<void> {
  const probe = await connection.createChannel();
  probe.on('error', () => {});
  try {
    await probe.checkQueue(queue);
  } catch (error) {
    if ((error as { code?: unknown }).code === 404)
      throw new InvalidInputError(
        `--amqp: queue "${queue}" does not exist on this broker (vhost); start its consumer (it declares the queue) or declare it, then replay`,
      );
    throw error;
  }
  await probe.close().catch(() => {});
}
