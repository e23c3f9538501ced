import { Queue } from 'bullmq';
import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type {
  AttemptState,
  DeadLetterPage,
  DeadLetterRecord,
  DeadLetterStore,
  MalformedDeadLetter,
  StoredDeadLetter,
} from '../runtime/contracts.js';
import { type DeadLetterFilter, resolveFilter } from '../runtime/replay/dead-letter-filter.js';
import { type ReplayOptions, type ReplayReport, replayDeadLetters } from '../runtime/replay/replay.js';
import type { ReplayQueue } from '../runtime/replay/replay-queue.js';
import type { WorkerEvents } from '../runtime/worker-events.js';
import { bullmqReplayQueue } from './bullmq-replay-queue.js';
import { BULLMQ_DEFAULT_PREFIX, clusterPrefixProblem } from './cluster-prefix.js';
import { defaultDeadLetters } from './default-dead-letters.js';
import type { QueueBackendFactory, WorkerConnection } from './worker-options.js';

/**
 * Options of {@link deadLetterQueue}: the store that holds the records, and the BullMQ queue replay puts
 * jobs back on (give one or the other: a `Queue` on any backend, or connection options for Redis).
 *
 * @example
 * const options: DeadLetterQueueOptions = { store: new RedisDeadLetterStore({ redis }), connection: redis };
 */
export interface DeadLetterQueueOptions {
  /**
   * Where the records are: `MemoryDeadLetterStore`, `RedisDeadLetterStore`, `PostgresDeadLetterStore`.
   * Default: the one `createWorker` files to when given none, a `RedisDeadLetterStore` (prefix
   * `stormguard`) on `connection` (its own client when `connection` holds options, closed by `close()`).
   * Required with `queue` alone or with a `backend`.
   */
  store?: DeadLetterStore;
  /**
   * The BullMQ queue replayed jobs go to (its name must be the source queue's). Yours: `close()` leaves it
   * open. Use this for BullMQ's PostgreSQL backend.
   */
  queue?: Queue;
  /**
   * Or: the connection to open the queue with, on first replay (closed by `close()`): ioredis options or
   * an instance (give BullMQ connections `maxRetriesPerRequest: null`), or the `backend`'s connection.
   */
  connection?: WorkerConnection;
  /** BullMQ 6's backend factory for `connection` (`createPostgresBackend`). Default: BullMQ's own (Redis). */
  backend?: QueueBackendFactory;
  /** BullMQ key prefix of the queue opened from `connection`. Default: `bull`. */
  prefix?: string;
  /** Where "now" comes from for `sinceMs` filters. Default: the system clock. */
  clock?: Clock;
}

/**
 * A page of a listing.
 *
 * @example
 * const first = await dlq.list({ dependency: 'search', limit: 50 });
 * const second = await dlq.list({ dependency: 'search', limit: 50, cursor: first.next });
 */
export interface ListOptions extends DeadLetterFilter {
  /** At most this many entries. Default: 50. */
  limit?: number;
  /** The previous page's `next`. Default: the start. */
  cursor?: string | undefined;
  /** Newest first. Default: oldest first. */
  newestFirst?: boolean;
}

const OPTION_NAMES = {
  store: true,
  queue: true,
  connection: true,
  backend: true,
  prefix: true,
  clock: true,
} as const satisfies OptionNames<DeadLetterQueueOptions>;

/** Names people reach for that `deadLetterQueue` spells otherwise. */
const OPTION_ALIASES: Readonly<Record<string, string>> = {
  deadLetters: 'the dead-letter store is `store` here (`deadLetters` is the createWorker option)',
  redis: 'the Redis client or options go in `connection`',
  workerOptions: 'give the BullMQ prefix as `prefix`',
};

/** Records removed per round of a purge. */
const PURGE_PAGE = 500;
/** How long the job's attempt state lives when a record is filed by hand (`add`). */
const HAND_FILED_STATE_TTL_MS = 7 * 86_400_000;

/**
 * The dead letters of one queue: a view of the dead-letter store (records filed by `createWorker`) with
 * replay back onto the BullMQ queue through its public API. Listing and counting never write.
 *
 * @example
 * const dlq = deadLetterQueue('index', { store, connection });
 * const stuck = await dlq.list({ reason: 'budget-exhausted' });
 * const report = await dlq.replay({ dependency: 'search', ratePerSecond: 50 });
 * await dlq.close();
 */
