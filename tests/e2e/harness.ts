import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { EventBus } from '../../src/common/events.js';
import { DeadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import type { WorkerEvents } from '../../src/bullmq/types.js';
import { createWorker, type StormguardWorker } from '../../src/bullmq/worker.js';
import type { StormguardWorkerOptions } from '../../src/bullmq/worker-options.js';
import type { StormguardProcessor } from '../../src/bullmq/worker-runner.js';
import { TestRedis } from '../helpers/redis-server.js';

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
  const counts = await queue.getJobCounts(
    'wait',
    'delayed',
    'active',
    'prioritized',
    'paused',
    'waiting-children',
  );
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

interface Closable {
  close(): Promise<unknown>;
}

/**
 * One test file's world: its own redis-server (TestRedis, on a free port), an ioredis client, and
 * everything the tests open, closed in reverse order at the end.
 */
export class TestBed {
  readonly #open: Closable[] = [];
  #server: TestRedis | undefined;
  #redis: Redis | undefined;

  private constructor() {}

  static async start(): Promise<TestBed> {
    const bed = new TestBed();
    await bed.#start();
    return bed;
  }

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
    // An idle Redis wakes its event loop `hz` times a second (10 by default) and only then times out
    // blocked clients, so each delayed job would start up to 100 ms late. Production Redis is never idle;
    // 100 Hz keeps the scheduling slack of this throw-away server at a few milliseconds per retry.
    this.#server = await TestRedis.start({ args: ['--hz', '100'] });
    this.#redis = new Redis(this.#server.url, { maxRetriesPerRequest: null });
  }

  get server(): TestRedis {
    if (!this.#server) throw new Error('the test bed is not started yet: use it inside a test');
    return this.#server;
  }

  get redis(): Redis {
    if (!this.#redis) throw new Error('the test bed is not started yet: use it inside a test');
    return this.#redis;
  }

  /** Connection options for BullMQ. */
  get connection(): { host: string; port: number } {
    return this.server.connection;
  }

  /** A fresh source queue and its dead-letter queue. */
  queues(name: string): { queueName: string; queue: Queue; dlq: DeadLetterQueue } {
    const queueName = uniqueQueue(name);
    const queue = this.track(new Queue(queueName, { connection: this.connection }));
    const dlq = this.track(new DeadLetterQueue(queueName, { connection: this.connection }));
    return { queueName, queue, dlq };
  }

  /** A createWorker on this bed's redis-server, closed when the bed closes. */
  worker<Data = unknown, Result = unknown, Name extends string = string>(
    queueName: string,
    processor: StormguardProcessor<Data, Result, Name>,
    options: Omit<StormguardWorkerOptions<Data, Result, Name>, 'connection'>,
  ): StormguardWorker<Data, Result, Name> {
    return this.track(createWorker(queueName, processor, { connection: this.connection, ...options }));
  }

  /** Closes `thing` when the bed closes. */
  track<T extends Closable>(thing: T): T {
    this.#open.push(thing);
    return thing;
  }

  async close(): Promise<void> {
    for (const thing of this.#open.reverse()) await thing.close();
    this.#redis?.disconnect();
    await this.#server?.close();
  }
}

/** A dependency that is down: fails at once, the way a timed-out call is reported. */
export function timeoutError(message = 'connect ETIMEDOUT'): Error {
  return Object.assign(new Error(message), { code: 'ETIMEDOUT' });
}
