import type { RedisOptions } from 'ioredis';
import { RedisDeadLetterStore } from '../redis/dead-letter-store.js';
import type { RedisClient } from '../redis/scripts.js';
import type { DeadLetterStore } from '../runtime/contracts.js';

/**
 * The dead-letter store a worker uses when it is given none: a `RedisDeadLetterStore` (default prefix
 * `stormguard`) on the worker's own Redis. Given an ioredis client, the store uses it as it is; given
 * ioredis options, the store opens one client of its own (ioredis is loaded only then, so a PostgreSQL-only
 * install needs none) and `close()` closes it. On another backend there is no default: the caller must
 * name the store.
 *
 * @example
 * const { store, close } = defaultDeadLetters({ host: '127.0.0.1', port: 6379 });
 * await store.registerQueue('index');
 * await close();
 */
export function defaultDeadLetters(connection: unknown): { store: DeadLetterStore; close(): Promise<void> } {
  if (isRedisClient(connection))
    return { store: new RedisDeadLetterStore({ redis: connection }), close: async () => {} };
  let opened: Promise<{ redis: RedisClient; store: RedisDeadLetterStore }> | undefined;
  const open = () => {
    opened ??= import('ioredis').then(({ Redis }) => {
      const redis = new Redis(connection as RedisOptions);
      return { redis, store: new RedisDeadLetterStore({ redis }) };
    });
    return opened.then(({ store }) => store);
  };
  const store: DeadLetterStore = {
    registerQueue: async (queue, retention) => (await open()).registerQueue(queue, retention),
    queues: async () => (await open()).queues(),
    queue: async (queue) => (await open()).queue(queue),
    file: async (record, finalState, ttlMs) => (await open()).file(record, finalState, ttlMs),
    get: async (queue, id) => (await open()).get(queue, id),
    list: async (queue, page) => (await open()).list(queue, page),
    count: async (queue, filter) => (await open()).count(queue, filter),
    claimReplay: async (queue, id, jobId) => (await open()).claimReplay(queue, id, jobId),
    completeReplay: async (queue, id) => (await open()).completeReplay(queue, id),
    remove: async (queue, id) => (await open()).remove(queue, id),
    readAttempts: async (job) => (await open()).readAttempts(job),
    writeAttempts: async (job, state, ttlMs) => (await open()).writeAttempts(job, state, ttlMs),
    clearAttempts: async (job) => (await open()).clearAttempts(job),
  };
  return {
    store,
    close: async () => {
      if (!opened) return;
      const { redis } = await opened;
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/** An ioredis `Redis` or `Cluster` (what BullMQ takes as a ready connection), told apart from options. */
function isRedisClient(value: unknown): value is RedisClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { defineCommand?: unknown }).defineCommand === 'function' &&
    typeof (value as { duplicate?: unknown }).duplicate === 'function'
  );
}
