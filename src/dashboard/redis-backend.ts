import { Queue } from 'bullmq';
import { bullmqReplayQueue } from '../bullmq/bullmq-replay-queue.js';
import { DEFAULT_PREFIX } from '../common/keys.js';
import { RedisAuditLog } from '../redis/audit-log.js';
import { RedisBreakerStore } from '../redis/breaker-store.js';
import { RedisBudgetStore } from '../redis/budget-store.js';
import { RedisDeadLetterStore } from '../redis/dead-letter-store.js';
import { RedisFlowStore } from '../redis/flow-store.js';
import { RedisReplayRunStore } from '../redis/replay-run-store.js';
import type { RedisClient } from '../redis/scripts.js';
import { flowStatusOf } from '../status/flow.js';
import type { ConsoleBackend } from './backend.js';

/**
 * Options of {@link redisConsoleBackend}.
 *
 * @example
 * const options: RedisConsoleBackendOptions = { redis: new Redis(url), prefix: 'shop', bullPrefix: 'bull' };
 */
export interface RedisConsoleBackendOptions {
  /** Your ioredis client (single node or Cluster); `close()` leaves it open. */
  redis: RedisClient;
  /** stormguard's key prefix. Default `stormguard`. */
  prefix?: string;
  /** BullMQ's key prefix of the queues replayed jobs go back to. Default `bull`. */
  bullPrefix?: string;
}

/**
 * The console's view of a fleet whose state is in Redis: budgets, breakers, dead letters and flow control
 * (paused workers, parked jobs) under `prefix`, replays onto the BullMQ queues under `bullPrefix`.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { createDashboard, redisConsoleBackend } from 'stormguard/dashboard';
 *
 * const handler = createDashboard({ backend: redisConsoleBackend({ redis: new Redis(process.env.REDIS_URL) }) });
 */
export function redisConsoleBackend(options: RedisConsoleBackendOptions): ConsoleBackend {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const budgets = new RedisBudgetStore({ redis: options.redis, prefix });
  const breakers = new RedisBreakerStore({ redis: options.redis, prefix });
  const deadLetters = new RedisDeadLetterStore({ redis: options.redis, prefix });
  const queues = new Map<string, Queue>();
  return {
    status: {
      budget: budgets,
      breaker: breakers,
      deadLetters,
      flow: flowStatusOf(new RedisFlowStore({ redis: options.redis, prefix })),
    },
    deadLetters,
    breakers,
    runs: new RedisReplayRunStore({ redis: options.redis, prefix }),
    audit: new RedisAuditLog({ redis: options.redis, prefix }),
    replayQueue(queue) {
      let opened = queues.get(queue);
      if (!opened) {
        opened = new Queue(queue, {
          connection: options.redis as never,
          prefix: options.bullPrefix ?? 'bull',
        });
        queues.set(queue, opened);
      }
      return bullmqReplayQueue(opened);
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
      queues.clear();
    },
  };
}
