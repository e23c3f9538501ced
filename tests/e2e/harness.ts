/**
 * The world the worker and end-to-end tests run in: a queue backend started for the test file, the
 * stores on it, and helpers to watch jobs end.
 *
 * Which backend: `STORMGUARD_TEST_BACKEND`, read here and nowhere else.
 * - `redis` (default): a redis-server of the file's own on a free port; BullMQ on it, and stormguard's
 *   Redis stores on the same server.
 * - `postgres`: BullMQ 6's PostgreSQL backend (`createPostgresBackend`) on a PostgreSQL the harness
 *   starts itself, and stormguard's PostgreSQL stores: no Redis at all.
 *
 * How a matrix cell runs these files elsewhere: the tests import stormguard only through `./stormguard.ts`
 * (replace that one module to test the installed package) and BullMQ only as `bullmq` (whatever the
 * running project installed: BullMQ 5 or 6). Nothing in them names a backend; they ask the bed for
 * connections, queues and stores. Test bookkeeping (side-effect counters, "started" marks) stays in the
 * test process or goes over a child's stdout, never through the backend under test.
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { TestRedis } from '../helpers/redis-server.js';
import { type BackendDescriptor, type TestBackendName, testBackendName } from './backend.js';
import {
  type BudgetStore,
  createWorker,
  type DeadLetterStore,
  type EventBus,
  type IdempotencyGuard,
  idempotencyGuard,
  RedisBudgetStore,
  RedisDeadLetterStore,
  type StoredDeadLetter,
  type StormguardProcessor,
  type StormguardWorker,
  type StormguardWorkerOptions,
  type WorkerEvents,
} from './stormguard.js';

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
  const counts = await queue.getJobCounts('wait', 'delayed', 'active', 'prioritized', 'waiting-children');
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** One queue's dead letters as the tests read them. */
export interface DeadLetters {
  /** The newest record filed for a job id, or `undefined`. */
  get(jobId: string): Promise<StoredDeadLetter | undefined>;
  count(filter?: Parameters<DeadLetterStore['count']>[1]): Promise<number>;
  all(): Promise<StoredDeadLetter[]>;
}

interface Closable {
  close(): Promise<unknown>;
}

/**
 * One test file's world: its own backend server on a free port, the stores on it, and everything the
 * tests open, closed in reverse order at the end.
 */
export class TestBed {
  readonly backend: TestBackendName = testBackendName();
  readonly #open: Closable[] = [];
  #server: TestRedis | undefined;
  #redis: Redis | undefined;
  #deadLetters: DeadLetterStore | undefined;
  /** The prefix of the bed's dead-letter store (for a child process that opens the same store). */
  deadLetterPrefix = '';

  private constructor() {}

  /**
   * A bed for the calling test file: started in `beforeAll`, closed in `afterAll`.
   *
   * @example
   * const bed = TestBed.perFile();
   */
  static perFile(): TestBed {
    const bed = new TestBed();
    beforeAll(() => bed.#start());
    afterAll(() => bed.close());
    return bed;
  }

  async #start(): Promise<void> {
    if (this.backend === 'postgres')
      throw new Error(
        'STORMGUARD_TEST_BACKEND=postgres: the PostgreSQL test bed needs tests/helpers/postgres-server.ts and the PostgreSQL stores',
      );
    // An idle Redis wakes its event loop `hz` times a second (10 by default) and only then times out
    // blocked clients, so each delayed job would start up to 100 ms late. Production Redis is never idle;
    // 100 Hz keeps the scheduling slack of this throw-away server at a few milliseconds per retry.
    this.#server = await TestRedis.start({ args: ['--hz', '100'] });
    this.#redis = new Redis(this.#server.url, { maxRetriesPerRequest: null });
    this.deadLetterPrefix = uniqueQueue('dl');
    this.#deadLetters = new RedisDeadLetterStore({ redis: this.#redis, prefix: this.deadLetterPrefix });
  }

