import { afterAll, beforeAll } from 'vitest';
import type { DeadLetterRecord } from '../../src/bullmq/types.js';
import { TestRedis } from '../helpers/redis-server.js';

/** A redis-server for one test file and the BullMQ connection options for it. */
export interface RedisForFile {
  readonly server: TestRedis;
  readonly connection: { host: string; port: number; maxRetriesPerRequest: null };
}

/** Starts a redis-server before the file's tests and stops it after them. */
export function redisForFile(): RedisForFile {
  let server: TestRedis | undefined;
  beforeAll(async () => {
    server = await TestRedis.start();
  });
  afterAll(async () => {
    await server?.close();
  });
  const started = () => {
    if (!server) throw new Error('redis-server is not started yet (use it inside a test)');
    return server;
  };
  return {
    get server() {
      return started();
    },
    get connection() {
      return { ...started().connection, maxRetriesPerRequest: null };
    },
  };
}

/** A dead-letter record as a worker files it; `overrides` change what a test cares about. */
export function deadLetter(jobId: string, overrides: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  return {
    jobId,
    queue: 'index',
    name: 'reindex',
    data: { docId: jobId },
    opts: { attempts: 5, backoff: { type: 'exponential', delay: 1000 }, jobId },
    reason: 'max-attempts',
    detail: '5 of 5 attempts used',
    lastError: {
      name: 'TransientError',
      message: 'search timed out',
      classification: { retryable: true, reason: 'ETIMEDOUT' },
    },
    attemptsMade: 5,
    dependency: 'search',
    createdAt: 1_000,
    firstFailedAt: 2_000,
    deadLetteredAt: 10_000,
    replays: 0,
    ...overrides,
  };
}

let counter = 0;
/** A queue name no other test in the file uses. */
export function uniqueQueue(stem: string): string {
  counter += 1;
  return `${stem}${counter}`;
}
