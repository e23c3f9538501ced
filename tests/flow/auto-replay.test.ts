import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { createWorker, type StormguardWorker } from '../../src/bullmq/worker.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import type { DeadLetterRecord } from '../../src/runtime/contracts.js';
import { AUTO_REPLAY_BY } from '../../src/runtime/replay/auto-replay.js';
import type { ReplayRun } from '../../src/runtime/replay-runs.js';
import type { WorkerEvents } from '../../src/runtime/worker-events.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

const N = 30;

let server: TestRedis;
let fleets = 0;
beforeAll(async () => {
  server = await TestRedis.start();
});
afterAll(async () => {
  await server?.close();
});

/**
 * A queue, its dependency `search` (down until `recover()`, every job's side effect counted) and the
 * workers of its fleet, each started as a process would start one: its own connections and stores.
 */
function fleet() {
  const queue = `auto-replay-${fleets}`;
  const prefix = `auto-${fleets++}`;
  let down = true;
  const done = new Map<string, number>();
  const deadLettered: string[] = [];
  let replayed = 0;
  const clients: Redis[] = [];
  const workers: StormguardWorker<{ doc: string }>[] = [];
  const producer = new Queue(queue, { connection: server.connection });
  const probe = new Redis(server.connection);
  const store = new RedisDeadLetterStore({ redis: probe, prefix });
  const runs = new RedisReplayRunStore({ redis: probe, prefix });
  return {
    queue,
    done,
    deadLettered,
    store,
    runs,
    producer,
    replayed: () => replayed,
    recover() {
      down = false;
    },
    autoRuns: async (): Promise<ReplayRun[]> =>
      (await runs.listRuns()).filter((r) => r.createdBy === AUTO_REPLAY_BY),
    start(): StormguardWorker<{ doc: string }> {
      const redis = new Redis({ ...server.connection, maxRetriesPerRequest: null });
      clients.push(redis);
      const worker = createWorker<{ doc: string }>(
        queue,
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
          deadLetters: new RedisDeadLetterStore({ redis, prefix }),
          // No floor: while the dependency fails, every retry is denied (budget-exhausted)…
          budget: new RetryBudget({
            store: new RedisBudgetStore({ redis, prefix }),
            ratio: 0.1,
            windowMs: 2_000,
            minAllowance: 0,
          }),
          // …until the breaker opens, after which jobs are dead-lettered breaker-open.
          breaker: new CircuitBreaker({
            store: new RedisBreakerStore({ redis, prefix }),
            consecutiveFailures: 4,
            coolDownMs: 1_000,
            halfOpenProbes: 1,
            successesToClose: 1,
          }),
          dependencies: { index: 'search' },
          autoReplay: {
            runs: new RedisReplayRunStore({ redis, prefix }),
            ratePerSecond: 50,
            pollMs: 100,
            leaseMs: 3_000,
          },
        },
      );
      worker.events.on('dead-letter', (e) => deadLettered.push(e.reason));
      worker.events.on('replayed', () => {
        replayed++;
      });
      workers.push(worker);
      return worker;
    },
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      await producer.obliterate({ force: true }).catch(() => {});
      await producer.close();
      probe.disconnect();
      for (const c of clients) c.disconnect();
    },
  };
}

/** Adds N jobs while the dependency is down and waits until the outage has dead-lettered each. */
async function deadLetterEveryJob(f: ReturnType<typeof fleet>): Promise<void> {
  await f.producer.addBulk(
    Array.from({ length: N }, (_, i) => ({ name: 'index', data: { doc: `doc-${i}` } })),
  );
  await waitFor(() => f.deadLettered.length >= N, 20_000, 'every job to be dead-lettered during the outage');
}

