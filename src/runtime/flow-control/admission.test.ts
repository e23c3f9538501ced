import { describe, expect, it } from 'vitest';
import { MemoryBudgetStore } from '../../budget/memory-store.js';
import { RetryBudget } from '../../budget/retry-budget.js';
import { FakeClock } from '../../common/clock.js';
import { EventBus } from '../../common/events.js';
import { seededRandom } from '../../common/random.js';
import { TransientError } from '../../errors/transient-error.js';
import { definePolicy } from '../../policy/define-policy.js';
import type { BreakerVerdict, BudgetGate } from '../../policy/types.js';
import type { AttemptState } from '../contracts.js';
import type { JobEvents } from '../events.js';
import type { JobHandle } from '../job-handle.js';
import { JobRuntime, type JobRuntimeSettings } from '../job-runtime.js';
import { MemoryDeadLetterStore } from '../memory-dead-letter-store.js';
import { settle } from '../settle.js';
import { needsAdmission } from './admission.js';

const policy = definePolicy({
  name: 'admission',
  maxAttempts: 4,
  backoff: { type: 'fixed', delayMs: 100 },
  jitter: 'none',
});

describe('needsAdmission', () => {
  it('a first run needs none; a granted retry needs none; anything else asks', () => {
    expect(needsAdmission(undefined, 0)).toBe(false);
    expect(needsAdmission({ attempts: 1, deferrals: 0, granted: true }, 0)).toBe(false);
    expect(needsAdmission({ attempts: 1, deferrals: 1 }, 0)).toBe(true);
    // A state written before grants existed holds none: it asks (fail safe).
    expect(needsAdmission({ attempts: 2, deferrals: 0 }, 0)).toBe(true);
  });

  it('a stall since the state was written used the grant up; a stalled first run ran once already', () => {
    expect(needsAdmission({ attempts: 1, deferrals: 0, granted: true }, 1)).toBe(true);
    expect(needsAdmission({ attempts: 1, deferrals: 0, granted: true, stalls: 1 }, 1)).toBe(false);
    expect(needsAdmission(undefined, 1)).toBe(true);
  });
});

describe('grants in settle', () => {
  const classification = { retryable: true, reason: 'network' };
  const job = {
    ref: { queue: 'index', jobId: '7', createdAt: 0 },
    name: 'search',
    data: {},
    opts: {},
    starts: 1,
    dependency: 'search',
    lastError: { name: 'Error', message: 'down' },
    replays: 0,
  };
  const retry = (cause: 'backoff' | 'breaker-open', chargesAttempt: boolean) =>
    ({ action: 'retry', delayMs: 100, retry: 1, chargesAttempt, cause, classification }) as const;

  it('a retry decide granted after asking the budget carries the grant; one the open breaker held back does not', () => {
    expect(settle({ attempts: 0, deferrals: 0 }, retry('backoff', true), 0, job).state.granted).toBe(true);
    expect(
      settle({ attempts: 0, deferrals: 0 }, retry('breaker-open', true), 0, job).state.granted,
    ).toBeUndefined();
  });

  it('a breaker refusal keeps the grant of the run it held back: a first run, or a granted retry', () => {
    expect(settle({ attempts: 0, deferrals: 0 }, retry('breaker-open', false), 0, job).state.granted).toBe(
      true,
    );
    const granted = { attempts: 1, deferrals: 0, firstFailedAt: 0, granted: true as const };
    expect(settle(granted, retry('breaker-open', false), 0, job).state.granted).toBe(true);
    const deferred = { attempts: 1, deferrals: 1, firstFailedAt: 0 };
    expect(settle(deferred, retry('breaker-open', false), 0, job).state.granted).toBeUndefined();
  });
});

/** A budget that answers from a script and counts what it is asked. */
class ScriptedBudget implements BudgetGate {
  asked = 0;
  constructor(
    public answers: boolean[],
    readonly onExhausted: 'dead-letter' | 'defer' = 'defer',
  ) {}
  trySpend() {
    this.asked++;
    return { granted: this.answers.shift() ?? true, windowMs: 1_000 };
  }
  recordSuccess() {}
  async flush() {}
}

