/**
 * A real fleet: two stormguard workers (real BullMQ, real redis-server, the Redis budget store) against a
 * dependency that is down for most jobs, each exporting its metrics on its own /metrics. The scrapes must
 * add up to what happened: attempts, retries, denials and dead letters.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { createMetrics, type MetricsServer, serveMetrics } from '../../src/prometheus/index.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';
import { parseExposition, type Sample, sampleValue } from './exposition.js';

const QUEUE = 'fleet-index';
const OK_JOBS = 6;
const FAILING_JOBS = 14;
const MAX_ATTEMPTS = 3;
const RETRY_DELAY_MS = 50;
const MIN_ALLOWANCE = 4;

let server: TestRedis;
let redis: Redis;
const open: { close(): Promise<unknown> }[] = [];

beforeAll(async () => {
  // Wake an idle Redis often so 50 ms retries are not held back by its 100 ms default tick.
  server = await TestRedis.start({ args: ['--hz', '100'] });
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  for (const thing of open.reverse()) await thing.close();
  redis.disconnect();
  await server.close();
});

const fleetDeadLetters = new MemoryDeadLetterStore();

/** One worker process of the fleet: its own budget client, worker, registry and /metrics server. */
async function startMember(calls: { n: number }) {
  const budget = new RetryBudget({
    store: new RedisBudgetStore({ redis, prefix: 'fleet' }),
    ratio: 0.2,
    minAllowance: MIN_ALLOWANCE,
    // Long enough that the whole run is one window: every figure is then exact.
    windowMs: 60_000,
    flushIntervalMs: 50,
  });
  const policy = definePolicy({
    name: 'fleet',
    maxAttempts: MAX_ATTEMPTS,
    backoff: { type: 'fixed', delayMs: RETRY_DELAY_MS },
    jitter: 'none',
  });
  const worker = createWorker<{ ok: boolean }>(
    QUEUE,
    async (job, ctx) => {
      calls.n++;
      await ctx.call('search', () => {
        if (!job.data.ok) throw Object.assign(new Error('search: connect ETIMEDOUT'), { code: 'ETIMEDOUT' });
        return 'indexed';
      });
    },
    {
      connection: server.connection,
      policy,
      // The fleet's members share one process here, so one memory store stands for the fleet's store.
      deadLetters: fleetDeadLetters,
      budget,
      concurrency: 3,
      dependencies: { 'index-document': 'search' },
    },
  );
  const registry = new Registry();
  const metrics = createMetrics({ registry });
  metrics.observeWorker(worker);
  metrics.observeBudget(budget);
  const dlq = deadLetterQueue(QUEUE, { store: fleetDeadLetters, connection: server.connection });
  metrics.observeDeadLetters(dlq);
  const http: MetricsServer = await serveMetrics({ port: 0, host: '127.0.0.1', registry });
  open.push(budget, dlq, worker, http);
  return { budget, worker, dlq, url: http.url };
}

async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

/** A counter summed over the fleet's scrapes (0 where no worker has the series). */
function fleetTotal(scrapes: Sample[][], name: string, labels: Record<string, string> = {}): number {
  return scrapes.reduce((sum, s) => sum + (sampleValue(s, name, labels) ?? 0), 0);
}