describe('automatic replay (createWorker autoReplay)', () => {
  it('puts back every job an outage dead-lettered once the dependency is healthy, each once, across two workers', async () => {
    const f = fleet();
    try {
      f.start();
      f.start();
      await deadLetterEveryJob(f);
      expect(new Set(f.deadLettered)).toEqual(new Set(['budget-exhausted', 'breaker-open']));
      // The workers' automatic replay holds them while the dependency is unhealthy.
      await waitFor(
        async () => (await f.autoRuns()).some((r) => r.waitingFor === 'search'),
        10_000,
        'an automatic replay to wait for search',
      );
      expect(f.done.size).toBe(0);

      f.recover();
      await waitFor(() => f.done.size === N, 30_000, 'every job to complete after the recovery');
      await waitFor(async () => (await f.store.count(f.queue)) === 0, 10_000, 'the dead letters to be gone');
      // Every side effect once, and every dead letter filed was replayed once: never by both workers.
      expect([...f.done.values()]).toEqual(Array.from({ length: N }, () => 1));
      expect(f.replayed()).toBe(f.deadLettered.length);
      const autoRuns = await f.autoRuns();
      expect(autoRuns.filter((r) => r.status === 'done' || r.status === 'cancelled')).toHaveLength(
        autoRuns.length,
      );
      expect(autoRuns.reduce((sum, r) => sum + r.moved, 0)).toBe(f.replayed());
      expect(autoRuns.flatMap((r) => r.failures)).toEqual([]);
      // A job replayed into a breaker still half-open may be dead-lettered again, and replayed again:
      // each record once, each job's work once.
      expect(f.replayed()).toBeGreaterThanOrEqual(N);
      const completed = await f.producer.getJobs(['completed']);
      expect(new Set(completed.map((j) => (j.data as { doc: string }).doc)).size).toBe(N);
    } finally {
      await f.close();
    }
  }, 90_000);

  it('a worker that stops while its run waits hands it over: another worker goes on with the same run', async () => {
    const f = fleet();
    try {
      const first = f.start();
      await deadLetterEveryJob(f);
      let waiting: ReplayRun | undefined;
      await waitFor(
        async () => {
          waiting = (await f.autoRuns()).find((r) => r.waitingFor === 'search' && r.status === 'running');
          return waiting !== undefined;
        },
        10_000,
        'the first worker to hold a run waiting for search',
      );
      const second = f.start();
      await first.close();
      // Stopped, the first worker handed the run back rather than leaving it held for its lease.
      const handedBack = await f.runs.getRun(waiting!.id);
      expect(handedBack).toMatchObject({ status: 'pending', stoppedBecause: 'interrupted' });

      f.recover();
      await waitFor(() => f.done.size === N, 30_000, 'every job to complete after the recovery');
      const finished = await f.runs.getRun(waiting!.id);
      expect(finished).toMatchObject({ status: 'done', failed: 0 });
      expect(finished?.owner).not.toBe(waiting?.owner);
      expect([...f.done.values()]).toEqual(Array.from({ length: N }, () => 1));
      await waitFor(async () => (await f.store.count(f.queue)) === 0, 10_000, 'the dead letters to be gone');
      expect(f.replayed()).toBe(f.deadLettered.length);
      await second.close();
    } finally {
      await f.close();
    }
  }, 90_000);

  it('leaves a dead letter whose lineage went round maxReplays times, tells it once, and replays the others; a manual replay still takes it', async () => {
    const queue = `auto-replay-cap-${fleets}`;
    const prefix = `auto-cap-${fleets++}`;
    const redis = new Redis({ ...server.connection, maxRetriesPerRequest: null });
    const store = new RedisDeadLetterStore({ redis, prefix });
    const runs = new RedisReplayRunStore({ redis, prefix });
    const record = (doc: string, replays: number): DeadLetterRecord => ({
      queue,
      jobId: doc,
      createdAt: Date.now(),
      name: 'index',
      data: { doc },
      opts: {},
      reason: 'budget-exhausted',
      detail: 'the search retry budget is exhausted',
      lastError: {
        name: 'TransientError',
        message: 'search is down',
        classification: { retryable: true, reason: 'transient-error' },
      },
      attemptsMade: 1,
      dependency: 'search',
      deadLetteredAt: Date.now(),
      replays,
    });
    const file = async (doc: string, replays: number) =>
      (await store.file(record(doc, replays), { attempts: 1, deferrals: 0 }, 60_000)).id;
    const done = new Map<string, number>();
    const skipped: WorkerEvents['auto-replay-skipped'][] = [];
    const worker = createWorker<{ doc: string }>(
      queue,
      async (job, ctx) =>
        ctx.call('search', async () => {
          done.set(job.data.doc, (done.get(job.data.doc) ?? 0) + 1);
        }),
      {
        connection: redis,
        policy: definePolicy({ name: 'capped', maxAttempts: 3, backoff: { type: 'fixed', delayMs: 20 } }),
        deadLetters: store,
        breaker: new CircuitBreaker({ store: new RedisBreakerStore({ redis, prefix }) }),
        dependencies: { index: 'search' },
        autoReplay: { runs, maxReplays: 2, ratePerSecond: 50, pollMs: 100, leaseMs: 3_000 },
      },
    );
    worker.events.on('auto-replay-skipped', (e) => skipped.push(e));
    const dlq = deadLetterQueue(queue, { store, connection: redis });
    try {
      const capped = await file('capped', 2);
      await file('fresh', 0);
      await file('once-more', 1);
      await waitFor(() => done.size === 2, 20_000, 'the records under the cap to be replayed');
      expect(Object.fromEntries(done)).toEqual({ fresh: 1, 'once-more': 1 });
      expect(skipped).toEqual([
        {
          queue,
          task: 'index',
          reason: 'budget-exhausted',
          dependency: 'search',
          recordId: capped,
          jobId: 'capped',
          replays: 2,
          maxReplays: 2,
        },
      ]);
      // A later record makes the workers look again (and past the capped one): still told once, never run.
      await file('later', 0);
      await waitFor(() => done.has('later'), 20_000, 'the later record to be replayed');
      expect(skipped).toHaveLength(1);
      expect(done.has('capped')).toBe(false);
      expect((await store.list(queue, { limit: 10 })).records.map((r) => r.id)).toEqual([capped]);
      const automatic = (await runs.listRuns()).filter((r) => r.createdBy === AUTO_REPLAY_BY);
      // Runs hold the records under the cap only, and none is created for the capped record alone.
      expect(automatic.reduce((sum, r) => sum + r.total, 0)).toBe(3);
      expect(automatic.filter((r) => r.total === 0)).toEqual([]);

      // A person's replay has no cap.
      const report = await dlq.replay({ reason: 'budget-exhausted' });
      expect(report.moved.map((m) => m.id)).toEqual([capped]);
      await waitFor(() => done.has('capped'), 20_000, 'the capped record, replayed by hand, to run');
    } finally {
      await worker.close();
      await dlq.close();
      redis.disconnect();
    }
  }, 60_000);
});
