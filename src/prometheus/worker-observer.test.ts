import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseExposition, samples, sampleValue } from '../../tests/prometheus/exposition.js';
import type { BudgetEvents, SpendResult } from '../budget/types.js';
import { EventBus } from '../common/events.js';
import type { WorkerEvents } from '../runtime/worker-events.js';
import { createMetrics } from './create-metrics.js';

const job = { queue: 'index', task: 'index-document', dependency: 'search' };
const spend: SpendResult = {
  dependency: 'search',
  allowance: 10,
  spent: 10,
  denied: 1,
  successes: 0,
  windowMs: 60_000,
  degraded: false,
  granted: false,
};

function setup(options: { maxLabelValues?: number } = {}) {
  const registry = new Registry();
  const errors: unknown[] = [];
  const metrics = createMetrics({ registry, onError: (e) => errors.push(e), ...options });
  const worker = new EventBus<WorkerEvents>();
  const budget = new EventBus<BudgetEvents>();
  const sub = metrics.observeWorker({ events: worker });
  metrics.observeBudget({ events: budget, state: () => spend, dependencies: () => [] });
  const scrape = async () => parseExposition(await registry.metrics());
  return { registry, metrics, worker, budget, sub, scrape, errors };
}

describe('worker events', () => {
  it('counts attempts, successes and completions with queue, task and dependency labels', async () => {
    const { worker, scrape } = setup();
    worker.emit('attempt', { ...job, attempt: 1 });
    worker.emit('attempt', { ...job, attempt: 2 });
    worker.emit('success', job);
    worker.emit('completed', { ...job, attempts: 2 });
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_attempts_total', job)).toBe(2);
    expect(sampleValue(s, 'stormguard_successes_total', job)).toBe(1);
    expect(sampleValue(s, 'stormguard_jobs_completed_total', job)).toBe(1);
    expect(sampleValue(s, 'stormguard_job_attempts_count', job)).toBe(1);
    expect(sampleValue(s, 'stormguard_job_attempts_sum', job)).toBe(2);
    expect(sampleValue(s, 'stormguard_job_attempts_bucket', { ...job, le: '1' })).toBe(0);
    expect(sampleValue(s, 'stormguard_job_attempts_bucket', { ...job, le: '2' })).toBe(1);
  });

  it('counts a charged retry once and records its delay in seconds', async () => {
    const { worker, scrape } = setup();
    const retry = { ...job, retry: 1, cause: 'backoff', chargesAttempt: true, errorClass: 'TransientError' };
    worker.emit('retry', { ...retry, delayMs: 2_000 });
    worker.emit('retry', { ...retry, delayMs: 400, cause: 'retry-after' });
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_retries_total', job)).toBe(2);
    expect(sampleValue(s, 'stormguard_retry_delay_seconds_count', job)).toBe(2);
    expect(sampleValue(s, 'stormguard_retry_delay_seconds_sum', job)).toBeCloseTo(2.4, 9);
    expect(sampleValue(s, 'stormguard_retry_delay_seconds_bucket', { ...job, le: '0.5' })).toBe(1);
    expect(sampleValue(s, 'stormguard_retry_delay_seconds_bucket', { ...job, le: '2.5' })).toBe(2);
    expect(sampleValue(s, 'stormguard_deferrals_total')).toBeUndefined();
  });

  it('counts breaker and budget deferrals apart from retries', async () => {
    const { worker, scrape } = setup();
    const base = { ...job, retry: 1, delayMs: 30_000, chargesAttempt: false, errorClass: 'Error' };
    worker.emit('retry', { ...base, cause: 'breaker-open' });
    worker.emit('retry', { ...base, cause: 'budget-deferred' });
    worker.emit('retry', { ...base, cause: 'budget-deferred' });
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_retries_total')).toBeUndefined();
    expect(sampleValue(s, 'stormguard_retry_delay_seconds_count')).toBeUndefined();
    expect(sampleValue(s, 'stormguard_deferrals_total', { ...job, cause: 'breaker-open' })).toBe(1);
    expect(sampleValue(s, 'stormguard_deferrals_total', { ...job, cause: 'budget-deferred' })).toBe(2);
  });

  it('counts dead letters and replays by reason', async () => {
    const { worker, scrape } = setup();
    worker.emit('dead-letter', { ...job, reason: 'budget-exhausted' });
    worker.emit('dead-letter', { ...job, reason: 'budget-exhausted' });
    worker.emit('dead-letter', { ...job, reason: 'max-attempts' });
    worker.emit('replayed', { queue: 'index', task: 'index-document', reason: 'budget-exhausted' });
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_dead_letters_total', { ...job, reason: 'budget-exhausted' })).toBe(2);
    expect(sampleValue(s, 'stormguard_dead_letters_total', { ...job, reason: 'max-attempts' })).toBe(1);
    expect(
      sampleValue(s, 'stormguard_replays_total', {
        queue: 'index',
        task: 'index-document',
        reason: 'budget-exhausted',
      }),
    ).toBe(1);
  });

  it('counts the dead letters automatic replay left for their maxReplays, by queue and reason', async () => {
    const { worker, scrape } = setup();
    const skipped = {
      queue: 'index',
      task: 'index-document',
      dependency: 'search',
      jobId: '7',
      replays: 3,
      maxReplays: 3,
    };
    worker.emit('auto-replay-skipped', { ...skipped, reason: 'budget-exhausted', recordId: '1' });
    worker.emit('auto-replay-skipped', { ...skipped, reason: 'budget-exhausted', recordId: '2' });
    worker.emit('auto-replay-skipped', { ...skipped, reason: 'breaker-open', recordId: '3' });
    const s = await scrape();
    const count = (reason: string) =>
      sampleValue(s, 'stormguard_auto_replay_skipped_total', { queue: 'index', reason });
    expect([count('budget-exhausted'), count('breaker-open')]).toEqual([2, 1]);
  });

  it('counts the writes the queue engine had rolled back, by write and outcome', async () => {
    const { worker, scrape } = setup();
    worker.emit('write-conflict', { queue: 'index', write: 'completion', code: '40P01', again: true });
    worker.emit('write-conflict', { queue: 'index', write: 'completion', code: '40001', again: true });
    worker.emit('write-conflict', { queue: 'index', write: 'completion', code: '40P01', again: false });
    worker.emit('write-conflict', { queue: 'index', write: 'fetch', code: '40P01', again: true });
    const s = await scrape();
    const count = (write: string, outcome: string) =>
      sampleValue(s, 'stormguard_write_conflicts_total', { queue: 'index', write, outcome });
    expect([
      count('completion', 'written-again'),
      count('completion', 'gave-up'),
      count('fetch', 'written-again'),
    ]).toEqual([2, 1, 1]);
  });

  it('reads the calls waiting for a limit at each scrape, and a dependency that drops out reads 0', async () => {
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    let status = [
      { dependency: 'openai', waiting: 3 },
      { dependency: 'crm', waiting: 0 },
    ];
    metrics.observeWorker({
      events: new EventBus<WorkerEvents>(),
      limits: { queue: 'index', status: () => status },
    });
    const waiting = async (dependency: string) =>
      sampleValue(parseExposition(await registry.metrics()), 'stormguard_limit_waiting', {
        queue: 'index',
        dependency,
      });
    expect([await waiting('openai'), await waiting('crm')]).toEqual([3, 0]);
    status = [{ dependency: 'crm', waiting: 5 }];
    expect([await waiting('openai'), await waiting('crm')]).toEqual([0, 5]);
  });

  it("counts the records retention evicted, by queue and by the evicted records' reason", async () => {
    const { worker, scrape } = setup();
    worker.emit('dead-letters-evicted', {
      queue: 'index',
      recordId: '17',
      evicted: { count: 3, reasons: { 'budget-exhausted': 2, permanent: 1 }, limits: { maxCount: 3 } },
    });
    worker.emit('dead-letters-evicted', {
      queue: 'index',
      recordId: '18',
      evicted: { count: 1, reasons: { 'budget-exhausted': 1 }, limits: { maxAgeMs: 1 } },
    });
    const s = await scrape();
    const evicted = (reason: string) =>
      sampleValue(s, 'stormguard_dead_letters_evicted_total', { queue: 'index', reason });
    expect([evicted('budget-exhausted'), evicted('permanent'), evicted('max-attempts')]).toEqual([
      3,
      1,
      undefined,
    ]);
  });

  it('stops counting once the observation is disposed', async () => {
    const { worker, sub, scrape } = setup();
    worker.emit('success', job);
    sub.dispose();
    worker.emit('success', job);
    expect(sampleValue(await scrape(), 'stormguard_successes_total', job)).toBe(1);
  });
});