describe('metrics of a real worker fleet against a failing dependency', () => {
  it('add up, over both /metrics endpoints, to the attempts, retries, denials and dead letters that happened', async () => {
    const calls = { n: 0 };
    const members = [await startMember(calls), await startMember(calls)];
    const queue = new Queue(QUEUE, { connection: server.connection });
    const dlq = deadLetterQueue(QUEUE, { store: fleetDeadLetters, connection: server.connection });
    open.push(queue, dlq);
    let completed = 0;
    for (const m of members) m.worker.events.on('completed', () => completed++);

    await queue.addBulk([
      ...Array.from({ length: OK_JOBS }, (_, i) => ({
        name: 'index-document',
        data: { ok: true },
        opts: { jobId: `ok-${i}` },
      })),
      ...Array.from({ length: FAILING_JOBS }, (_, i) => ({
        name: 'index-document',
        data: { ok: false },
        opts: { jobId: `down-${i}` },
      })),
    ]);
    await waitFor(
      async () => completed === OK_JOBS && (await dlq.count()) === FAILING_JOBS,
      20_000,
      'every job to complete or be dead-lettered',
    );
    for (const m of members) await m.budget.flush();

    // What happened, from the sources of truth: the processor, the budget store and the dead-letter queue.
    const store = await members[0]!.budget.state('search');
    const exhausted = await dlq.count({ reason: 'budget-exhausted' });
    const maxedOut = await dlq.count({ reason: 'max-attempts' });
    expect(exhausted + maxedOut).toBe(FAILING_JOBS);
    expect(store.allowance).toBe(MIN_ALLOWANCE);
    expect(store.spent).toBe(MIN_ALLOWANCE);
    expect(store.denied).toBe(exhausted);

    const scrapes = await Promise.all(members.map((m) => scrape(m.url)));
    const job = { queue: QUEUE, task: 'index-document', dependency: 'search' };

    expect(fleetTotal(scrapes, 'stormguard_attempts_total', job)).toBe(calls.n);
    expect(fleetTotal(scrapes, 'stormguard_successes_total', job)).toBe(OK_JOBS);
    expect(fleetTotal(scrapes, 'stormguard_jobs_completed_total', job)).toBe(OK_JOBS);
    expect(fleetTotal(scrapes, 'stormguard_retries_total', job)).toBe(store.spent);
    expect(fleetTotal(scrapes, 'stormguard_budget_grants_total', { dependency: 'search' })).toBe(store.spent);
    expect(
      fleetTotal(scrapes, 'stormguard_budget_denials_total', { dependency: 'search', mode: 'enforce' }),
    ).toBe(store.denied);
    expect(store.denied).toBeGreaterThan(0);
    // Every failed attempt became exactly one of: a retry, a denial, or a dead letter for max attempts.
    expect(calls.n - OK_JOBS).toBe(store.spent + store.denied + maxedOut);
    expect(fleetTotal(scrapes, 'stormguard_dead_letters_total', { ...job, reason: 'budget-exhausted' })).toBe(
      exhausted,
    );
    expect(fleetTotal(scrapes, 'stormguard_dead_letters_total', job)).toBe(FAILING_JOBS);
    expect(fleetTotal(scrapes, 'stormguard_retry_delay_seconds_count', job)).toBe(store.spent);
    expect(fleetTotal(scrapes, 'stormguard_retry_delay_seconds_sum', job)).toBeCloseTo(
      (store.spent * RETRY_DELAY_MS) / 1000,
      9,
    );

    // Every worker reports the fleet's budget and dead-letter queue, not its own slice.
    for (const s of scrapes) {
      const dep = { dependency: 'search' };
      expect(sampleValue(s, 'stormguard_budget_allowance', dep)).toBe(MIN_ALLOWANCE);
      expect(sampleValue(s, 'stormguard_budget_spent', dep)).toBe(store.spent);
      expect(sampleValue(s, 'stormguard_budget_denied', dep)).toBe(store.denied);
      expect(sampleValue(s, 'stormguard_budget_successes', dep)).toBe(OK_JOBS);
      expect(sampleValue(s, 'stormguard_budget_ratio', dep)).toBe(0.2);
      expect(sampleValue(s, 'stormguard_budget_degraded', dep)).toBe(0);
      expect(sampleValue(s, 'stormguard_dead_letter_queue_depth', { queue: QUEUE })).toBe(FAILING_JOBS);
    }

    // A replay from one member's dead-letter queue is counted there, by the reason the jobs had.
    const report = await members[0]!.dlq.replay({ reason: 'budget-exhausted', limit: 3 });
    expect(report.moved).toHaveLength(3);
    const after = await scrape(members[0]!.url);
    expect(
      sampleValue(after, 'stormguard_replays_total', {
        queue: QUEUE,
        task: 'index-document',
        reason: 'budget-exhausted',
      }),
    ).toBe(3);
  });
});
