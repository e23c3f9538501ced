/**
 * One consumer process of the RabbitMQ game day: `createConsumer` on the game day's queue, each message
 * recording its ledger side effect once (an idempotency guard on the key) and then indexing it in
 * `search`, under a fleet retry budget (Redis A, the one the game day kills) and a fleet circuit breaker;
 * dead letters, attempt states and idempotency claims on Redis B. The whole message also runs under the
 * guard (`idempotency.key`), so a replayed copy of finished work repeats nothing.
 *
 * Spoken to over IPC (tests/helpers/ipc-process.ts): answers `up` once loaded; `start` (with its settings)
 * builds the consumer and answers `ready` once it consumes; `status`
 * → `status` (in flight, and what its events counted); `exit` closes it gracefully and answers `closed`.
 *
 *   node --import tsx tests/amqp/gameday/consumer-process.ts   (then `start` with GameDayConsumerSettings)
 */
import { Redis } from 'ioredis';
import { createConsumer } from '../../../src/amqp/index.js';
import { CircuitBreaker } from '../../../src/breaker/circuit-breaker.js';
import { RetryBudget } from '../../../src/budget/retry-budget.js';
import { TransientError } from '../../../src/errors/transient-error.js';
import { definePolicy } from '../../../src/policy/define-policy.js';
import { RedisBreakerStore } from '../../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../../src/redis/dead-letter-store.js';
import { redisIdempotencyGuard } from '../../../src/redis/idempotency-guard.js';
import { reply, serve } from '../../helpers/ipc-process.js';
import type { GameDayConsumerSettings } from './settings.js';

/** Everything one consumer holds, built by `start`. */
interface Running {
  consumer: ReturnType<typeof createConsumer>;
  budget: RetryBudget;
  budgetRedis: Redis;
  storesRedis: Redis;
  counted: {
    degraded: number;
    recovered: number;
    completed: number;
    retries: number;
    deadLetters: Record<string, number>;
  };
}

function start(settings: GameDayConsumerSettings): Running {
  const { prefix } = settings;

  const budgetRedis = new Redis({ host: '127.0.0.1', port: settings.budgetRedisPort, lazyConnect: false });
  const storesRedis = new Redis({
    host: '127.0.0.1',
    port: settings.storesRedisPort,
    maxRetriesPerRequest: null,
  });
  // The budget's Redis is killed on purpose: ioredis reconnects by itself, the budget degrades meanwhile.
  budgetRedis.on('error', () => {});
  storesRedis.on('error', (error) => process.stderr.write(`stores redis: ${error}\n`));

  const budget = new RetryBudget({
    store: new RedisBudgetStore({ redis: budgetRedis, prefix }),
    ratio: settings.budget.ratio,
    minAllowance: settings.budget.minAllowance,
    windowMs: settings.budget.windowMs,
    log: false,
  });
  const breaker = new CircuitBreaker({
    store: new RedisBreakerStore({ redis: storesRedis, prefix }),
    ...settings.breaker,
  });
  const deadLetters = new RedisDeadLetterStore({ redis: storesRedis, prefix });
  const guard = redisIdempotencyGuard({
    redis: storesRedis,
    prefix,
    ttlMs: 3_600_000,
    // A claim left by a killed process blocks its key this long: short, so the game day stays short.
    inFlightTtlMs: settings.inFlightTtlMs,
  });

  const policy = definePolicy({
    name: 'gameday',
    maxAttempts: 4,
    backoff: { type: 'exponential', baseMs: 200, factor: 2, maxDelayMs: 2_000 },
    jitter: 'full',
    maxAgeMs: '10m',
  });

  const counted = {
    degraded: 0,
    recovered: 0,
    completed: 0,
    retries: 0,
    deadLetters: {} as Record<string, number>,
  };
  budget.events.on('degraded', () => counted.degraded++);
  budget.events.on('recovered', () => counted.recovered++);

  async function call(dependency: 'ledger' | 'search', key: string): Promise<void> {
    const response = await fetch(`${settings.dependencyUrl}/${dependency}?key=${key}&pid=${process.pid}`, {
      signal: AbortSignal.timeout(5_000),
    });
    await response.arrayBuffer();
    if (response.status >= 500) throw new TransientError(`${dependency} answered ${response.status}`);
  }

  const consumer = createConsumer<{ key: string }>(
    settings.queue,
    async (job, ctx) => {
      const { key } = job.json();
      // The side effect of the message: once per key, whatever happens to the message after it.
      await guard.once(`ledger:${key}`, () => ctx.call('ledger', () => call('ledger', key)));
      await ctx.call('search', () => call('search', key));
    },
    {
      connection: settings.amqpUrl,
      policy,
      budget,
      breaker,
      deadLetters,
      dependencies: { index: 'search' },
      concurrency: settings.concurrency,
      idempotency: { guard, key: (job) => `message:${job.json().key}` },
    },
  );
  consumer.events.on('completed', () => counted.completed++);
  consumer.events.on('retry', () => counted.retries++);
  consumer.events.on('dead-letter', (e) => {
    counted.deadLetters[e.reason] = (counted.deadLetters[e.reason] ?? 0) + 1;
  });
  consumer.events.on('error', (error) => {
    if (settings.verbose) process.stderr.write(`consumer ${process.pid}: ${error.message}\n`);
  });
  return { consumer, budget, budgetRedis, storesRedis, counted };
}

let running: Running | undefined;

serve(async (message) => {
  switch (message.type) {
    case 'start':
      running = start(message.settings as GameDayConsumerSettings);
      await running.consumer.ready;
      reply({ type: 'ready', pid: process.pid });
      return;
    case 'status':
      reply({ type: 'status', inFlight: running?.consumer.inFlight ?? 0, ...running?.counted });
      return;
    case 'exit':
      if (running) {
        await running.consumer.close();
        await running.budget.close();
        running.budgetRedis.disconnect();
        await running.storesRedis.quit();
      }
      reply({ type: 'closed', ...running?.counted });
      process.exit(0);
  }
});
reply({ type: 'up' });
