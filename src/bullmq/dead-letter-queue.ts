import { type ConnectionOptions, Job, Queue } from 'bullmq';
import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { type DeadLetterFilter, parseFilter, recordMatcher } from './dead-letter-filter.js';
import { deadLetterJobId } from './dead-letter-ids.js';
import { type ReplayOptions, type ReplayReport, replayDeadLetters } from './replay.js';
import type { DeadLetterRecord, WorkerEvents } from './types.js';

/**
 * Options of {@link deadLetterQueue}.
 *
 * @example
 * const options: DeadLetterQueueOptions = { connection: { host: '127.0.0.1', port: 6379 }, prefix: 'bull' };
 */
export interface DeadLetterQueueOptions {
  /** BullMQ connection (ioredis options or instance). Give BullMQ connections `maxRetriesPerRequest: null`. */
  connection: ConnectionOptions;
  /** The dead-letter queue's name. Default: `<queue>-dlq`. */
  name?: string;
  /** BullMQ key prefix, shared with the source queue. Default: `bull`. */
  prefix?: string;
  /** Where "now" comes from for `sinceMs` filters. Default: the system clock. */
  clock?: Clock;
}

/**
 * A page of a listing.
 *
 * @example
 * await dlq.list({ dependency: 'search', offset: 50, limit: 50 });
 */
export interface ListOptions extends DeadLetterFilter {
  /** At most this many records. Default: all. */
  limit?: number;
  /** Skip this many matching records first. Default: 0. */
  offset?: number;
}

/** How many jobs one Redis round trip reads while scanning. */
const PAGE = 500;
/** Where BullMQ keeps jobs nobody has taken: `paused` once the queue is paused, `wait` before that. */
// biome-ignore lint/suspicious/noExplicitAny: interim, until dead letters move to their own store
const HELD_STATES = ['paused', 'wait'] as any[];

/**
 * The dead-letter queue of one source queue: a BullMQ queue that nothing processes. Records sit in it,
 * paused, until they are replayed or purged, oldest first. Never attach a worker to it: the queue is
 * paused so a worker would take nothing, but resuming it would let that worker consume (and lose) records.
 *
 * Every record's BullMQ job id is derived from the original job id (see `deadLetterJobId`), so adding the
 * same job twice keeps one record.
 *
 * @example
 * const dlq = deadLetterQueue('index', { connection });
 * await dlq.add(record);
 * const stuck = await dlq.list({ reason: 'budget-exhausted' });
 * const report = await dlq.replay({ dependency: 'search', ratePerSecond: 50 });
 * await dlq.close();
 */
export class DeadLetterQueue {
  /** The dead-letter queue's BullMQ name. */
  readonly name: string;
  /** The BullMQ key prefix. */
  readonly prefix: string;
  /** The underlying BullMQ queue, for what this class does not cover (dashboards, metrics). */
  readonly queue: Queue;
  /**
   * Emits `replayed` for every job a replay puts back (typed as a worker's events, so
   * `metrics.observeWorker(dlq)` counts replays).
   */
  readonly events = new EventBus<WorkerEvents>();
  readonly #clock: Clock;
  #paused: Promise<void> | undefined;

  constructor(
    /** The source queue whose dead letters this holds, and where replay sends them. */
    readonly sourceQueue: string,
    private readonly options: DeadLetterQueueOptions,
  ) {
    if (!sourceQueue || sourceQueue.includes(':'))
      throw new InvalidInputError(
        `dead-letter queue: "${sourceQueue}" is not a queue name (non-empty, no ':')`,
      );
    this.name = options.name ?? `${sourceQueue}-dlq`;
    this.prefix = options.prefix ?? 'bull';
    this.#clock = options.clock ?? systemClock;
    this.queue = new Queue(this.name, { connection: options.connection, prefix: this.prefix });
  }

  /**
   * Files a record. Idempotent: a record for the same original job id that is already here is kept as it
   * is, so a worker that crashes after dead-lettering and runs the job's failure path again adds nothing.
   */
  async add(record: DeadLetterRecord): Promise<void> {
    if (typeof record?.jobId !== 'string' || record.jobId === '')
      throw new InvalidInputError(
        'dead-letter record: jobId must be the original job id (a non-empty string)',
      );
    // A replay sends records to this queue's source queue: a record from another queue would land there.
    if (record.queue !== undefined && record.queue !== this.sourceQueue)
      throw new InvalidInputError(
        `dead-letter record: job ${record.jobId} comes from queue "${record.queue}", but ${this.name} holds the dead letters of "${this.sourceQueue}"; file it with deadLetterQueue("${record.queue}", ...)`,
      );
    await this.#ensurePaused();
    await this.queue.add(record.name, record, { jobId: deadLetterJobId(record.jobId) });
  }

