/**
 * Fleet-wide limits in real BullMQ workers on Redis: the in-flight cap held exactly under concurrency,
 * nothing dead-lettered for waiting, no attempt used by a hold; a 429 with Retry-After holding the
 * dependency for every worker.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { StormguardProcessor } from '../../src/bullmq/worker.js';
import type { StormguardWorkerOptions } from '../../src/bullmq/worker-options.js';
import type { EventBus } from '../../src/common/events.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import type { WorkerEvents } from '../../src/runtime/worker-events.js';
import { recordEvents, TestBed } from '../e2e/harness.js';
import { waitFor } from '../helpers/redis-server.js';
import { takeSlotsElsewhere } from './slots-elsewhere.js';

const bed = TestBed.perFile({ backend: 'redis' });

const policy = definePolicy({
  name: 'limits',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: 50 },
  jitter: 'none',
  maxAgeMs: '2m',
});

/** A dependency that counts its own concurrent calls (each takes a few ms of I/O). */
class Dependency {
  constructor(readonly callMs = 5) {}
  running = 0;
  maxRunning = 0;
  calls = 0;
  readonly startedAt: number[] = [];
  async call(): Promise<void> {
    this.calls++;
    this.running++;
    this.startedAt.push(Date.now());
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      await new Promise((resolve) => setTimeout(resolve, this.callMs));
    } finally {
      this.running--;
    }
  }
}

function flowStore(): RedisFlowStore {
  return new RedisFlowStore({ redis: bed.redis, prefix: `limits-${randomUUID().slice(0, 8)}` });
}

function limitedWorker(queueName: string, api: Dependency, options: Partial<StormguardWorkerOptions>) {
  return bed.worker<{ n: number }>(
    queueName,
    async (_job, ctx) => {
      await ctx.call('api', () => api.call());
    },
    { policy, concurrency: 20, ...options },
  );
}

/** Collects the workers' `limit-wait` events. */
function waits(...workers: Array<{ events: { on: EventBus<WorkerEvents>['on'] } }>) {
  const seen: WorkerEvents['limit-wait'][] = [];
  for (const worker of workers) worker.events.on('limit-wait', (e) => seen.push(e));
  return seen;
}