function handle(overrides: Partial<JobHandle> = {}): JobHandle & { moves: number[] } {
  const moves: number[] = [];
  return {
    ref: { queue: 'index', jobId: '7', createdAt: 0 },
    name: 'search',
    data: {},
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

function setup(settings: Partial<JobRuntimeSettings> = {}) {
  const clock = new FakeClock(10_000);
  const store = new MemoryDeadLetterStore({ clock });
  const events = new EventBus<JobEvents>();
  const log: string[] = [];
  events.on('refused', (e) => log.push(`refused:${e.by}`));
  events.on('retry', (e) => log.push(`${e.chargesAttempt ? 'retry' : 'defer'}:${e.cause}`));
  events.on('dead-letter', (e) => log.push(`dead-letter:${e.reason}`));
  const runtime = new JobRuntime({
    queue: 'index',
    policy,
    dependencies: {},
    attempts: store,
    deadLetters: store,
    clock,
    random: seededRandom(3),
    events,
    internalError: (error) => log.push(`internal:${(error as Error).message}`),
    maxStalls: 5,
    ...settings,
  });
  return { runtime, store, clock, log };
}

const ref = { queue: 'index', jobId: '7', createdAt: 0 };

describe('JobRuntime admission', () => {
  it('charges a retry once: decide spends it, the retry runs without asking again', async () => {
    const budget = new ScriptedBudget([true]);
    const { runtime, store } = setup({ budget });
    await runtime.run(handle(), async () => Promise.reject(new TransientError('down')));
    expect(budget.asked).toBe(1);
    let calls = 0;
    const outcome = await runtime.run(handle({ starts: 2 }), async () => {
      calls++;
      return 'ok';
    });
    expect(outcome).toEqual({ type: 'completed', value: 'ok' });
    expect(calls).toBe(1);
    expect(budget.asked).toBe(1);
    expect(store.readAttempts(ref)).toBeUndefined();
  });

  it('a deferred job asks again before it runs; denied again, it is deferred again without calling anything', async () => {
    const budget = new ScriptedBudget([false, false, true]);
    const { runtime, store, log } = setup({ budget });
    let calls = 0;
    const work = async () => {
      calls++;
      throw new TransientError('down');
    };
    const first = handle();
    await runtime.run(first, work);
    expect(calls).toBe(1);
    expect(store.readAttempts(ref)).toMatchObject({ attempts: 0, deferrals: 1 });
    expect(store.readAttempts(ref)?.granted).toBeUndefined();

    const second = handle({ starts: 2 });
    expect(await runtime.run(second, work)).toEqual({ type: 'delayed' });
    expect(calls).toBe(1); // refused before the processor ran
    expect(second.moves).toHaveLength(1);
    expect(second.moves[0]).toBeGreaterThanOrEqual(11_000);
    expect(store.readAttempts(ref)).toMatchObject({ attempts: 0, deferrals: 2 });

    // Granted at admission: the run is charged there, once; its failure then asks decide (a fresh retry).
    const third = handle({ starts: 3 });
    await runtime.run(third, work);
    expect(calls).toBe(2);
    expect(budget.asked).toBe(4);
    expect(log).toEqual([
      'defer:budget-deferred',
      'refused:budget',
      'defer:budget-deferred',
      'retry:backoff',
    ]);
  });

  it('with dead-letter on exhaustion, a deferred job denied at admission is dead-lettered without running', async () => {
    const budget = new ScriptedBudget([false], 'dead-letter');
    const { runtime, store, log } = setup({ budget });
    store.writeAttempts(ref, { attempts: 1, deferrals: 1, starts: 2 }, 60_000);
    let calls = 0;
    const outcome = await runtime.run(handle({ starts: 3 }), async () => {
      calls++;
      return 'ok';
    });
    expect(outcome).toMatchObject({ type: 'dead-lettered', reason: 'budget-exhausted' });
    expect(calls).toBe(0);
    expect(log).toEqual(['refused:budget', 'dead-letter:budget-exhausted']);
  });

  it('a job back from stalled-job recovery asks: its stalled run used the grant up', async () => {
    const budget = new ScriptedBudget([false]);
    const { runtime, store } = setup({ budget });
    const granted: AttemptState = { attempts: 1, deferrals: 0, starts: 1, granted: true };
    store.writeAttempts(ref, granted, 60_000);
    let calls = 0;
    const back = handle({ starts: 3, stalls: 1 });
    expect(await runtime.run(back, async () => calls++)).toEqual({ type: 'delayed' });
    expect(calls).toBe(0);
    expect(budget.asked).toBe(1);
    expect(store.readAttempts(ref)).toMatchObject({ attempts: 1, deferrals: 1, stalls: 1 });
  });

  it('a first run that stalled asks too; a first run that did not asks nothing', async () => {
    const budget = new ScriptedBudget([false]);
    const { runtime } = setup({ budget });
    let calls = 0;
    expect(await runtime.run(handle(), async () => calls++)).toMatchObject({ type: 'completed' });
    expect(budget.asked).toBe(0);
    expect(await runtime.run(handle({ starts: 2, stalls: 1 }), async () => calls++)).toEqual({
      type: 'delayed',
    });
    expect(calls).toBe(1);
    expect(budget.asked).toBe(1);
  });

  it('an open breaker refuses admission first: delayed to the half-open time, the budget not asked', async () => {
    const budget = new ScriptedBudget([]);
    const verdict: BreakerVerdict = { state: 'open', halfOpenAtMs: 15_000, halfOpenInMs: 5_000 };
    const breaker = {
      check: async () => verdict,
      execute: async <T>(_d: string, fn: () => T | Promise<T>) => fn(),
    };
    const { runtime, store, log } = setup({ budget, breaker });
    store.writeAttempts(ref, { attempts: 1, deferrals: 1 }, 60_000);
    const back = handle({ starts: 3 });
    let calls = 0;
    expect(await runtime.run(back, async () => calls++)).toEqual({ type: 'delayed' });
    expect(calls).toBe(0);
    expect(budget.asked).toBe(0);
    // Half-open in 5 s, spread over at most one backoff base (100 ms).
    expect(back.moves[0]).toBeGreaterThanOrEqual(15_000);
    expect(back.moves[0]).toBeLessThanOrEqual(15_100);
    expect(log).toEqual(['refused:breaker', 'defer:breaker-open']);
  });
});

/**
 * A small queue on a fake clock: `jobs` jobs whose dependency is down for `downMs`, each run through the
 * runtime until it completes or is dead-lettered. Counts the retries that reach the dependency while it is down.
 */
async function outage(onExhausted: 'dead-letter' | 'defer', jobs: number, downMs: number) {
  const clock = new FakeClock(0);
  const budget = new RetryBudget({
    store: new MemoryBudgetStore({ clock }),
    clock,
    windowMs: 1_000,
    minAllowance: 3,
    ratio: 0.1,
    onExhausted,
    log: false,
  });
  const deferPolicy = definePolicy({
    name: 'outage',
    maxAttempts: 6,
    backoff: { type: 'fixed', delayMs: 200 },
    jitter: 'none',
    maxAgeMs: '1h',
  });
  const { runtime } = setup({ budget, policy: deferPolicy, clock, random: seededRandom(9) });
  const due: Array<{ id: number; at: number; starts: number }> = [];
  // Jobs keep arriving for the whole outage, as in production: both modes meet the budget in every window.
  const every = Math.floor(downMs / jobs);
  for (let id = 0; id < jobs; id++) due.push({ id, at: id * every, starts: 0 });
  let retriesWhileDown = 0;
  let completed = 0;
  let deadLettered = 0;
  while (due.length > 0) {
    due.sort((a, b) => a.at - b.at || a.id - b.id);
    const next = due.shift() as (typeof due)[number];
    clock.set(Math.max(clock.now(), next.at));
    next.starts++;
    let moved: number | undefined;
    const job = handle({
      ref: { queue: 'index', jobId: String(next.id), createdAt: next.id * every },
      starts: next.starts,
      moveToDelayed: async (at) => {
        moved = at;
      },
    });
    const outcome = await runtime.run(job, async () => {
      if (clock.now() < downMs) {
        if (next.starts > 1) retriesWhileDown++;
        throw new TransientError('down');
      }
      return 'ok';
    });
    if (outcome.type === 'completed') completed++;
    else if (outcome.type === 'dead-lettered') deadLettered++;
    else if (moved !== undefined) due.push({ ...next, at: moved });
  }
  return { retriesWhileDown, completed, deadLettered };
}

describe('defer under an outage', () => {
  it('sends no more retries to a down dependency than dead-letter does, and loses no job', async () => {
    const deadLetter = await outage('dead-letter', 200, 5_000);
    const defer = await outage('defer', 200, 5_000);
    expect(deadLetter.completed + deadLetter.deadLettered).toBe(200);
    expect(defer.completed + defer.deadLettered).toBe(200);
    // Both meet the budget's floor (3 a window) in each of the outage's five 1-second windows.
    expect(deadLetter.retriesWhileDown).toBeLessThanOrEqual(5 * 3 + 1);
    expect(defer.retriesWhileDown).toBeLessThanOrEqual(deadLetter.retriesWhileDown);
    expect(defer.completed).toBeGreaterThan(deadLetter.completed);
  });
});
