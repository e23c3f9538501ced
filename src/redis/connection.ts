import { createRequire } from 'node:module';
import type { RedisOptions } from 'ioredis';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { RedisClient } from './scripts.js';

/**
 * What a Redis store's `redis` option takes: your ioredis client (a `Redis` or a `Cluster`), which the store
 * uses as it is and never closes; or ioredis options (`{ host, port }`) or a `redis://` URL, from which the
 * store opens a client of its own, closed by its `close()`.
 *
 * @example
 * const shared: RedisConnection = new Redis(process.env.REDIS_URL);
 * const own: RedisConnection = { host: '127.0.0.1', port: 6379 };
 */
export type RedisConnection = RedisClient | RedisOptions | string;

/**
 * The client a store works on, and how to close it: a no-op for a client it was given, `quit` for one it
 * opened from options or a URL (ioredis is loaded only then).
 *
 * @example
 * const { redis, close } = redisClientOf('RedisBudgetStore', options.redis);
 */
export function redisClientOf(
  subject: string,
  connection: unknown,
): { redis: RedisClient; close(): Promise<void> } {
  if (isRedisClient(connection)) return { redis: connection, close: async () => {} };
  if (!(typeof connection === 'string' && connection !== '') && !isPlainObject(connection))
    throw new InvalidInputError(
      `${subject}: redis must be an ioredis client (new Redis(url) or new Cluster(nodes)), ioredis options ({ host, port }) or a redis:// URL; got ${describe(connection)}`,
    );
  const { Redis } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  const redis =
    typeof connection === 'string' ? new Redis(connection) : new Redis(connection as RedisOptions);
  let closed: Promise<void> | undefined;
  return {
    redis,
    close: () => {
      closed ??= redis.quit().then(
        () => undefined,
        () => redis.disconnect(),
      );
      return closed;
    },
  };
}

/**
 * An ioredis `Redis` or `Cluster` (what BullMQ takes as a ready connection), told apart from options.
 *
 * @example
 * isRedisClient(new Redis()); // true
 * isRedisClient({ host: '127.0.0.1', port: 6379 }); // false
 */
export function isRedisClient(value: unknown): value is RedisClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { defineCommand?: unknown }).defineCommand === 'function' &&
    typeof (value as { duplicate?: unknown }).duplicate === 'function'
  );
}

function isPlainObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'object' && value !== null)
    return `an object of class ${value.constructor?.name ?? 'unknown'}`;
  return JSON.stringify(value) ?? String(value);
}
