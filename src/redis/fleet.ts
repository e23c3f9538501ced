import type { SharedBreakerStoreSettings } from '../breaker/shared-store.js';
import { DEFAULT_PREFIX } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { closeOnce, type Fleet, fleetStatusSources } from '../status/fleet.js';
import { RedisAuditLog } from './audit-log.js';
import { RedisBreakerStore } from './breaker-store.js';
import { RedisBudgetStore } from './budget-store.js';
import { type RedisConnection, redisClientOf } from './connection.js';
import { RedisDeadLetterStore } from './dead-letter-store.js';
import { RedisFlowStore } from './flow-store.js';
import { RedisReplayRunStore } from './replay-run-store.js';
import type { RedisClient } from './scripts.js';

/**
 * Options of {@link redisFleet}.
 *
 * @example
 * const options: RedisFleetOptions = { redis: 'redis://10.0.0.5:6379', prefix: 'shop' };
 */
export interface RedisFleetOptions {
  /**
   * Your ioredis client (a `Redis` or a `Cluster`), which the fleet never closes; or ioredis options
   * (`{ host, port }`) or a `redis://` URL, from which it opens one client for every store, closed by
   * `close()`.
   */
  redis: RedisConnection;
  /** stormguard's key prefix, shared by every store. Default `stormguard`. */
  prefix?: string;
  /**
   * For status tools: listing budgets and breakers writes nothing, not even the dependency registry's
   * upkeep. Actions (overrides, replays, the kill switch) still write. Default false.
   */
  readOnly?: boolean;
  /** The breaker store's round-trip timeout and fallback (see `RedisBreakerStoreOptions`). */
  breaker?: SharedBreakerStoreSettings;
}

const OPTION_NAMES = {
  redis: true,
  prefix: true,
  readOnly: true,
  breaker: true,
} as const satisfies OptionNames<RedisFleetOptions>;

/**
 * A {@link Fleet} on Redis: its `redis` is the one client every store works on.
 *
 * @example
 * const fleet: RedisFleet = redisFleet({ redis });
 * new Queue('index', { connection: fleet.redis });
 */
export interface RedisFleet extends Fleet {
  readonly backend: 'redis';
  /** The client every store works on (yours, or the one opened from a URL or options). */
  readonly redis: RedisClient;
}

/**
 * Every store of a fleet whose state is in Redis (single node or Cluster), on one client and one prefix:
 * budgets, breakers, dead letters (evictions recorded in the audit log), replay runs, flow control and
 * the audit log, and the fleet-status sources over them. Hand it to `createDashboard`, or read
 * `fleet.status` with `readFleetStatus`.
 *
 * @example
 * import { readFleetStatus } from 'stormguard';
 * import { redisFleet } from 'stormguard/redis';
 *
 * const fleet = redisFleet({ redis: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', prefix: 'shop' });
 * const status = await readFleetStatus(fleet.status);
 * console.log(status.flowControl?.on ? 'flow control on' : 'flow control OFF');
 * await fleet.close();
 */
export function redisFleet(options: RedisFleetOptions): RedisFleet {
  checkOptionNames('redisFleet', options, OPTION_NAMES, {
    connection: 'give the client, ioredis options or a redis:// URL as `redis`',
    schema: 'a PostgreSQL option: use postgresFleet from stormguard/postgres',
  });
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  assertPrefix(prefix);
  const { redis, close } = redisClientOf('redisFleet', options.redis);
  const readOnly = options.readOnly ? { readOnly: true } : {};
  const audit = new RedisAuditLog({ redis, prefix });
  const stores = {
    budget: new RedisBudgetStore({ redis, prefix, ...readOnly }),
    breaker: new RedisBreakerStore({ redis, prefix, ...readOnly, ...options.breaker }),
    deadLetters: new RedisDeadLetterStore({ redis, prefix, audit }),
    flow: new RedisFlowStore({ redis, prefix }),
  };
  return {
    backend: 'redis',
    prefix,
    redis,
    ...stores,
    replayRuns: new RedisReplayRunStore({ redis, prefix }),
    audit,
    status: fleetStatusSources(stores),
    close: closeOnce(close),
  };
}