export class DeadLetterQueue {
  readonly store: DeadLetterStore;
  /**
   * Emits `replayed` for every job a replay puts back (typed as a worker's events, so
   * `metrics.observeWorker(dlq)` counts replays).
   */
  readonly events = new EventBus<WorkerEvents>();
  readonly #clock: Clock;
  /** Closes what this opened for its default store (nothing when given a store or a client). */
  readonly #closeStore: () => Promise<void>;
  #opened: Queue | undefined;

  constructor(
    /** The source queue whose dead letters this is, and where replay sends them. */
    readonly sourceQueue: string,
    private readonly options: DeadLetterQueueOptions,
  ) {
    if (typeof sourceQueue !== 'string' || sourceQueue === '')
      throw new InvalidInputError(
        `dead-letter queue: ${JSON.stringify(sourceQueue)} is not a queue name (non-empty)`,
      );
    if (typeof options !== 'object' || options === null)
      throw new InvalidInputError(
        'dead-letter queue: options are required: { connection } (the Redis createWorker uses), or { store, queue }',
      );
    checkOptionNames('deadLetterQueue', options, OPTION_NAMES, OPTION_ALIASES);
    if (options.queue && options.queue.name !== sourceQueue)
      throw new InvalidInputError(
        `dead-letter queue: options.queue is "${options.queue.name}", but these are the dead letters of "${sourceQueue}"`,
      );
    const fallback = options.store === undefined ? defaultStore(options) : undefined;
    this.store = options.store ?? (fallback as NonNullable<typeof fallback>).store;
    this.#closeStore = fallback?.close ?? (async () => {});
    this.#clock = options.clock ?? systemClock;
  }

  /** A name for people: `<queue> dead letters`. */
  get name(): string {
    return `${this.sourceQueue} dead letters`;
  }

  /**
   * Files a record by hand (a worker files its own with the store's `file`). Idempotent per job (id and
   * createdAt); returns the record's id.
   */
  async add(record: DeadLetterRecord, state?: AttemptState): Promise<string> {
    if (record?.queue !== this.sourceQueue)
      throw new InvalidInputError(
        `dead-letter record: job ${record?.jobId} comes from queue "${record?.queue}", not "${this.sourceQueue}"; file it with deadLetterQueue("${record?.queue}", ...)`,
      );
    const { id } = await this.store.file(
      record,
      state ?? { attempts: record.attemptsMade, deferrals: 0 },
      HAND_FILED_STATE_TTL_MS,
    );
    return id;
  }

  /** One record by its id (malformed ones as such), or `undefined`. */
  async get(id: string): Promise<StoredDeadLetter | MalformedDeadLetter | undefined> {
    return this.store.get(this.sourceQueue, id);
  }

