import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { DeadLetterRecord } from '../../src/runtime/contracts.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { TestRedis } from '../helpers/redis-server.js';

/** A redis-server for one test file, the BullMQ connection options for it, and dead-letter stores on it. */
export interface RedisForFile {
  readonly server: TestRedis;
  readonly connection: { host: string; port: number; maxRetriesPerRequest: null };
  /** One client for the file's stores (closed after the file). */
  readonly redis: Redis;
  /** A dead-letter store under a prefix no other test in the file uses. */
  store(): RedisDeadLetterStore;
}

let prefixes = 0;

/** Starts a redis-server before the file's tests and stops it after them. */
export function redisForFile(): RedisForFile {
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.connection);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.close();
  });
  const started = () => {
    if (!server || !redis) throw new Error('redis-server is not started yet (use it inside a test)');
    return { server, redis };
  };
  return {
    get server() {
      return started().server;
    },
    get connection() {
      return { ...started().server.connection, maxRetriesPerRequest: null };
    },
    get redis() {
      return started().redis;
    },
    store: () => new RedisDeadLetterStore({ redis: started().redis, prefix: `sgtest-${prefixes++}` }),
  };
}

/** A dead-letter record of queue `index` as a worker files it; `overrides` change what a test cares about. */
export function deadLetter(jobId: string, overrides: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  return sampleDeadLetter(jobId, {
    createdAt: 1_000,
    firstFailedAt: 2_000,
    deadLetteredAt: 10_000,
    ...overrides,
  });
}

let counter = 0;
/** A queue name no other test in the file uses. */
export function uniqueQueue(stem: string): string {
  counter += 1;
  return `${stem}${counter}`;
}