describe('budget events', () => {
  it('counts denials separately: a denial never moves the retry or grant counters', async () => {
    const { budget, worker, scrape } = setup();
    budget.emit('denied', { ...spend, mode: 'enforce' });
    budget.emit('denied', { ...spend, mode: 'enforce' });
    budget.emit('denied', { ...spend, mode: 'shadow' });
    // What a worker emits after a denial: a dead letter, never a retry.
    worker.emit('dead-letter', { ...job, reason: 'budget-exhausted' });
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_budget_denials_total', { dependency: 'search', mode: 'enforce' })).toBe(
      2,
    );
    expect(sampleValue(s, 'stormguard_budget_denials_total', { dependency: 'search', mode: 'shadow' })).toBe(
      1,
    );
    expect(sampleValue(s, 'stormguard_retries_total')).toBeUndefined();
    expect(sampleValue(s, 'stormguard_budget_grants_total')).toBeUndefined();
  });

  it('counts grants and store outages', async () => {
    const { budget, scrape } = setup();
    budget.emit('granted', { ...spend, granted: true });
    budget.emit('degraded', {
      store: 'budget',
      dependency: 'search',
      error: new Error('ECONNREFUSED'),
      mode: 'local',
      since: 1_000,
    });
    budget.emit('recovered', { store: 'budget', since: 1_000, downForMs: 1_000 });
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_budget_grants_total', { dependency: 'search' })).toBe(1);
    expect(sampleValue(s, 'stormguard_budget_store_outages_total')).toBe(1);
  });
});