  /** A page of the records matching the filter, oldest first unless `newestFirst`. */
  async list(options: ListOptions = {}): Promise<DeadLetterPage> {
    const { limit = 50, cursor, newestFirst, ...filter } = options;
    if (!Number.isInteger(limit) || limit < 0)
      throw new InvalidInputError(`dead-letter list: limit must be a whole number >= 0 (got ${limit})`);
    return this.store.list(this.sourceQueue, {
      ...resolveFilter(filter, this.#clock.now()),
      limit,
      ...(cursor ? { cursor } : {}),
      ...(newestFirst ? { newestFirst } : {}),
    });
  }

  /** How many records match `filter` (all of them without one). */
  async count(filter: DeadLetterFilter = {}): Promise<number> {
    return this.store.count(this.sourceQueue, resolveFilter(filter, this.#clock.now()));
  }

  /** Deletes the records matching `filter` (all without one, malformed ones too) and returns how many. */
  async purge(filter: DeadLetterFilter = {}): Promise<number> {
    const resolved = resolveFilter(filter, this.#clock.now());
    let removed = 0;
    let cursor: string | undefined;
    do {
      const page = await this.store.list(this.sourceQueue, {
        ...resolved,
        limit: PURGE_PAGE,
        ...(cursor ? { cursor } : {}),
      });
      const ids = [...page.records, ...page.malformed].map((entry) => entry.id);
      const results = await Promise.all(ids.map((id) => this.store.remove(this.sourceQueue, id)));
      removed += results.filter(Boolean).length;
      cursor = page.next;
    } while (cursor);
    return removed;
  }

  /**
   * Puts the matching records back on the queue (see `replayDeadLetters` for the options and why an
   * interrupted replay can simply be run again).
   */
  async replay(options: ReplayOptions = {}): Promise<ReplayReport> {
    return replayDeadLetters(
      { store: this.store, queue: this.sourceQueue, jobs: this.replayQueue(), events: this.events },
      { clock: this.#clock, ...options },
    );
  }

  /**
   * The replay port on the BullMQ queue replays put jobs back on (`options.queue`, or the one opened from
   * `connection`), for the replay functions that take it, such as `runReplay`.
   *
   * @example
   * await runReplay({ store, runs, queue: 'index', jobs: dlq.replayQueue() }, runId);
   */
  replayQueue(): ReplayQueue {
    return bullmqReplayQueue(this.#jobs());
  }

  /**
   * Closes the BullMQ queue this opened from `connection` and the client of the default store, if it
   * opened one (never a queue, store or client you passed).
   */
  async close(): Promise<void> {
    await this.#opened?.close();
    this.#opened = undefined;
    await this.#closeStore();
  }

  #jobs(): Queue {
    if (this.options.queue) return this.options.queue;
    if (!this.options.connection)
      throw new InvalidInputError(
        'dead-letter queue: replay needs the BullMQ queue; pass options.queue or options.connection',
      );
    const prefix = this.options.prefix ?? BULLMQ_DEFAULT_PREFIX;
    // On a Redis Cluster a prefix without a hash tag fails every add with CROSSSLOT: refuse it up front.
    if ((this.options.connection as { isCluster?: unknown }).isCluster === true) {
      const problem = clusterPrefixProblem(prefix, this.sourceQueue);
      if (problem) throw new InvalidInputError(`dead-letter queue: ${problem}`);
    }
    // BullMQ 6 takes a backend factory as the third argument; BullMQ 5 a connection class, never passed.
    const backend = (this.options.backend === undefined ? [] : [this.options.backend]) as [];
    this.#opened ??= new Queue(
      this.sourceQueue,
      { connection: this.options.connection, prefix } as ConstructorParameters<typeof Queue>[1],
      ...backend,
    );
    return this.#opened;
  }
}

/**
 * The store `createWorker` files to when given none: a `RedisDeadLetterStore` on the Redis `connection`.
 * There is none without a Redis connection (a `queue` alone, or another `backend`): the store must be named.
 */
function defaultStore(options: DeadLetterQueueOptions): ReturnType<typeof defaultDeadLetters> {
  if (options.connection === undefined || options.backend !== undefined)
    throw new InvalidInputError(
      options.backend === undefined
        ? 'dead-letter queue: give options.connection (the Redis createWorker uses: its default store is there) or options.store (the dead-letter store the workers file to)'
        : 'dead-letter queue: with a backend, give options.store (a PostgresDeadLetterStore for BullMQ on PostgreSQL): the default dead-letter store is Redis, on the connection',
    );
  return defaultDeadLetters(options.connection);
}

/**
 * The dead letters of `sourceQueue` in `options.store` (by default, the store `createWorker` files to on
 * `options.connection`), with replay onto the BullMQ queue.
 *
 * @example
 * const dlq = deadLetterQueue('index', { connection: { host: '127.0.0.1', port: 6379 } });
 * console.log(await dlq.count());
 * await dlq.close();
 *
 * @example
 * import { RedisDeadLetterStore } from 'stormguard/redis';
 * const dlq = deadLetterQueue('index', { store: new RedisDeadLetterStore({ redis }), connection: redis });
 * console.log(await dlq.count({ reason: 'budget-exhausted' }));
 */
export function deadLetterQueue(sourceQueue: string, options: DeadLetterQueueOptions): DeadLetterQueue {
  return new DeadLetterQueue(sourceQueue, options);
}
