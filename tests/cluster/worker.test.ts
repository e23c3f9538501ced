/**
 * createWorker on a real Redis Cluster: BullMQ under a hash-tagged prefix, stormguard's budget, attempt
 * state and dead letters on the same cluster under their own tags.
 */
import { Queue } from 'bullmq';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { isInvalidInputError } from '../../src/errors/invalid-input-error.js';
import { PermanentError } from '../../src/errors/permanent-error.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { TestRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/redis-server.js';

let cluster: TestRedisCluster;
let redis: Cluster;

beforeAll(async () => {
  cluster = await TestRedisCluster.start({ replicas: 1 });
  // BullMQ's blocking commands must never time out on the client side.
  redis = cluster.client({ redisOptions: { maxRetriesPerRequest: null } });
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.close();
});

const policy = definePolicy({
  name: 'fast',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: 20 },
  jitter: 'none',
});

describe('createWorker on a Redis Cluster', () => {
  it.each([['bull'], ['{}bull'], ['bull{']])(
    'refuses the BullMQ prefix %j, naming one that works',
    (prefix) => {
      let error: unknown;
      try {
        createWorker('mail', async () => 'ok', { connection: redis, policy, workerOptions: { prefix } });
      } catch (e) {
        error = e;
      }
      expect(isInvalidInputError(error)).toBe(true);
      expect((error as Error).message).toMatch(/^createWorker: BullMQ prefix .* use the prefix "\{bull\}"/);
    },
  );

  it('refuses the default prefix on a Cluster', () => {
    expect(() => createWorker('mail', async () => 'ok', { connection: redis, policy })).toThrow(
      /createWorker: BullMQ prefix "bull" with queue "mail" has no hash tag.*use the prefix "\{bull\}"/,
    );
  });

  it('with a hash-tagged prefix completes, retries and dead-letters jobs; nothing is left unfinished', async () => {
    const prefix = '{bull}';
    const queueName = 'cluster-mixed';
    const deadLetters = new RedisDeadLetterStore({ redis, prefix: 'cw' });
    const budget = new RetryBudget({
      store: new RedisBudgetStore({ redis, prefix: 'cw' }),
      minAllowance: 1_000,
    });
    const queue = new Queue(queueName, { connection: redis, prefix });
    const tries = new Map<string, number>();
    const worker = createWorker(
      queueName,
      async (job) => {
        const n = (tries.get(job.id!) ?? 0) + 1;
        tries.set(job.id!, n);
        if (job.name === 'permanent') throw new PermanentError('bad input');
        if (job.name === 'flaky' && n === 1) throw new TransientError('search timed out');
        return 'ok';
      },
      { connection: redis, policy, deadLetters, budget, concurrency: 8, workerOptions: { prefix } },
    );
    const errors: Error[] = [];
    worker.on('error', (error) => errors.push(error));
    try {
      const names = Array.from({ length: 60 }, (_, i) => ['ok', 'flaky', 'permanent'][i % 3]!);
      await queue.addBulk(names.map((name, i) => ({ name, data: { i } })));
      await waitFor(
        async () => (await queue.getCompletedCount()) === 40 && (await deadLetters.count(queueName)) === 20,
        20_000,
        '40 completions and 20 dead letters',
      );
      const counts = await queue.getJobCounts('wait', 'delayed', 'active', 'prioritized');
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(0);
      expect(await deadLetters.count(queueName, { reason: 'permanent' })).toBe(20);
      // Each flaky job ran twice: one retry granted by the budget, then success.
      expect([...tries.entries()].filter(([, n]) => n === 2)).toHaveLength(20);
      // An unmapped task is its own dependency: the flaky jobs' 20 retries were charged to 'flaky'.
      expect((await budget.state('flaky')).spent).toBe(20);
      expect((await budget.state('permanent')).spent).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await worker.close();
      await queue.close();
      await budget.close();
    }
  });
});