  /** The redis-server (Redis backend only). */
  get server(): TestRedis {
    if (!this.#server)
      throw new Error('the test bed has no redis-server: use it inside a test, on the Redis backend');
    return this.#server;
  }

  /** A client of the bed's redis-server, for stores (Redis backend only). */
  get redis(): Redis {
    if (!this.#redis)
      throw new Error('the test bed has no Redis: use it inside a test, on the Redis backend');
    return this.#redis;
  }

  /** What BullMQ connects with on this backend. */
  get connection(): { host: string; port: number } {
    return this.server.connection;
  }

  /** The bed's backend, for a child process (see `workerConnectionOf`). */
  get descriptor(): BackendDescriptor {
    return { backend: this.backend, connection: this.connection };
  }

  /** The dead-letter store every worker of the bed files into (and keeps attempt states in). */
  get deadLetters(): DeadLetterStore {
    if (!this.#deadLetters) throw new Error('the test bed is not started yet: use it inside a test');
    return this.#deadLetters;
  }

  /** A retry budget store on this backend, under a prefix no other test uses. */
  budgetStore(): BudgetStore {
    return new RedisBudgetStore({ redis: this.redis, prefix: uniqueQueue('budget') });
  }

  /** An idempotency guard on this backend's store, under a prefix no other test uses. */
  idempotencyGuard(ttlMs: number): IdempotencyGuard {
    return idempotencyGuard({ redis: this.redis, prefix: uniqueQueue('idem'), ttlMs });
  }

  /** A BullMQ queue on this backend, closed with the bed. */
  queue(name: string): Queue {
    return this.track(new Queue(name, { connection: this.connection }));
  }

  /** A fresh source queue and a view of its dead letters. */
  queues(name: string): { queueName: string; queue: Queue; dlq: DeadLetters } {
    const queueName = uniqueQueue(name);
    return { queueName, queue: this.queue(queueName), dlq: this.deadLettersOf(queueName) };
  }

  /** A queue's dead letters, read from the bed's store. */
  deadLettersOf(queueName: string): DeadLetters {
    const store = () => this.deadLetters;
    const all = async () => {
      const records: StoredDeadLetter[] = [];
      let cursor: string | undefined;
      do {
        const page = await store().list(queueName, { limit: 500, ...(cursor ? { cursor } : {}) });
        records.push(...page.records);
        cursor = page.next;
      } while (cursor);
      return records;
    };
    return {
      all,
      get: async (jobId) => (await all()).filter((r) => r.jobId === jobId).at(-1),
      count: async (filter) => store().count(queueName, filter),
    };
  }

  /** The options every worker of the bed gets: its connection, backend and dead-letter store. */
  workerOptions(): Pick<StormguardWorkerOptions, 'connection' | 'deadLetters'> {
    return { connection: this.connection, deadLetters: this.deadLetters };
  }

  /** A createWorker on this bed's backend and stores, closed when the bed closes. */
  worker<Data = unknown, Result = unknown, Name extends string = string>(
    queueName: string,
    processor: StormguardProcessor<Data, Result, Name>,
    options: Omit<StormguardWorkerOptions<Data, Result, Name>, 'connection' | 'deadLetters'> &
      Partial<Pick<StormguardWorkerOptions<Data, Result, Name>, 'deadLetters'>>,
  ): StormguardWorker<Data, Result, Name> {
    return this.track(createWorker(queueName, processor, { ...this.workerOptions(), ...options }));
  }

  /** Closes `thing` when the bed closes. */
  track<T extends Closable>(thing: T): T {
    this.#open.push(thing);
    return thing;
  }

  async close(): Promise<void> {
    for (const thing of this.#open.reverse()) await thing.close();
    await this.#deadLetters?.close?.();
    this.#redis?.disconnect();
    await this.#server?.close();
  }
}

/** A dependency that is down: fails at once, the way a timed-out call is reported. */
export function timeoutError(message = 'connect ETIMEDOUT'): Error {
  return Object.assign(new Error(message), { code: 'ETIMEDOUT' });
}