describe('label values', () => {
  it('stay bounded: past the limit new values read "other", and unknown reasons read "other"', async () => {
    const { worker, scrape, errors } = setup({ maxLabelValues: 3 });
    for (let i = 0; i < 50; i++) worker.emit('success', { ...job, task: `job-${i}` });
    worker.emit('dead-letter', { ...job, reason: 'boom: connection reset by peer' as 'permanent' });
    worker.emit('retry', {
      ...job,
      retry: 1,
      delayMs: 1,
      chargesAttempt: false,
      cause: 'something new',
      errorClass: 'Error',
    });
    const s = await scrape();
    const tasks = samples(s, 'stormguard_successes_total').map((x) => x.labels.task);
    expect(tasks).toEqual(['job-0', 'job-1', 'job-2', 'other']);
    expect(sampleValue(s, 'stormguard_successes_total', { task: 'other' })).toBe(47);
    expect(samples(s, 'stormguard_dead_letters_total').map((x) => x.labels.reason)).toEqual(['other']);
    expect(samples(s, 'stormguard_deferrals_total').map((x) => x.labels.cause)).toEqual(['other']);
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toContain('label "task" reached 3 distinct values');
  });

  it('never carry an empty value', async () => {
    const { worker, scrape } = setup();
    worker.emit('success', { queue: 'index', task: '', dependency: undefined as unknown as string });
    const [sample] = samples(await scrape(), 'stormguard_successes_total');
    expect(sample?.labels).toEqual({ queue: 'index', task: 'unknown', dependency: 'unknown' });
  });
});

describe('createMetrics', () => {
  it('refuses to register twice on one registry, naming the fix', () => {
    const registry = new Registry();
    createMetrics({ registry });
    expect(() => createMetrics({ registry })).toThrow(/already registered in this registry/);
    expect(() => createMetrics({ registry, prefix: 'other_' })).not.toThrow();
  });

  it('rejects an invalid prefix and label limit', () => {
    expect(() => createMetrics({ registry: new Registry(), prefix: '9x' })).toThrow(/prefix "9x"/);
    expect(() => createMetrics({ registry: new Registry(), maxLabelValues: 0 })).toThrow(/maxLabelValues/);
  });

  it('removes its metrics from the registry when disposed', async () => {
    const { metrics, registry } = setup();
    metrics.dispose();
    expect(await registry.metrics()).toBe('\n');
    expect(() => createMetrics({ registry })).not.toThrow();
  });
});

describe('flow control', () => {
  it("exports the worker's paused and parked gauges at scrape time and counts its holds by kind and mode", async () => {
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    const events = new EventBus<WorkerEvents>();
    let parked = 12;
    metrics.observeWorker({
      events,
      flow: {
        queue: 'index',
        status: () => [{ dependency: 'search', paused: true }],
        dependencies: () => ['crm', 'search'],
        parked: async (dependency) => (dependency === 'crm' ? parked : 0),
      },
    });
    const hold = { queue: 'index', dependency: 'search', forMs: 4_000, reason: 'breaker-open' as const };
    events.emit('flow-hold', { ...hold, kind: 'pause', shadow: false });
    events.emit('flow-hold', { ...hold, kind: 'pause', shadow: false });
    events.emit('flow-hold', { ...hold, dependency: 'crm', kind: 'park', shadow: true });
    const first = parseExposition(await registry.metrics());
    expect(sampleValue(first, 'stormguard_flow_paused', { queue: 'index', dependency: 'search' })).toBe(1);
    expect(sampleValue(first, 'stormguard_flow_paused', { queue: 'index', dependency: 'crm' })).toBe(0);
    expect(sampleValue(first, 'stormguard_flow_parked_jobs', { queue: 'index', dependency: 'crm' })).toBe(12);
    expect(
      sampleValue(first, 'stormguard_flow_holds_total', {
        queue: 'index',
        dependency: 'search',
        kind: 'pause',
        mode: 'enforce',
      }),
    ).toBe(2);
    expect(
      sampleValue(first, 'stormguard_flow_holds_total', {
        queue: 'index',
        dependency: 'crm',
        kind: 'park',
        mode: 'shadow',
      }),
    ).toBe(1);
    parked = 0;
    const second = parseExposition(await registry.metrics());
    expect(sampleValue(second, 'stormguard_flow_parked_jobs', { queue: 'index', dependency: 'crm' })).toBe(0);
  });
});
