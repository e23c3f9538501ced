/**
 * The four verifications of a retry budget, end to end: a real queue backend (redis-server, or PostgreSQL),
 * real BullMQ, the backend's budget store,
 * windows of one to two seconds.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/redis-server.js';
import { expectNothingLeft, recordEvents, TestBed, timeoutError } from './harness.js';
import { definePolicy, planForWindow, RetryBudget } from './stormguard.js';

const bed = TestBed.perFile();

function budgetFor(windowMs: number, extra: { ratio?: number; minAllowance?: number } = {}) {
  const budget = new RetryBudget({
    store: bed.budgetStore(),
    ratio: extra.ratio ?? 0.2,
    minAllowance: extra.minAllowance ?? 10,
    windowMs,
    flushIntervalMs: 50,
    // Degrading to the local fallback is tested elsewhere; here a loaded test machine must not trigger it.
    timeoutMs: 2_000,
  });
  return bed.track(budget);
}

describe('retry budget and ceiling, verified end to end', () => {
  it('1. ceiling honours the window: a deterministic failure reaches the dead-letter queue within 10 % of the window', async () => {
    // A window long enough that 10 % of it (400 ms) covers each retry's pick-up latency (BullMQ's delayed
    // set, a busy machine running test files side by side) summed over the attempts.
    const plan = planForWindow(
      4_000,
      { type: 'exponential', baseMs: 100, factor: 2, maxDelayMs: 10_000 },
      { fit: true },
    );
    const policy = definePolicy({
      name: 'fitted',
      maxAttempts: plan.maxAttempts,
      backoff: plan.backoff,
      jitter: 'none',
    });
    const { queueName, queue, dlq } = bed.queues('ceiling');
    const worker = bed.worker(
      queueName,
      async (_job, ctx) => {
        await ctx.call('search', () => {
          throw timeoutError('search: connect ETIMEDOUT');
        });
      },
      { policy, budget: budgetFor(2_000) },
    );
    const log = recordEvents(worker.events);
    const job = await queue.add('index', { docId: 1 });
    await waitFor(
      () => log.count('dead-letter') === 1,
      2 * plan.windowMs + 5_000,
      'the job to be dead-lettered',
    );

    const record = await dlq.get(job.id as string);
    expect(record).toMatchObject({
      reason: 'max-attempts',
      attemptsMade: plan.maxAttempts,
      dependency: 'search',
    });
    const gapMs = (record?.deadLetteredAt as number) - (record?.firstFailedAt as number);
    expect(Math.abs(gapMs - plan.windowMs)).toBeLessThanOrEqual(0.1 * plan.windowMs);
    expect(log.of('retry').map((e) => e.delayMs)).toEqual(plan.delaysMs);
  });

  it('2. budget trips under systemic failure: 1 000 jobs, retries plateau at the allowance, the DLQ fills, the delayed set stays flat', async () => {
    const windowMs = 1_000;
    const budget = budgetFor(windowMs);
    const policy = definePolicy({
      name: 'storm',
      maxAttempts: 5,
      backoff: { type: 'exponential', baseMs: 100, factor: 2, maxDelayMs: 1_000 },
      jitter: 'none',
    });
    const { queueName, queue, dlq } = bed.queues('storm');
    const worker = bed.worker(
      queueName,
      async (_job, ctx) => {
        await ctx.call('search', () => {
          throw timeoutError('search: connect ETIMEDOUT');
        });
      },
      { policy, budget, concurrency: 50 },
    );
    const log = recordEvents(worker.events);
    // The store's own view of each grant: retries spent in the sliding window (Redis time) and the allowance.
    const granted: { atMs: number; spent: number; allowance: number; degraded: boolean }[] = [];
    budget.events.on('granted', (e) =>
      granted.push({ atMs: Date.now(), spent: e.spent, allowance: e.allowance, degraded: e.degraded }),
    );
    // Counted as they happen: the store's own count is of its sliding window, which a slow machine may
    // have left behind by the time the storm is over.
    let denials = 0;
    budget.events.on('denied', () => {
      denials++;
    });

    let maxDelayed = 0;
    let overspent = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxDelayed = Math.max(maxDelayed, await queue.getDelayedCount());
        const state = await budget.state('search');
        if (state.spent > state.allowance) overspent++;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();

    const total = 1_000;
    const startedAt = Date.now();
    await queue.addBulk(Array.from({ length: total }, (_, i) => ({ name: 'index', data: { docId: i } })));
    await waitFor(() => log.count('dead-letter') === total, 30_000, 'every job to be dead-lettered');
    sampling = false;
    await sampler;

    const elapsedMs = Date.now() - startedAt;

    // Successes are zero, so the allowance is the floor: 10 retries per window, fleet-wide. Every grant
    // fitted in its window, and over the whole storm no more than one floor per window (plus the window
    // the storm started in) was granted.
    expect(granted.length).toBeGreaterThan(0);
    expect(granted.every((g) => !g.degraded && g.allowance === 10 && g.spent <= g.allowance)).toBe(true);
    expect(granted.length).toBeLessThanOrEqual(10 * (Math.ceil(elapsedMs / windowMs) + 1));
    expect(log.of('retry').length).toBe(granted.length);
    expect(overspent).toBe(0);
    const state = await budget.state('search');
    expect(state.allowance).toBe(10);
    expect(state.successes).toBe(0);
    expect(denials).toBeGreaterThan(0);

    const exhausted = await dlq.count({ reason: 'budget-exhausted' });
    expect(exhausted).toBeGreaterThanOrEqual(total - granted.length);
    expect(await dlq.count()).toBe(total);
    // The retry queue did not absorb the storm: the delayed set never held more than the allowance allows.
    expect(maxDelayed).toBeLessThanOrEqual(2 * 10);
    await expectNothingLeft(queue);
  });

  it('3. budget recovers: once the dependency is back, retries are granted again within two windows, with no restart', async () => {
    const windowMs = 1_500;
    const budget = budgetFor(windowMs);
    const policy = definePolicy({
      name: 'recover',
      maxAttempts: 3,
      backoff: { type: 'fixed', delayMs: 50 },
      jitter: 'none',
    });
    const { queueName, queue, dlq } = bed.queues('recover');
    let down = true;
    const failedOnce = new Set<number>();
    const worker = bed.worker<{ docId: number; flaky?: boolean }>(
      queueName,
      async (job, ctx) => {
        await ctx.call('search', () => {
          if (down) throw timeoutError('search: connect ETIMEDOUT');
          // After recovery some calls still fail once (a transient blip): they need a granted retry.
          if (job.data.flaky && !failedOnce.has(job.data.docId)) {
            failedOnce.add(job.data.docId);
            throw timeoutError('search: connect ETIMEDOUT');
          }
        });
      },
      { policy, budget, concurrency: 20 },
    );
    const log = recordEvents(worker.events);

    await queue.addBulk(Array.from({ length: 100 }, (_, i) => ({ name: 'index', data: { docId: i } })));
    await waitFor(() => log.count('dead-letter') === 100, 20_000, 'the outage to dead-letter every job');
    expect(await dlq.count({ reason: 'budget-exhausted' })).toBeGreaterThan(0);
    const deadBefore = log.count('dead-letter');

    down = false;
    const flippedAt = Date.now();
    // Healthy traffic refills the budget: 300 successes allow 60 retries per window.
    await queue.addBulk(
      Array.from({ length: 300 }, (_, i) => ({ name: 'index', data: { docId: 1_000 + i } })),
    );
    await waitFor(
      async () => (await budget.state('search')).allowance >= 50,
      2 * windowMs - (Date.now() - flippedAt),
      'the allowance to rebuild above the floor within two windows',
    );
    // 30 blips: more retries than the floor (10) would ever grant, and every one is granted.
    await queue.addBulk(
      Array.from({ length: 30 }, (_, i) => ({ name: 'index', data: { docId: 2_000 + i, flaky: true } })),
    );
    // How fast 330 jobs run is the machine's business; that none of the blips is dead-lettered is the budget's.
    await waitFor(() => log.count('completed') === 330, 15_000, 'the blips to be retried and complete');
    expect(log.count('dead-letter')).toBe(deadBefore);
    expect(failedOnce.size).toBe(30);
    expect(log.of('retry').filter((e) => e.retry === 1).length).toBeGreaterThanOrEqual(30);
    await expectNothingLeft(queue);
  });

  it('4. a low-traffic queue still retries: one failing job on an idle queue is retried (the floor), not dead-lettered', async () => {
    const budget = budgetFor(1_000);
    const policy = definePolicy({
      name: 'quiet',
      maxAttempts: 4,
      backoff: { type: 'fixed', delayMs: 50 },
      jitter: 'none',
    });
    const { queueName, queue, dlq } = bed.queues('quiet');
    let calls = 0;
    const worker = bed.worker(
      queueName,
      async (_job, ctx) => {
        await ctx.call('crm', () => {
          calls++;
          if (calls <= 2) throw timeoutError('search: connect ETIMEDOUT');
        });
      },
      { policy, budget },
    );
    const log = recordEvents(worker.events);
    await queue.add('sync', { id: 1 });
    await waitFor(() => log.count('completed') === 1, 5_000, 'the job to complete after its retries');
    expect(log.of('retry').map((e) => [e.retry, e.chargesAttempt])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect(log.count('dead-letter')).toBe(0);
    expect(await dlq.count()).toBe(0);
    const state = await budget.state('crm');
    expect(state).toMatchObject({ spent: 2, denied: 0, allowance: 10 });
  });
});
