import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { AUTO_REPLAY_BY } from '../../src/bullmq/auto-replay.js';
import { createWorker, type StormguardWorker } from '../../src/bullmq/worker.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

const QUEUE = 'auto-replay';
const PREFIX = 'auto';
const N = 30;

let server: TestRedis;
beforeAll(async () => {
  server = await TestRedis.start();
});
afterAll(async () => {
  await server?.close();
});

describe('automatic replay (createWorker autoReplay)', () => {
  it('puts back every job an outage dead-lettered once the dependency is healthy, each once, across two workers', async () => {
    // The dependency: down until the test says it is back; every job's side effect counted.
    let down = true;
    const done = new Map<string, number>();
    const clients: Redis[] = [];
    const workers: StormguardWorker<{ doc: string }>[] = [];
    // Two workers, as two processes would be: each with its own connections and stores.
    for (let i = 0; i < 2; i++) {
      const redis = new Redis({ ...server.connection, maxRetriesPerRequest: null });
      clients.push(redis);
      const worker = createWorker<{ doc: string }>(
        QUEUE,
        async (job, ctx) =>
          ctx.call('search', async () => {
            if (down) throw new TransientError('search is down');
            done.set(job.data.doc, (done.get(job.data.doc) ?? 0) + 1);
          }),
        {
          connection: redis,
          policy: definePolicy({
            name: 'outage',
            maxAttempts: 3,
            backoff: { type: 'fixed', delayMs: 20 },
            jitter: 'none',
            whenBreakerOpen: 'dead-letter',
          }),
          deadLetters: new RedisDeadLetterStore({ redis, prefix: PREFIX }),
          // No floor: while the dependency fails, every retry is denied (budget-exhausted)…
          budget: new RetryBudget({
            store: new RedisBudgetStore({ redis, prefix: PREFIX }),
            ratio: 0.1,
            windowMs: 2_000,
            minAllowance: 0,
          }),
          // …until the breaker opens, after which jobs are dead-lettered breaker-open.
          breaker: new CircuitBreaker({
            store: new RedisBreakerStore({ redis, prefix: PREFIX }),
            consecutiveFailures: 4,
            coolDownMs: 1_000,
            halfOpenProbes: 1,
            successesToClose: 1,
          }),
          dependencies: { index: 'search' },
          autoReplay: {
            runs: new RedisReplayRunStore({ redis, prefix: PREFIX }),
            ratePerSecond: 50,
            pollMs: 100,
            leaseMs: 3_000,
          },
        },
      );
      workers.push(worker);
    }
    const deadLettered: string[] = [];
    let replayed = 0;
    for (const w of workers) {
      w.events.on('dead-letter', (e) => deadLettered.push(e.reason));
      w.events.on('replayed', () => {
        replayed++;
      });
    }
    const producer = new Queue(QUEUE, { connection: server.connection });
    const probe = new Redis(server.connection);
    const store = new RedisDeadLetterStore({ redis: probe, prefix: PREFIX });
    const runs = new RedisReplayRunStore({ redis: probe, prefix: PREFIX });
    try {
      await producer.addBulk(
        Array.from({ length: N }, (_, i) => ({ name: 'index', data: { doc: `doc-${i}` } })),
      );
      await waitFor(
        () => deadLettered.length >= N,
        20_000,
        'every job to be dead-lettered during the outage',
      );
      expect(new Set(deadLettered)).toEqual(new Set(['budget-exhausted', 'breaker-open']));
      // The workers' automatic replay holds them while the dependency is unhealthy.
      await waitFor(
        async () =>
          (await runs.listRuns()).some((r) => r.createdBy === AUTO_REPLAY_BY && r.waitingFor === 'search'),
        10_000,
        'an automatic replay to wait for search',
      );
      expect(done.size).toBe(0);

      down = false;
      await waitFor(() => done.size === N, 30_000, 'every job to complete after the recovery');
      await waitFor(async () => (await store.count(QUEUE)) === 0, 10_000, 'the dead letters to be gone');
      // Every side effect once, and every dead letter filed was replayed once: never by both workers.
      expect([...done.values()]).toEqual(Array.from({ length: N }, () => 1));
      expect(replayed).toBe(deadLettered.length);
      const autoRuns = (await runs.listRuns()).filter((r) => r.createdBy === AUTO_REPLAY_BY);
      expect(autoRuns.filter((r) => r.status === 'done' || r.status === 'cancelled')).toHaveLength(
        autoRuns.length,
      );
      expect(autoRuns.reduce((sum, r) => sum + r.moved, 0)).toBe(replayed);
      expect(autoRuns.flatMap((r) => r.failures)).toEqual([]);
      // A job replayed into a breaker still half-open may be dead-lettered again, and replayed again:
      // each record once, each job's work once.
      expect(replayed).toBeGreaterThanOrEqual(N);
      const completed = await producer.getJobs(['completed']);
      expect(new Set(completed.map((j) => (j.data as { doc: string }).doc)).size).toBe(N);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      await producer.obliterate({ force: true }).catch(() => {});
      await producer.close();
      probe.disconnect();
      for (const c of clients) c.disconnect();
    }
  }, 90_000);
});
