import { RedisDeadLetterStore } from '../redis/dead-letter-store.js';
import type { DeadLetterStore } from '../runtime/contracts.js';

/**
 * The dead-letter store used when none is named, by the writer (`createWorker`) and the reader
 * (`deadLetterQueue`) alike, so both find the same records: a `RedisDeadLetterStore` (default prefix
 * `stormguard`) on the Redis connection. Given an ioredis client, the store uses it as it is; given ioredis
 * options, the store opens one client of its own (ioredis is loaded only then, so a PostgreSQL-only install
 * needs none) and `close()` closes it. On another backend there is no default: the caller must name the
 * store.
 *
 * @example
 * const { store, close } = defaultDeadLetters({ host: '127.0.0.1', port: 6379 });
 * await store.registerQueue('index');
 * await close();
 */
export function defaultDeadLetters(connection: unknown): { store: DeadLetterStore; close(): Promise<void> } {
  const store = new RedisDeadLetterStore({ redis: connection as RedisDeadLetterStoreConnection });
  return { store, close: () => store.close() };
}

type RedisDeadLetterStoreConnection = ConstructorParameters<typeof RedisDeadLetterStore>[0]['redis'];
