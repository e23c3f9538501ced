/**
 * stormguard's Redis stores (`stormguard/redis`), on ioredis: the fleet-wide retry budget store, and the
 * breaker and idempotency stores (and `redisIdempotencyGuard`). ioredis is a peer dependency: bring your own client.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RedisBudgetStore } from 'stormguard/redis';
 * const store = new RedisBudgetStore({ redis: new Redis(process.env.REDIS_URL), prefix: 'stormguard' });
 */

export { RedisAuditLog, type RedisAuditLogOptions } from './audit-log.js';
export {
  type BreakerStoreEvents,
  type BreakerStoreFallback,
  type ListedBreaker,
  RedisBreakerStore,
  type RedisBreakerStoreOptions,
} from './breaker-store.js';
export { assertPrefix, budgetKey, DEFAULT_PREFIX } from './budget-keys.js';
export { RedisBudgetStore, type RedisBudgetStoreOptions } from './budget-store.js';
export {
  DEAD_LETTER_SCHEMA_VERSION,
  RedisDeadLetterStore,
  type RedisDeadLetterStoreOptions,
} from './dead-letter-store.js';
export type { DurableWrites, DurableWritesOption } from './durable-writes.js';
export { type RedisFleet, type RedisFleetOptions, redisFleet } from './fleet.js';
export { RedisFlowStore, type RedisFlowStoreOptions } from './flow-store.js';
export { type RedisIdempotencyGuardOptions, redisIdempotencyGuard } from './idempotency-guard.js';
export { RedisIdempotencyStore, type RedisIdempotencyStoreOptions } from './idempotency-store.js';
export { RedisReplayRunStore, type RedisReplayRunStoreOptions } from './replay-run-store.js';
export { defineScript, luaSource, type RedisClient, type ScriptSpec } from './scripts.js';
