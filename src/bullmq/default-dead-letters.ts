import { createRequire } from 'node:module';
import type { DeadLetterStore } from '../runtime/contracts.js';

/** What the default needs of `stormguard/redis`: its dead-letter store class. */
interface RedisSubpath {
  RedisDeadLetterStore: new (options: {
    redis: unknown;
  }) => Omit<DeadLetterStore, 'close'> & { close(): Promise<void> };
}

/**
 * The dead-letter store used when none is named, by the writer (`createWorker`) and the reader
 * (`deadLetterQueue`) alike, so both find the same records: a `RedisDeadLetterStore` (default prefix
 * `stormguard`) on the Redis connection. Given an ioredis client, the store uses it as it is; given ioredis
 * options, the store opens one client of its own and `close()` closes it. On another backend there is no
 * default: the caller must name the store.
 *
 * The store comes from the package's public `stormguard/redis` entry point, loaded only when the default
 * is used, as a user's own code would load it: the BullMQ adapter never imports a store's source (design
 * §8), and an install that always names its store (PostgreSQL) loads no Redis code at all.
 *
 * @example
 * const { store, close } = defaultDeadLetters({ host: '127.0.0.1', port: 6379 });
 * await store.registerQueue('index');
 * await close();
 */
export function defaultDeadLetters(connection: unknown): { store: DeadLetterStore; close(): Promise<void> } {
  const { RedisDeadLetterStore } = createRequire(import.meta.url)('stormguard/redis') as RedisSubpath;
  const store = new RedisDeadLetterStore({ redis: connection });
  return { store: store as DeadLetterStore, close: () => store.close() };
}
