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
 * and, on PostgreSQL, `./stormguard-postgres.ts` (loaded only there, so a project without `pg` never
 * needs it): replace those modules to test the installed package. BullMQ only as `bullmq` (whatever the
 * running project installed: BullMQ 5 or 6). Nothing in them names a backend; they ask the bed for
 * connections, queues and stores. Test bookkeeping (side-effect counters, "started" marks) stays in the
 * test process or goes over a child's stdout, never through the backend under test.
 */
import { randomUUID } from 'node:crypto';
import { FlowProducer, Queue, QueueEvents, Worker, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { TestRedisCluster } from '../helpers/redis-cluster.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';
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
  redisIdempotencyGuard,
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

/**
 * Waits (5 s at most) until no job of `queue` is left waiting, delayed, active, prioritized or waiting
 * for children, and fails naming the queue. BullMQ moves a job to its final state just after the
 * worker's event for it, so a count read at the event can still see it (on PostgreSQL more often).
 */
export async function expectNothingLeft(queue: Queue): Promise<void> {
  await waitFor(async () => (await unfinished(queue)) === 0, 5_000, `every job to leave ${queue.name}`);
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
  readonly backend: TestBackendName;
  readonly #open: Closable[] = [];
  #server: TestRedis | undefined;
  #redis: Redis | undefined;
  #cluster: TestRedisCluster | undefined;
  #world: World | undefined;
  /** The prefix of the bed's dead-letter store (for a child process that opens the same store). */
  deadLetterPrefix = '';

  private constructor(backend: TestBackendName) {
    this.backend = backend;
  }

  /**
   * A bed for the calling test file: started in `beforeAll`, closed in `afterAll`. On the run's backend
   * (`STORMGUARD_TEST_BACKEND`), unless the file tests what only one backend does.
   *
   * @example
   * const bed = TestBed.perFile();
   */
  static perFile(options: { backend?: TestBackendName } = {}): TestBed {
    const bed = new TestBed(options.backend ?? testBackendName());
    beforeAll(() => bed.#start());
    afterAll(() => bed.close());
    return bed;
  }

  async #start(): Promise<void> {
    this.deadLetterPrefix = uniqueQueue('dl');
    if (this.backend === 'postgres') {
      this.#world = await postgresWorld(this.deadLetterPrefix);
      return;
    }
    if (this.backend === 'cluster') {
      const { TestRedisCluster } = await import('../helpers/redis-cluster.js');
      this.#cluster = await TestRedisCluster.start({ replicas: 1 });
      // BullMQ's blocking commands must never time out on the client side.
      const redis = this.#cluster.client({ redisOptions: { maxRetriesPerRequest: null } });
      this.#world = {
        connection: redis,
        backend: undefined,
        deadLetters: new RedisDeadLetterStore({ redis, prefix: this.deadLetterPrefix }),
        budgetStore: () => new RedisBudgetStore({ redis, prefix: uniqueQueue('budget') }),
        idempotencyGuard: (ttlMs) => redisIdempotencyGuard({ redis, prefix: uniqueQueue('idem'), ttlMs }),
        close: async () => redis.disconnect(),
      };
      return;
    }
    // An idle Redis wakes its event loop `hz` times a second (10 by default) and only then times out
    // blocked clients, so each delayed job would start up to 100 ms late. Production Redis is never idle;
    // 100 Hz keeps the scheduling slack of this throw-away server at a few milliseconds per retry.
    this.#server = await TestRedis.start({ args: ['--hz', '100'] });
    const redis = new Redis(this.#server.url, { maxRetriesPerRequest: null });
    this.#redis = redis;
    this.#world = {
      connection: this.#server.connection,
      backend: undefined,
      deadLetters: new RedisDeadLetterStore({ redis, prefix: this.deadLetterPrefix }),
      budgetStore: () => new RedisBudgetStore({ redis, prefix: uniqueQueue('budget') }),
      idempotencyGuard: (ttlMs) => redisIdempotencyGuard({ redis, prefix: uniqueQueue('idem'), ttlMs }),
      close: async () => redis.disconnect(),
    };
  }

  get #started(): World {
    if (!this.#world) throw new Error('the test bed is not started yet: use it inside a test');
    return this.#world;
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

  /** What BullMQ connects with on this backend: ioredis options, or a PostgreSQL pool config. */
  get connection(): { host: string; port: number } {
    return this.#started.connection as { host: string; port: number };
  }

  /** BullMQ's backend factory on PostgreSQL (`undefined` on Redis, BullMQ's default). */
  get queueBackend(): QueueBackend | undefined {
    return this.#started.backend;
  }

  /** The bed's backend, for a child process (see `workerConnectionOf`). */
  get descriptor(): BackendDescriptor {
    if (this.#cluster)
      return { backend: this.backend, connection: this.#cluster.startupNodes, bullPrefix: '{bull}' };
    return { backend: this.backend, connection: this.connection };
  }

  /**
   * BullMQ's key prefix on this backend as an option to spread: `{ prefix: '{bull}' }` on a Redis Cluster
   * (BullMQ's keys of a queue must share a hash tag), nothing elsewhere (BullMQ's default).
   */
  get bullPrefixOption(): { prefix?: string } {
    return this.backend === 'cluster' ? { prefix: '{bull}' } : {};
  }

  /** The dead-letter store every worker of the bed files into (and keeps attempt states in). */
  get deadLetters(): DeadLetterStore {
    return this.#started.deadLetters;
  }

  /** A retry budget store on this backend, under a prefix no other test uses. */
  budgetStore(): BudgetStore {
    return this.#started.budgetStore();
  }

  /** An idempotency guard on this backend's store, under a prefix no other test uses. */
  idempotencyGuard(ttlMs: number): IdempotencyGuard {
    return this.#started.idempotencyGuard(ttlMs);
  }

  /** A BullMQ queue on this backend, closed with the bed. */
  queue(name: string): Queue {
    return this.track(
      new Queue(name, { connection: this.connection, ...this.bullPrefixOption }, ...this.#backendArgument()),
    );
  }

  /** A bare BullMQ worker on this backend (no processor unless given), closed with the bed. */
  bareWorker(name: string, options: Omit<WorkerOptions, 'connection'> = {}): Worker {
    return this.track(
      new Worker(
        name,
        null,
        { ...this.bullPrefixOption, ...options, connection: this.connection },
        ...this.#backendArgument(),
      ),
    );
  }

  /** A BullMQ flow producer on this backend, closed with the bed. */
  flowProducer(): FlowProducer {
    return this.track(
      new FlowProducer({ connection: this.connection, ...this.bullPrefixOption }, ...this.#backendArgument()),
    );
  }

  /** A BullMQ QueueEvents on this backend, closed with the bed. */
  queueEvents(name: string): QueueEvents {
    return this.track(
      new QueueEvents(
        name,
        { connection: this.connection, ...this.bullPrefixOption },
        ...this.#backendArgument(),
      ),
    );
  }

  /** BullMQ's constructors take the backend factory last; BullMQ 5 takes none. */
  #backendArgument(): [] {
    const backend = this.#started.backend;
    return (backend === undefined ? [] : [backend]) as [];
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
  workerOptions(): Pick<StormguardWorkerOptions, 'connection' | 'deadLetters' | 'backend'> {
    const backend = this.#started.backend;
    return { connection: this.connection, deadLetters: this.deadLetters, ...(backend ? { backend } : {}) };
  }

  /** A createWorker on this bed's backend and stores, closed when the bed closes. */
  worker<Data = unknown, Result = unknown, Name extends string = string>(
    queueName: string,
    processor: StormguardProcessor<Data, Result, Name>,
    options: Omit<StormguardWorkerOptions<Data, Result, Name>, 'connection' | 'deadLetters'> &
      Partial<Pick<StormguardWorkerOptions<Data, Result, Name>, 'deadLetters'>>,
  ): StormguardWorker<Data, Result, Name> {
    return this.track(
      createWorker(queueName, processor, {
        ...this.workerOptions(),
        ...options,
        workerOptions: { ...this.bullPrefixOption, ...options.workerOptions },
      }),
    );
  }

  /** Closes `thing` when the bed closes. */
  track<T extends Closable>(thing: T): T {
    this.#open.push(thing);
    return thing;
  }

  async close(): Promise<void> {
    for (const thing of this.#open.reverse()) await thing.close();
    await this.#world?.deadLetters.close?.();
    await this.#world?.close();
    await this.#server?.close();
    await this.#cluster?.close();
  }
}

type QueueBackend = NonNullable<StormguardWorkerOptions['backend']>;

/** What a backend gives the bed: how BullMQ connects, and stormguard's stores on the same backend. */
interface World {
  connection: unknown;
  backend: QueueBackend | undefined;
  deadLetters: DeadLetterStore;
  budgetStore(): BudgetStore;
  idempotencyGuard(ttlMs: number): IdempotencyGuard;
  close(): Promise<void>;
}

/**
 * BullMQ 6 on PostgreSQL: a database of the file's own on the run's PostgreSQL (the harness starts it:
 * initdb in a temporary folder, a free port), BullMQ's schema migrated on connect, and stormguard's
 * PostgreSQL stores in the same database. Loaded only on this backend: BullMQ 5 and `pg` are not needed
 * for the Redis one.
 */
async function postgresWorld(deadLetterPrefix: string): Promise<World> {
  const [{ sharedPostgres }, pg, bullmq, stores] = await Promise.all([
    import('../helpers/postgres-bed.js'),
    import('pg'),
    import('bullmq'),
    import('./stormguard-postgres.js'),
  ]);
  const database = await (await sharedPostgres()).createDatabase();
  const pool = new pg.default.Pool({ connectionString: database.url, max: 10 });
  const backend = (bullmq as unknown as { createPostgresBackend: QueueBackend }).createPostgresBackend;
  return {
    connection: { connectionString: database.url, migrate: true },
    backend,
    deadLetters: new stores.PostgresDeadLetterStore({ connection: pool, prefix: deadLetterPrefix }),
    budgetStore: () => new stores.PostgresBudgetStore({ connection: pool, prefix: uniqueQueue('budget') }),
    idempotencyGuard: (ttlMs) =>
      idempotencyGuard({
        store: new stores.PostgresIdempotencyStore({ connection: pool, prefix: uniqueQueue('idem') }),
        ttlMs,
      }),
    close: async () => {
      await pool.end();
      await database.drop();
    },
  };
}

/** A dependency that is down: fails at once, the way a timed-out call is reported. */
export function timeoutError(message = 'connect ETIMEDOUT'): Error {
  return Object.assign(new Error(message), { code: 'ETIMEDOUT' });
}
