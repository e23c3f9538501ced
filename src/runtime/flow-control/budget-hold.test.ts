import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../../breaker/memory-store.js';
import { FakeClock } from '../../common/clock.js';
import { EventBus } from '../../common/events.js';
import { TransientError } from '../../errors/transient-error.js';
import { definePolicy } from '../../policy/define-policy.js';
import type { JobEvents } from '../events.js';
import type { JobHandle } from '../job-handle.js';
import { JobRuntime, type RuntimeBudget } from '../job-runtime.js';
import { MemoryDeadLetterStore } from '../memory-dead-letter-store.js';
import { budgetUnderFlow } from './budget-hold.js';
import { FlowController } from './controller.js';
import { MemoryFlowStore } from './memory-store.js';

const T0 = 1_000_000;
const WINDOW_MS = 10_000;

const policy = definePolicy({
  name: 'budget-hold',
  maxAttempts: 5,
  backoff: { type: 'fixed', delayMs: 100 },
  jitter: 'none',
  maxAgeMs: 60_000,
});

/** A budget that refuses every retry (one `windowMs` of 10 s) and counts what it is asked. */
function refusingBudget(onExhausted?: 'dead-letter' | 'defer'): RuntimeBudget & { asked: number } {
  return {
    asked: 0,
    ...(onExhausted ? { onExhausted } : {}),
    trySpend(this: { asked: number }) {
      this.asked++;
      return { granted: false, windowMs: WINDOW_MS };
    },
    recordSuccess: () => {},
    flush: async () => {},
  };
}

function job(overrides: Partial<JobHandle> = {}): JobHandle & { moves: number[] } {
  const moves: number[] = [];
  return {
    ref: { queue: 'index', jobId: '7', createdAt: T0 },
    name: 'index',
    data: { docId: 7 },
    opts: {},
    starts: 1,
    finishes: 0,
    stalls: 0,
    moveToDelayed: async (dueAtMs) => {
      moves.push(dueAtMs);
    },
    moves,
    ...overrides,
  };
}

/**
 * A job runtime with flow control (`mode`), a retry budget that refuses every retry and a closed breaker,
 * on one fake clock; the random source is 0, so a deferral waits exactly one budget window.
 */
function setup(
  options: { mode?: 'enforce' | 'shadow' | 'none'; onExhausted?: 'dead-letter' | 'defer' } = {},
) {
  const clock = new FakeClock(T0);
  const store = new MemoryDeadLetterStore({ clock });
  const flowStore = new MemoryFlowStore({ clock });
  const breaker = new CircuitBreaker({ store: new MemoryBreakerStore({ clock }), clock });
  const reported: string[] = [];
  const mode = options.mode ?? 'enforce';
  const flow =
    mode === 'none'
      ? undefined
      : new FlowController(
          { store: flowStore, mode, stateCacheMs: 0 },
          { queue: 'index', breaker, clock, emit: () => {}, internalError: (e) => reported.push(String(e)) },
        );
  const budget = refusingBudget(options.onExhausted);
  const events = new EventBus<JobEvents>();
  const seen: string[] = [];
  events.on('retry', (e) => seen.push(`retry ${e.cause} ${e.delayMs} charged=${e.chargesAttempt}`));
  events.on('dead-letter', (e) => seen.push(`dead-letter ${e.reason}`));
  events.on('refused', (e) => seen.push(`refused by ${e.by}`));
  const runtime = new JobRuntime({
    queue: 'index',
    policy,
    dependencies: {},
    attempts: store,
    deadLetters: store,
    clock,
    random: () => 0,
    events,
    internalError: (e) => reported.push(String(e)),
    maxStalls: 1,
    budget,
    breaker,
    flow,
  });
  return { clock, store, flowStore, budget, runtime, seen, reported };
}

const failing = async (): Promise<never> => Promise.reject(new TransientError('search answered 503'));