  /** The record for an original job id, or `undefined` when there is none. */
  async get(jobId: string): Promise<DeadLetterRecord | undefined> {
    const job = await Job.fromId(this.queue, deadLetterJobId(jobId));
    return job ? asRecord(job.data) : undefined;
  }

  /** Records matching `filter`, oldest first, paged by `offset` and `limit`. */
  async list(options: ListOptions = {}): Promise<DeadLetterRecord[]> {
    const { limit = Number.POSITIVE_INFINITY, offset = 0, ...filter } = options;
    if (!(limit >= 0) || !Number.isInteger(offset) || offset < 0)
      throw new InvalidInputError(
        `dead-letter list: limit and offset must be whole numbers >= 0 (got ${limit}, ${offset})`,
      );
    const out: DeadLetterRecord[] = [];
    let skipped = 0;
    for await (const record of this.scan(filter)) {
      if (out.length >= limit) break;
      if (skipped < offset) skipped++;
      else out.push(record);
    }
    return out;
  }

  /** How many records match `filter` (all of them without one). */
  async count(filter: DeadLetterFilter = {}): Promise<number> {
    if (isEmpty(filter)) return this.queue.getJobCountByTypes(...HELD_STATES);
    let n = 0;
    for await (const _ of this.scan(filter)) n++;
    return n;
  }

  /** Deletes the records matching `filter` (all without one) and returns how many it deleted. */
  async purge(filter: DeadLetterFilter = {}): Promise<number> {
    if (isEmpty(filter)) {
      // Everything: BullMQ's drain drops the lists and hashes in one script instead of one removal each.
      const count = await this.count();
      await this.queue.drain();
      return count;
    }
    const ids: string[] = [];
    for await (const record of this.scan(filter)) ids.push(deadLetterJobId(record.jobId));
    let removed = 0;
    for (const id of ids) removed += await this.queue.remove(id);
    return removed;
  }

  /**
   * Puts the matching records back on the source queue (see `replayDeadLetters` for the options and why an
   * interrupted replay can simply be run again).
   */
  replay(options: ReplayOptions = {}): Promise<ReplayReport> {
    return replayDeadLetters(this, this.options.connection, options);
  }

  /**
   * Every record matching `filter`, oldest first, read a page at a time. Records added while scanning
   * may or may not appear; records removed while scanning may be skipped.
   */
  async *scan(filter: DeadLetterFilter = {}): AsyncGenerator<DeadLetterRecord> {
    const matches = recordMatcher(parseFilter(filter), this.#clock.now());
    for (const state of HELD_STATES) {
      for (let start = 0; ; start += PAGE) {
        const jobs = await this.queue.getJobs([state], start, start + PAGE - 1, true);
        for (const job of jobs) {
          const record = asRecord(job?.data);
          if (record && matches(record)) yield record;
        }
        if (jobs.length < PAGE) break;
      }
    }
  }

  /** Closes the BullMQ queue (and its connection when the queue created it). */
  async close(): Promise<void> {
    await this.queue.close();
  }

  /**
   * Pauses the queue once per instance, before the first record lands, so a worker attached by mistake
   * takes nothing. Pausing an already paused queue changes nothing.
   */
  #ensurePaused(): Promise<void> {
    this.#paused ??= this.queue.pause().catch((error: unknown) => {
      this.#paused = undefined;
      throw error;
    });
    return this.#paused;
  }
}

/**
 * Opens the dead-letter queue of `sourceQueue` (default name `<sourceQueue>-dlq`, prefix `bull`).
 *
 * @example
 * const dlq = deadLetterQueue('index', { connection: { host: '127.0.0.1', port: 6379 } });
 * console.log(await dlq.count({ reason: 'budget-exhausted' }));
 */
export function deadLetterQueue(sourceQueue: string, options: DeadLetterQueueOptions): DeadLetterQueue {
  return new DeadLetterQueue(sourceQueue, options);
}

function asRecord(data: unknown): DeadLetterRecord | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const record = data as DeadLetterRecord;
  return typeof record.jobId === 'string' ? record : undefined;
}

function isEmpty(filter: DeadLetterFilter): boolean {
  return Object.values(filter).every((v) => v === undefined);
}