describe('limits in a BullMQ worker', () => {
  it('never lets more than maxInFlight calls run at once across two workers, holds without an attempt, and dead-letters nothing', async () => {
    const { queueName, queue, dlq } = bed.queues('in-flight');
    const store = flowStore();
    const api = new Dependency(20);
    // A mixed queue (no mapping): calls wait at ctx.call, and jobs held past 30 ms are delayed.
    const options: Partial<StormguardWorkerOptions> = {
      limits: { api: { maxInFlight: 5 } },
      limitsOptions: { store, maxPaceWaitMs: 30 },
    };
    const workers = [limitedWorker(queueName, api, options), limitedWorker(queueName, api, options)];
    const logs = workers.map((w) => recordEvents(w.events));
    const seen = waits(...workers);
    for (let n = 0; n < 200; n++) await queue.add('call', { n });
    const completed = () => logs.reduce((sum, log) => sum + log.count('completed'), 0);
    await waitFor(() => completed() === 200, 30_000, 'every job to complete');

    expect(api.maxRunning).toBeLessThanOrEqual(5);
    expect(api.maxRunning).toBe(5);
    expect(api.calls).toBe(200);
    expect(seen.some((e) => e.outcome === 'held')).toBe(true);
    expect(seen.some((e) => e.outcome === 'granted')).toBe(true);
    // A hold is no attempt: every job completed on its first, nothing was retried or dead-lettered.
    for (const log of logs) {
      expect(log.count('retry')).toBe(0);
      expect(log.of('completed').every((e) => e.attempts === 1)).toBe(true);
    }
    expect(await dlq.count()).toBe(0);
    for (const worker of workers) await worker.close();
    expect((await store.limitState('api')).inFlight).toBe(0);
  });

  it.each([
    { concurrency: 1, jobs: 40 },
    { concurrency: 20, jobs: 200 },
  ])(
    'costs at most one round trip to the store per call on the success path (concurrency $concurrency)',
    async ({ concurrency, jobs }) => {
      const { queueName, queue } = bed.queues('round-trips');
      const store = flowStore();
      let exchanges = 0;
      const exchange = store.exchangeLimits.bind(store);
      store.exchangeLimits = (dependency, request) => {
        exchanges++;
        return exchange(dependency, request);
      };
      const api = new Dependency();
      const worker = limitedWorker(queueName, api, {
        concurrency,
        limits: { api: { maxInFlight: 1_000 } },
        limitsOptions: { store },
      });
      const log = recordEvents(worker.events);
      for (let n = 0; n < jobs; n++) await queue.add('call', { n });
      await waitFor(() => log.count('completed') === jobs, 30_000, 'every job to complete');
      await worker.close();
      // Each call takes a slot and gives it back: the give-back rides with the next call's take, and
      // concurrent calls share exchanges. The last give-back may go alone.
      expect(api.calls).toBe(jobs);
      expect(exchanges).toBeLessThanOrEqual(jobs + 1);
      console.log(
        `limits, concurrency ${concurrency}: ${exchanges} exchanges for ${api.calls} calls (${(exchanges / api.calls).toFixed(2)} per call)`,
      );
    },
  );

  it('shares limits through a RedisFlowStore on the worker’s own connection when no store is given', async () => {
    const { queueName, queue, dlq } = bed.queues('zero-config');
    const dependency = `api-${randomUUID().slice(0, 8)}`;
    const api = new Dependency();
    const worker = bed.worker<{ n: number }>(
      queueName,
      async (_job, ctx) => {
        await ctx.call(dependency, () => api.call());
      },
      { policy, concurrency: 10, limits: { [dependency]: { maxInFlight: 2 } } },
    );
    const log = recordEvents(worker.events);
    for (let n = 0; n < 30; n++) await queue.add('call', { n });
    await waitFor(() => log.count('completed') === 30, 30_000, 'every job to complete');
    expect(api.maxRunning).toBe(2);
    // The default store: prefix `stormguard`, where a fleet's other tools look.
    const shared = new RedisFlowStore({ redis: bed.redis });
    expect((await shared.limitState(dependency)).declared).toEqual({ maxInFlight: 2 });
    await worker.close();
    expect((await shared.limitState(dependency)).inFlight).toBe(0);
    expect(await dlq.count()).toBe(0);
  });

  it('takes the slot of a job’s known dependency before it starts, pauses the queue when held, and gives unused slots back', async () => {
    const { queueName, queue, dlq } = bed.queues('up-front');
    const store = flowStore();
    const api = new Dependency();
    let skipped = 0;
    const worker = bed.worker<{ n: number }>(
      queueName,
      async (job, ctx) => {
        // Every fifth job finds nothing to do: its slot goes back unused.
        if (job.data.n % 5 === 0) {
          skipped++;
          return;
        }
        await ctx.call('api', () => api.call());
      },
      {
        policy,
        concurrency: 20,
        dependencies: { call: 'api' },
        limits: { api: { maxInFlight: 3 } },
        // No wait before the start beyond maxPaceWaitMs: a job the cap keeps pauses the queue.
        limitsOptions: { store, maxPaceWaitMs: 20, maxStartWaitMs: 0 },
      },
    );
    const log = recordEvents(worker.events);
    const seen = waits(worker);
    for (let n = 0; n < 100; n++) await queue.add('call', { n });
    await waitFor(() => log.count('completed') === 100, 30_000, 'every job to complete');

    // The job's own slot covered its one call: never more than 3 at once, each call one slot.
    expect(api.maxRunning).toBeLessThanOrEqual(3);
    expect(api.calls + skipped).toBe(100);
    expect(seen.some((e) => e.outcome === 'held')).toBe(true);
    expect(log.count('retry')).toBe(0);
    expect(await dlq.count()).toBe(0);
    await worker.close();
    expect((await store.limitState('api')).inFlight).toBe(0);
  });

  it('a job of the queue’s own dependency waits in the worker for its slot, never put back; a close or a pause ends the wait', async () => {
    const { queueName, queue, dlq } = bed.queues('start-wait');
    const store = flowStore();
    const api = new Dependency(20);
    const options: Partial<StormguardWorkerOptions> = {
      dependencies: { call: 'api' },
      limits: { api: { maxInFlight: 3 } },
      // Calls mid-job would be held after 20 ms; a job waiting to start waits up to maxStartWaitMs.
      limitsOptions: { store, maxPaceWaitMs: 20, maxStartWaitMs: 600_000 },
    };
    const worker = limitedWorker(queueName, api, options);
    const log = recordEvents(worker.events);
    const seen = waits(worker);
    for (let n = 0; n < 60; n++) await queue.add('call', { n });
    await waitFor(() => log.count('completed') === 60, 30_000, 'every job to complete');
    expect(api.maxRunning).toBeLessThanOrEqual(3);
    expect(seen.filter((e) => e.outcome === 'granted').length).toBeGreaterThan(0);
    expect(seen.filter((e) => e.outcome === 'held')).toEqual([]);
    await worker.close();

    // Every slot taken elsewhere for 10 minutes: a new worker's jobs wait to start, and its close does not
    // wait for them. They go back to the queue as they were, none failed or dead-lettered.
    const elsewhere = await takeSlotsElsewhere(store, 'api', 3);
    const waiting = limitedWorker(queueName, api, options);
    const waitingSeen = waits(waiting);
    for (let n = 0; n < 5; n++) await queue.add('call', { n });
    // Active in BullMQ, waiting in the worker: its limits' status (the waiting gauge) counts them.
    const waitingNow = () => waiting.limits?.status().find((s) => s.dependency === 'api')?.waiting;
    await waitFor(() => waitingNow() === 5, 10_000, 'five jobs waiting to start');
    expect(await queue.getActiveCount()).toBe(5);
    await waiting.close();
    expect(waitingSeen.map((e) => e.outcome)).toEqual(Array(5).fill('held'));
    expect(api.calls).toBe(60);
    const counts = await queue.getJobCounts('active', 'completed', 'failed');
    expect(counts).toEqual({ active: 0, completed: 60, failed: 0 });
    const back = await queue.getJobs(['wait', 'prioritized', 'delayed']);
    expect(back.map((job) => job.attemptsMade)).toEqual(Array(5).fill(0));
    expect(await dlq.count()).toBe(0);

    // A pause does not wait for them either; once the slots are free, a resume runs them all.
    const paused = limitedWorker(queueName, api, options);
    const pausedSeen = waits(paused);
    await waitFor(
      () => paused.limits?.status().find((s) => s.dependency === 'api')?.waiting === 5,
      10_000,
      'the five jobs waiting to start again',
    );
    await paused.pause();
    expect(pausedSeen.map((e) => e.outcome)).toEqual(Array(5).fill('held'));
    expect(await queue.getActiveCount()).toBe(0);
    await elsewhere.giveBack();
    const pausedLog = recordEvents(paused.events);
    await paused.resume();
    await waitFor(
      () => pausedLog.count('completed') === 5,
      10_000,
      'the five jobs to complete after the resume',
    );
    expect(api.calls).toBe(65);
    await paused.close();
    expect(await dlq.count()).toBe(0);
  });

  it('a job name the dependencies mapping leaves out takes no slot of the mapped dependency, so its pause holds it not', async () => {
    const { queueName, queue, dlq } = bed.queues('unmapped');
    const store = flowStore();
    await store.overrideLimits('api', { paused: true, reason: 'test: api paused', by: 'test' });
    const api = new Dependency();
    const ran: string[] = [];
    const worker = bed.worker<{ n: number }>(
      queueName,
      async (job, ctx) => {
        ran.push(job.name);
        if (job.name === 'call') await ctx.call('api', () => api.call());
      },
      {
        policy,
        concurrency: 2,
        dependencies: { call: 'api' },
        limits: { api: { maxInFlight: 3 } },
        limitsOptions: { store, maxPaceWaitMs: 20 },
      },
    );
    const log = recordEvents(worker.events);
    await queue.add('call', { n: 1 });
    await queue.add('mail', { n: 2 });
    // 'mail' is its own dependency: the pause of 'api' does not hold it.
    await waitFor(() => log.count('completed') === 1, 15_000, 'the unmapped job to complete');
    expect(ran).toContain('mail');
    expect(api.calls).toBe(0);
    await store.overrideLimits('api', undefined);
    await waitFor(() => log.count('completed') === 2, 15_000, 'the mapped job to complete once resumed');
    expect(api.calls).toBe(1);
    expect(log.count('retry')).toBe(0);
    expect(await dlq.count()).toBe(0);
    await worker.close();
  });

  it('a 429 with Retry-After holds the dependency for every worker; the job retries after the hold, with an attempt', async () => {
    const { queueName, queue, dlq } = bed.queues('retry-after');
    const store = flowStore();
    const api = new Dependency();
    let answered429 = false;
    const options = {
      policy: definePolicy({
        name: 'limits-retry-after',
        maxAttempts: 3,
        backoff: { type: 'fixed', delayMs: 50 },
        jitter: 'none',
        maxAgeMs: '2m',
        // Past 500 ms the hold is cut there and the dependency marked down; a limited dependency's job
        // still waits as asked instead of being dead-lettered.
        retryAfter: { maxMs: '500ms', onExceeded: 'dead-letter' },
      }),
      concurrency: 5,
      limits: { api: { maxInFlight: 5 } },
      // A short ramp after the hold, so the test stays short.
      limitsOptions: { store, stateCacheMs: 50, slowStartMs: 1_000, floorPerSecond: 5 },
    } satisfies Partial<StormguardWorkerOptions>;
    const processor: StormguardProcessor<{ n: number }> = async (job, ctx) => {
      await ctx.call('api', async () => {
        if (job.data.n === 0 && !answered429) {
          answered429 = true;
          throw Object.assign(new Error('429 Too Many Requests'), {
            status: 429,
            headers: { 'retry-after': '1' },
          });
        }
        await api.call();
      });
    };
    const workers = [bed.worker(queueName, processor, options), bed.worker(queueName, processor, options)];
    const holds: WorkerEvents['limit-hold'][] = [];
    const retries: WorkerEvents['retry'][] = [];
    let heldAt = 0;
    for (const worker of workers) {
      worker.events.on('limit-hold', (e) => {
        heldAt = Date.now();
        holds.push(e);
      });
      worker.events.on('retry', (e) => retries.push(e));
    }
    const logs = workers.map((w) => recordEvents(w.events));
    await queue.add('call', { n: 0 });
    await waitFor(() => holds.length === 1, 10_000, 'the hold');
    for (let n = 1; n <= 20; n++) await queue.add('call', { n });
    const completed = () => logs.reduce((sum, log) => sum + log.count('completed'), 0);
    await waitFor(() => completed() === 21, 30_000, 'every job to complete');

    expect(holds).toEqual([
      { queue: queueName, dependency: 'api', forMs: 500, reason: 'retry-after', capped: true },
    ]);
    expect((await store.read('api')).down).toBe(true);
    // No call started while the hold lasted (from one stateCacheMs after it was recorded).
    const during = api.startedAt.filter((t) => t > heldAt + 50 && t < heldAt + 450);
    expect(during).toEqual([]);
    // The job that got the 429 used an attempt and waited as the server asked.
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ chargesAttempt: true, cause: 'retry-after' });
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(1_000);
    expect(await dlq.count()).toBe(0);
  });
});
