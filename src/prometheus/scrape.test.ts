import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseExposition, sampleValue } from '../../tests/prometheus/exposition.js';
import type { BudgetEvents, BudgetSnapshot } from '../budget/types.js';
import { FakeClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import type { BreakerStateEvents, BreakerStateName } from '../metrics/sources.js';
import type { WorkerEvents } from '../runtime/worker-events.js';
import { createMetrics } from './create-metrics.js';

function snapshot(dependency: string, over: Partial<BudgetSnapshot> = {}): BudgetSnapshot {
  return {
    dependency,
    allowance: 40,
    spent: 12,
    denied: 3,
    successes: 200,
    windowMs: 60_000,
    degraded: false,
    ...over,
  };
}

/** A budget whose state is whatever the test puts in `states`; counts the reads. */
function fakeBudget(states: Map<string, BudgetSnapshot | 'hang' | 'fail'>) {
  const reads: string[] = [];
  return {
    reads,
    events: new EventBus<BudgetEvents>(),
    dependencies: async () => [...states.keys()],
    state: (dependency: string): Promise<BudgetSnapshot> => {
      reads.push(dependency);
      const s = states.get(dependency);
      if (s === 'hang') return new Promise(() => {});
      if (s === 'fail' || s === undefined) return Promise.reject(new Error('connection refused'));
      return Promise.resolve(s);
    },
  };
}

function setup() {
  const registry = new Registry();
  const errors: unknown[] = [];
  const metrics = createMetrics({ registry, readTimeoutMs: 50, onError: (e) => errors.push(e) });
  return { registry, metrics, errors, scrape: async () => parseExposition(await registry.metrics()) };
}

describe('budget gauges', () => {
  it("report each dependency's fleet-wide state, read once per scrape", async () => {
    const { metrics, scrape } = setup();
    const budget = { ...fakeBudget(new Map([['search', snapshot('search')]])), ratio: 0.2, minAllowance: 10 };
    metrics.observeBudget(budget);
    const s = await scrape();
    const dep = { dependency: 'search' };
    expect(sampleValue(s, 'stormguard_budget_allowance', dep)).toBe(40);
    expect(sampleValue(s, 'stormguard_budget_spent', dep)).toBe(12);
    expect(sampleValue(s, 'stormguard_budget_denied', dep)).toBe(3);
    expect(sampleValue(s, 'stormguard_budget_successes', dep)).toBe(200);
    expect(sampleValue(s, 'stormguard_budget_window_seconds', dep)).toBe(60);
    expect(sampleValue(s, 'stormguard_budget_degraded', dep)).toBe(0);
    expect(sampleValue(s, 'stormguard_budget_ratio', dep)).toBe(0.2);
    expect(sampleValue(s, 'stormguard_budget_min_allowance', dep)).toBe(10);
    expect(budget.reads).toEqual(['search']);
  });

  it('follow the store between scrapes, including dependencies that appear', async () => {
    const { metrics, scrape } = setup();
    const states = new Map([['search', snapshot('search')]]);
    metrics.observeBudget(fakeBudget(states), { listIntervalMs: 0 });
    await scrape();
    states.set('search', snapshot('search', { spent: 40, degraded: true }));
    states.set('mail', snapshot('mail', { allowance: 10 }));
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_budget_spent', { dependency: 'search' })).toBe(40);
    expect(sampleValue(s, 'stormguard_budget_degraded', { dependency: 'search' })).toBe(1);
    expect(sampleValue(s, 'stormguard_budget_allowance', { dependency: 'mail' })).toBe(10);
  });

  it('answer within the read timeout when the store hangs, reporting the dependency as degraded', async () => {
    const { metrics, scrape, errors } = setup();
    const states = new Map<string, BudgetSnapshot | 'hang' | 'fail'>([['search', snapshot('search')]]);
    metrics.observeBudget(fakeBudget(states));
    await scrape();
    states.set('search', 'hang');
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_budget_allowance', { dependency: 'search' })).toBeUndefined();
    expect(sampleValue(s, 'stormguard_budget_degraded', { dependency: 'search' })).toBe(1);
    expect(sampleValue(s, 'stormguard_budget_state_errors_total')).toBe(1);
    expect(String(errors[0])).toMatch(/budget state of search did not answer within \d+ms/);
  });

  it('list the store at most every listIntervalMs, and a failed listing marks nothing degraded', async () => {
    const clock = new FakeClock(0);
    const registry = new Registry();
    const errors: unknown[] = [];
    const metrics = createMetrics({ registry, readTimeoutMs: 50, clock, onError: (e) => errors.push(e) });
    const states = new Map<string, BudgetSnapshot | 'hang' | 'fail'>([['search', snapshot('search')]]);
    const budget = fakeBudget(states);
    let listings = 0;
    const list = budget.dependencies;
    budget.dependencies = () => {
      listings++;
      return list();
    };
    metrics.observeBudget(budget, { listIntervalMs: 60_000 });
    const scrape = async () => parseExposition(await registry.metrics());
    await scrape();
    states.set('mail', snapshot('mail'));
    let s = await scrape();
    expect(listings).toBe(1);
    expect(sampleValue(s, 'stormguard_budget_allowance', { dependency: 'mail' })).toBeUndefined();
    clock.advance(60_000);
    s = await scrape();
    expect(listings).toBe(2);
    expect(sampleValue(s, 'stormguard_budget_allowance', { dependency: 'mail' })).toBe(40);

    budget.dependencies = () => Promise.reject(new Error('ECONNREFUSED'));
    clock.advance(60_000);
    s = await scrape();
    expect(sampleValue(s, 'stormguard_budget_degraded', { dependency: 'search' })).toBe(0);
    expect(sampleValue(s, 'stormguard_budget_state_errors_total')).toBe(1);
    expect(String(errors.at(-1))).toContain('ECONNREFUSED');
  });

  it('report configured dependencies before the budget has shown any', async () => {
    const { metrics, scrape } = setup();
    const budget = fakeBudget(new Map([['search', snapshot('search')]]));
    budget.dependencies = async () => [];
    metrics.observeBudget(budget, { dependencies: ['search'], listIntervalMs: Number.POSITIVE_INFINITY });
    expect(sampleValue(await scrape(), 'stormguard_budget_allowance', { dependency: 'search' })).toBe(40);
  });

  it('stop being read once the observation is disposed', async () => {
    const { metrics, scrape } = setup();
    const budget = fakeBudget(new Map([['search', snapshot('search')]]));
    metrics.observeBudget(budget).dispose();
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_budget_allowance')).toBeUndefined();
    expect(budget.reads).toEqual([]);
  });
});

describe('dead-letter depth', () => {
  it('is read from the queue at scrape time, and left out when the queue does not answer', async () => {
    const { metrics, scrape } = setup();
    let depth: number | 'hang' = 7;
    metrics.observeDeadLetters(
      { count: () => (depth === 'hang' ? new Promise(() => {}) : Promise.resolve(depth)) },
      { queue: 'index' },
    );
    expect(sampleValue(await scrape(), 'stormguard_dead_letter_queue_depth', { queue: 'index' })).toBe(7);
    depth = 9;
    expect(sampleValue(await scrape(), 'stormguard_dead_letter_queue_depth', { queue: 'index' })).toBe(9);
    depth = 'hang';
    expect(
      sampleValue(await scrape(), 'stormguard_dead_letter_queue_depth', { queue: 'index' }),
    ).toBeUndefined();
  });
});

describe('replays', () => {
  it('are counted once for a dead-letter queue observed both as a worker and as a queue', async () => {
    const { metrics, scrape } = setup();
    const dlq = { sourceQueue: 'index', count: async () => 0, events: new EventBus<WorkerEvents>() };
    const asWorker = metrics.observeWorker(dlq);
    const sub = metrics.observeDeadLetters(dlq);
    dlq.events.emit('replayed', { queue: 'index', task: 'index-document', reason: 'budget-exhausted' });
    const labels = { queue: 'index', task: 'index-document', reason: 'budget-exhausted' };
    expect(sampleValue(await scrape(), 'stormguard_replays_total', labels)).toBe(1);
    // Either observation keeps counting while the other is gone; none once both are.
    asWorker.dispose();
    dlq.events.emit('replayed', { queue: 'index', task: 'index-document', reason: 'budget-exhausted' });
    expect(sampleValue(await scrape(), 'stormguard_replays_total', labels)).toBe(2);
    sub.dispose();
    dlq.events.emit('replayed', { queue: 'index', task: 'index-document', reason: 'budget-exhausted' });
    expect(sampleValue(await scrape(), 'stormguard_replays_total', labels)).toBe(2);
  });
});

describe('breaker state', () => {
  it('shows the current state as 1 and counts transitions', async () => {
    const { metrics, scrape } = setup();
    const events = new EventBus<BreakerStateEvents>();
    metrics.observeBreaker({ events });
    events.emit('state-change', { dependency: 'search', from: 'closed', to: 'open' });
    let s = await scrape();
    expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'search', state: 'open' })).toBe(1);
    expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'search', state: 'closed' })).toBe(0);
    expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'search', state: 'half-open' })).toBe(0);
    events.emit('state-change', { dependency: 'search', from: 'open', to: 'half-open' });
    events.emit('state-change', { dependency: 'search', from: 'half-open', to: 'closed' });
    s = await scrape();
    expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'search', state: 'closed' })).toBe(1);
    expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'search', state: 'open' })).toBe(0);
    expect(sampleValue(s, 'stormguard_breaker_transitions_total', { dependency: 'search' })).toBe(3);
    expect(
      sampleValue(s, 'stormguard_breaker_transitions_total', {
        dependency: 'search',
        from: 'closed',
        to: 'open',
      }),
    ).toBe(1);
  });

  it('reads the fleet-wide state from the breaker for every dependency the metrics have seen', async () => {
    const { metrics, scrape } = setup();
    const states = new Map<string, BreakerStateName>([
      ['search', 'open'],
      ['mail', 'closed'],
    ]);
    const breaker = {
      events: new EventBus<BreakerStateEvents>(),
      state: async (dependency: string) => ({ state: states.get(dependency) ?? ('closed' as const) }),
    };
    const worker = new EventBus<WorkerEvents>();
    metrics.observeWorker({ events: worker });
    metrics.observeBreaker(breaker, { dependencies: ['mail'] });
    // Another worker opened the breaker: this process saw no transition, only a success before it.
    worker.emit('success', { queue: 'index', task: 'index-document', dependency: 'search' });
    breaker.events.emit('rejected', { dependency: 'search', state: 'open' });
    const s = await scrape();
    expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'search', state: 'open' })).toBe(1);
    expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'mail', state: 'closed' })).toBe(1);
    expect(sampleValue(s, 'stormguard_breaker_state', { dependency: 'mail', state: 'open' })).toBe(0);
    expect(sampleValue(s, 'stormguard_breaker_transitions_total')).toBeUndefined();
    expect(
      sampleValue(s, 'stormguard_breaker_rejections_total', { dependency: 'search', state: 'open' }),
    ).toBe(1);
  });
});
