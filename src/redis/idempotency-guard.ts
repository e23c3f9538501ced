import { InvalidInputError } from '../errors/invalid-input-error.js';
import {
  type IdempotencyGuard,
  type IdempotencyGuardOptions,
  idempotencyGuard,
} from '../idempotency/guard.js';
import { RedisIdempotencyStore, type RedisIdempotencyStoreOptions } from './idempotency-store.js';
import type { RedisClient } from './scripts.js';

/**
 * Options of {@link redisIdempotencyGuard}: the guard's options, with an ioredis client in place of a store.
 *
 * @example
 * const options: RedisIdempotencyGuardOptions = { redis, ttlMs: 7 * 86_400_000, inFlightTtlMs: 30_000 };
 */
export interface RedisIdempotencyGuardOptions
  extends Omit<IdempotencyGuardOptions, 'store'>,
    RedisIdempotencyStoreOptions {
  /** An ioredis client (or Cluster); the guard keeps its keys under `<prefix>:idempotency:`. */
  redis: RedisClient;
}

/**
 * Builds an {@link IdempotencyGuard} on a {@link RedisIdempotencyStore} over `redis`: the same as
 * `idempotencyGuard({ store: new RedisIdempotencyStore(redis, { prefix, durableWrites }), ...options })`.
 * Defaults: prefix `stormguard`, durable writes on a Redis Cluster client, and the guard's own defaults.
 *
 * @example
 * const guard = redisIdempotencyGuard({ redis: new Redis(url), ttlMs: 86_400_000, inFlightTtlMs: 30_000 });
 * await guard.once('welcome-mail:42', () => mailer.send(user));
 */
export function redisIdempotencyGuard(options: RedisIdempotencyGuardOptions): IdempotencyGuard {
  const { redis, prefix, durableWrites, ...guardOptions } = options ?? ({} as RedisIdempotencyGuardOptions);
  if (!redis) throw new InvalidInputError('idempotency guard: give `redis` (an ioredis client)');
  const store = new RedisIdempotencyStore(redis, { prefix, durableWrites });
  return idempotencyGuard({ ...guardOptions, store });
}
