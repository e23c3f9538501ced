import { type ConnectionOptions, Job, type JobsOptions, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { defineScript, type ScriptSpec } from '../redis/scripts.js';
import { deadLetterJobId, replayJobOptions } from './dead-letter-ids.js';
import type { DeadLetterRecord } from './types.js';

/**
 * What moving one record did.
 *
 * @example
 * const result = await mover.move('42'); // { status: 'moved', record, replayJobId: '42-r1' }
 */
export type MoveResult =
  | { status: 'moved'; record: DeadLetterRecord; replayJobId: string }
  | { status: 'gone' };

const TAKE: ScriptSpec = { command: 'stormguardReplayTakeV1', file: 'replay-take-5.lua', numberOfKeys: 5 };
/** Attempts when another client changes the record between our read and our write. */
const MAX_CONFLICTS = 5;

/**
 * Moves dead-letter records back to their source queue, one atomic step each: the BullMQ add of the
 * replay job (deterministic id `<jobId>-r<n>`) and the removal of the record run in one MULTI, watched on
 * the record, with the removal guarded by the replay job's existence. So a crash at any point leaves
 * either the record or the replay job, never both and never neither, and two replays running at once
 * move each record once.
 *
 * It owns a dedicated connection (WATCH is per connection). On Redis Cluster, give both queues a
 * hash-tagged prefix such as `{bull}` (as BullMQ itself asks), so their keys share a slot.
 *
 * @example
 * const mover = await ReplayMover.open('index', dlq.queue, connection);
 * await mover.move('42');
 * await mover.close();
 */
export class ReplayMover {
  readonly #redis: Redis;
  readonly #source: Queue;

  private constructor(
    redis: Redis,
    source: Queue,
    private readonly dlq: Queue,
  ) {
    this.#redis = redis;
    this.#source = source;
  }

  /** Opens a mover from the dead-letter queue to `sourceQueue` on its own connection. */
  static async open(sourceQueue: string, dlq: Queue, connection: ConnectionOptions): Promise<ReplayMover> {
    const redis = dedicatedConnection(connection);
    defineScript(redis, TAKE);
    const source = new Queue(sourceQueue, { connection: redis, prefix: dlq.opts.prefix });
    try {
      await source.waitUntilReady();
    } catch (error) {
      await source.close().catch(() => {});
      redis.disconnect();
      throw error;
    }
    return new ReplayMover(redis, source, dlq);
  }

  /** Replays the record filed under the original `jobId`; `gone` when it is no longer there. */
  async move(jobId: string): Promise<MoveResult> {
    const dlId = deadLetterJobId(jobId);
    const dlKey = this.dlq.toKey(dlId);
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      // WATCH and the read go out together: one round trip, then one for the transaction.
      const replies = await this.#redis.pipeline().watch(dlKey).hget(dlKey, 'data').exec();
      const [watchError] = replies?.[0] ?? [new Error('no reply to WATCH')];
      const [readError, raw] = (replies?.[1] ?? [new Error('no reply to HGET'), null]) as [
        Error | null,
        string | null,
      ];
      if (watchError || readError) {
        await this.#redis.unwatch();
        throw watchError ?? readError;
      }
      if (raw === null) {
        await this.#redis.unwatch();
        return { status: 'gone' };
      }
      const record = JSON.parse(raw) as DeadLetterRecord;
      const opts = replayJobOptions(record);
      const replayJobId = opts.jobId as string;
      // biome-ignore lint/suspicious/noExplicitAny: interim, until replay moves to the public API
      const tx = (await (this.#source as any).client).multi();
      try {
        const job = new Job(this.#source, record.name, record.data, opts as JobsOptions, replayJobId);
        // Queues the add on the transaction synchronously; the promise only echoes the queued command.
        job.addJob(tx, { parentDependenciesKey: '' }).catch(() => {});
      } catch (error) {
        // Nothing was sent: an ioredis MULTI goes out on exec only.
        await this.#redis.unwatch();
        throw error;
      }
      const keys = this.dlq.keys;
      tx.runCommand(TAKE.command, [
        dlKey,
        keys.wait,
        keys.paused,
        `${dlKey}:logs`,
        this.#source.toKey(replayJobId),
        dlId,
      ]);
      const results = await tx.exec();
      if (results === null) continue; // the record changed under us: read it again
      const addError = results.slice(0, -1).find(([error]: [unknown]) => error)?.[0];
      const [takeError, taken] = results.at(-1) ?? [new Error('no reply to the take script')];
      if (addError) {
        await this.#undoFailedAdd(record, replayJobId, taken === 1);
        throw addError;
      }
      if (takeError) throw takeError;
      if (taken === -1)
        throw new Error(
          `replay of job ${jobId}: the replay job was not added; the record is kept, run the replay again`,
        );
      if (taken === 0) return { status: 'gone' };
      return { status: 'moved', record, replayJobId };
    }
    throw new Error(`replay of job ${jobId}: the record kept changing while it was being moved; run again`);
  }

  /**
   * A Lua error inside BullMQ's add can leave the job hash written but the job in no list, which the take
   * script would count as added. Drop the stranded hash, so a later replay adds the job afresh instead of
   * skipping it as a duplicate, and put the record back if it was taken: never lose the job.
   */
  async #undoFailedAdd(record: DeadLetterRecord, replayJobId: string, recordTaken: boolean): Promise<void> {
    // The failed add created this hash (an add of an existing id returns early without error), so
    // deleting it removes nothing that was there before.
    const jobKey = this.#source.toKey(replayJobId);
    await this.#redis.del(jobKey, `${jobKey}:logs`).catch(() => 0);
    if (recordTaken) await this.dlq.add(record.name, record, { jobId: deadLetterJobId(record.jobId) });
  }

  async close(): Promise<void> {
    await this.#source.close().catch(() => {});
    this.#redis.disconnect();
  }
}

/** A new ioredis connection with the same settings as `connection`, for this mover alone. */
function dedicatedConnection(connection: ConnectionOptions): Redis {
  const maybeClient = connection as { duplicate?: () => unknown };
  if (typeof maybeClient.duplicate === 'function') return maybeClient.duplicate() as Redis;
  return new Redis({ ...(connection as object), lazyConnect: false });
}