describe('flow control holds what the retry budget refuses (enforce mode)', () => {
  it('defers a transient failure the budget refuses, charging no retry, whatever onExhausted says', async () => {
    const { runtime, store, budget, seen } = setup({ onExhausted: 'dead-letter' });
    const first = job();
    expect(await runtime.run(first, failing)).toEqual({ type: 'delayed' });
    expect(first.moves).toEqual([T0 + 10_000]);
    expect(budget.asked).toBe(1);
    expect(seen).toEqual(['retry budget-deferred 10000 charged=false']);
    expect(store.count('index')).toBe(0);
    expect(store.readAttempts(first.ref)).toMatchObject({ attempts: 0, deferrals: 1 });
    expect(store.readAttempts(first.ref)).not.toHaveProperty('granted');
  });

  it('defers again, without running the job, when admission finds the budget still refusing', async () => {
    const { runtime, store, clock, seen } = setup({ onExhausted: 'dead-letter' });
    // Deferred once (never granted), it comes back: it must ask admission before it runs.
    store.writeAttempts(job().ref, { attempts: 1, deferrals: 1, firstFailedAt: T0 }, 60_000);
    clock.advance(10_000);
    let ran = 0;
    const back = job({ starts: 2 });
    expect(
      await runtime.run(back, async () => {
        ran++;
      }),
    ).toEqual({ type: 'delayed' });
    expect(ran).toBe(0);
    expect(back.moves).toEqual([T0 + 20_000]);
    expect(seen).toEqual(['refused by budget', 'retry budget-deferred 10000 charged=false']);
    expect(store.count('index')).toBe(0);
    expect(store.readAttempts(back.ref)).toMatchObject({ attempts: 1, deferrals: 2 });
  });

  it('dead-letters budget-exhausted once the next deferral would pass the job’s maxAge', async () => {
    const { runtime, store, clock, seen } = setup({ onExhausted: 'dead-letter' });
    clock.advance(55_000); // 5 s of its 60 s maxAge left, less than one budget window
    expect(await runtime.run(job(), failing)).toMatchObject({
      type: 'dead-lettered',
      reason: 'budget-exhausted',
    });
    expect(seen).toEqual(['dead-letter budget-exhausted']);
    expect(store.count('index', { reason: 'budget-exhausted' })).toBe(1);
  });

  it('keeps the budget’s onExhausted in shadow mode, without flow control, and with flow control switched off', async () => {
    for (const variant of ['shadow', 'none', 'off'] as const) {
      const { runtime, store, flowStore, seen } = setup({
        mode: variant === 'off' ? 'enforce' : variant,
        onExhausted: 'dead-letter',
      });
      if (variant === 'off') flowStore.setOff(true);
      expect(await runtime.run(job(), failing), variant).toMatchObject({
        type: 'dead-lettered',
        reason: 'budget-exhausted',
      });
      expect(seen, variant).toEqual(['dead-letter budget-exhausted']);
      expect(store.count('index', { reason: 'budget-exhausted' }), variant).toBe(1);
    }
  });

  it('holds when the kill switch cannot be read, and reports it', async () => {
    const { runtime, flowStore, seen, reported } = setup({ onExhausted: 'dead-letter' });
    flowStore.switchedOff = () => {
      throw new Error('flow store down');
    };
    expect(await runtime.run(job(), failing)).toEqual({ type: 'delayed' });
    expect(seen).toEqual(['retry budget-deferred 10000 charged=false']);
    expect(reported).toEqual(['Error: flow store down']);
  });
});

describe('budgetUnderFlow', () => {
  it('asks flow control only on a refusal, and says defer only after one it holds', async () => {
    let asked = 0;
    const holder = {
      holdsBudgetDenials: async () => {
        asked++;
        return true;
      },
    };
    let granted = true;
    const budget = { trySpend: () => ({ granted, windowMs: WINDOW_MS }) };
    const gate = budgetUnderFlow(budget, holder);
    expect(await gate.trySpend('search')).toEqual({ granted: true, windowMs: WINDOW_MS });
    expect([asked, gate.onExhausted]).toEqual([0, undefined]);
    granted = false;
    expect(await gate.trySpend('search')).toEqual({ granted: false, windowMs: WINDOW_MS });
    expect([asked, gate.onExhausted]).toEqual([1, 'defer']);
    expect(budgetUnderFlow(budget, undefined)).toBe(budget);
  });
});
