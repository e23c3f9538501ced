import { describe, expect, it, vi } from 'vitest';
import { CircuitBreaker } from '../../breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../../breaker/memory-store.js';
import { MemoryBudgetStore } from '../../budget/memory-store.js';
import { RetryBudget } from '../../budget/retry-budget.js';
import { FakeClock } from '../../common/clock.js';
import { BrokenCircuitError } from '../../errors/broken-circuit-error.js';
import { type FlowAction, FlowController, type FlowEvents } from './controller.js';
import { MemoryFlowStore } from './memory-store.js';

/**
 * A breaker, a flow store and a controller of queue `index` on one fake clock; with `budgetMode`, a retry
 * budget too (one retry per 10 s window, 1 s sub-buckets) that the controller reads.
 */
function setup(
  options: {
    queueDependency?: string;
    budgetMode?: 'enforce' | 'shadow';
    mode?: 'enforce' | 'shadow';
    pausedReportMs?: number;
  } = {},
) {
  const { budgetMode, ...flowOptions } = options;
  const clock = new FakeClock(1_000_000);
  const budget = new RetryBudget({
    store: new MemoryBudgetStore({ clock }),
    clock,
    minAllowance: 1,
    windowMs: 10_000,
    mode: budgetMode ?? 'enforce',
    log: false,
  });
  const breaker = new CircuitBreaker({
    store: new MemoryBreakerStore({ clock }),
    clock,
    consecutiveFailures: 1,
    coolDownMs: 5_000,
    halfOpenProbes: 1,
    successesToClose: 1,
  });
  const store = new MemoryFlowStore({ clock });
  const events: string[] = [];
  const slept: number[] = [];
  const flow = new FlowController(
    { store, slowStartMs: 10_000, floorPerSecond: 2, stateCacheMs: 0, ...flowOptions },
    {
      queue: 'index',
      worker: 'w1',
      breaker,
      budget: budgetMode ? budget : undefined,
      clock,
      emit: <K extends keyof FlowEvents>(event: K, payload: FlowEvents[K]) =>
        events.push(`${event}:${JSON.stringify(payload)}`),
      internalError: (error) => events.push(`error:${String(error)}`),
      sleep: async (ms) => {
        slept.push(ms);
      },
    },
  );
  const open = async () => {
    await breaker.recordFailure('search');
    expect((await breaker.state('search')).state).toBe('open');
  };
  return { clock, breaker, budget, store, flow, events, slept, open };
}

describe('FlowController (memory stores, fake clock)', () => {
  it('runs while closed and not recovering, without pacing', async () => {
    const { flow, slept } = setup();
    expect(await flow.beforeRun('search', { jobId: '1', starts: 1 })).toEqual({ type: 'run' });
    expect(slept).toEqual([]);
  });

  it('parks a mixed queue’s job while the breaker is open, and marks the dependency down', async () => {
    const { flow, store, open } = setup();
    await open();
    expect(await flow.beforeRun('search', { jobId: '1', starts: 1 })).toEqual({ type: 'park', forMs: 5_000 });
    expect(store.read('search').down).toBe(true);
  });

  it('releases parked jobs oldest first: one probe while half-open, then paced by the ramp once closed', async () => {
    const { clock, flow, breaker, store, open } = setup();
    await open();
    for (const id of ['1', '2', '3', '4', '5']) {
      const action: FlowAction = await flow.beforeRun('search', { jobId: id, starts: 1 });
      expect(action.type).toBe('park');
      await flow.park('search', id);
    }
    const promoted: string[] = [];
    const promote = async (id: string) => {
      promoted.push(id);
      return 'promoted' as const;
    };
    expect(await flow.releaseOnce(promote)).toBe(0); // open: nothing comes back
    clock.advance(5_000); // half-open: one free probe slot
    expect(await flow.releaseOnce(promote)).toBe(1);
    expect(promoted).toEqual(['1']);
    // The probe runs and succeeds: the breaker closes, the next read marks the dependency up (ramp starts).
    const probe = await breaker.acquire('search');
    await breaker.recordSuccess('search', probe);
    // The ramp's floor is 2 per second: one slot starts within the 250 ms release tick, the next 500 ms on.
    expect(await flow.releaseOnce(promote)).toBe(1);
    expect(store.read('search').recoveredAtMs).toBe(clock.now());
    clock.advance(500);
    expect(await flow.releaseOnce(promote)).toBe(1);
    expect(promoted).toEqual(['1', '2', '3']);
    // A released job runs at once: its release was its slot.
    expect(await flow.beforeRun('search', { jobId: '2', starts: 2 })).toEqual({ type: 'run' });
    expect(store.parked('search', 'index')).toBe(2);
  });

  it('paces a fresh attempt while the dependency recovers: waits for a near slot, delays past maxPaceWaitMs', async () => {
    const { clock, flow, breaker, open, slept } = setup();
    await open();
    // A job met the open breaker: the dependency is marked down, so its recovery starts a ramp.
    expect((await flow.beforeRun('search', { jobId: 'early', starts: 1 })).type).toBe('park');
    clock.advance(5_000);
    await breaker.recordSuccess('search', await breaker.acquire('search'));
    for (let n = 0; n < 3; n++)
      expect(await flow.beforeRun('search', { jobId: `j${n}`, starts: 1 })).toEqual({ type: 'run' });
    // 2 per second: slots at +0, +500, +1000 ms; the third is 1 000 ms away, within the default 1 000 ms wait.
    expect(slept).toEqual([500, 1_000]);
    expect(await flow.beforeRun('search', { jobId: 'j3', starts: 1 })).toEqual({
      type: 'delay',
      forMs: 1_500,
    });
  });

  it('in shadow mode reports the hold and runs the job', async () => {
    const clock = new FakeClock(0);
    const breaker = new CircuitBreaker({
      store: new MemoryBreakerStore({ clock }),
      clock,
      consecutiveFailures: 1,
    });
    await breaker.recordFailure('search');
    const events: boolean[] = [];
    const flow = new FlowController(
      { store: new MemoryFlowStore({ clock }), mode: 'shadow' },
      {
        queue: 'index',
        breaker,
        clock,
        emit: (_e, p) => events.push((p as { shadow: boolean }).shadow),
        internalError: () => {},
      },
    );
    expect(await flow.beforeRun('search', { jobId: '1', starts: 1 })).toEqual({ type: 'run' });
    expect(events).toEqual([true]);
  });

  it('holds a paused queue’s job in hand, pausing the queue once, and hands it back when the worker stops', async () => {
    const { flow, open } = setup({ queueDependency: 'search' });
    await open();
    const held = flow.beforeRun('search', { jobId: '1', starts: 1 });
    await vi.waitFor(() =>
      expect(flow.status()).toEqual([{ dependency: 'search', paused: true, pausedUntilMs: 1_005_000 }]),
    );
    await flow.stop();
    expect(await held).toEqual({ type: 'pause', forMs: 5_000 });
  });

  it('records its pause in the store while it holds the queue, and removes it when it stops', async () => {
    const { flow, store, open } = setup({ queueDependency: 'search' });
    await open();
    const held = flow.beforeRun('search', { jobId: '1', starts: 1 });
    await vi.waitFor(() =>
      expect(store.pausedWorkers('search')).toEqual([
        // Expires three refresh intervals (5 s by default) after the note.
        { queue: 'index', worker: 'w1', sinceMs: 1_000_000, untilMs: 1_005_000, expiresAtMs: 1_015_000 },
      ]),
    );
    await flow.stop();
    expect(await held).toEqual({ type: 'pause', forMs: 5_000 });
    expect(store.pausedWorkers('search')).toEqual([]);
  });

  it('refreshes its paused entry once per pausedReportMs, and clears it once the pause is over', async () => {
    const { clock, flow, store, open, breaker } = setup({ queueDependency: 'search', pausedReportMs: 2_000 });
    await open();
    const notes = vi.spyOn(store, 'notePaused');
    const refusal = new BrokenCircuitError('search', 1_005_000, 'open', 5_000);
    expect(await flow.heldByBreaker('search', refusal)).toEqual({ type: 'pause', forMs: 5_000 });
    // More jobs refused within the same pause write nothing more.
    expect(await flow.heldByBreaker('search', refusal)).toEqual({ type: 'pause', forMs: 5_000 });
    flow.startReleasing(async () => 'gone');
    try {
      await vi.waitFor(() => expect(store.pausedWorkers('search')).toHaveLength(1));
      clock.advance(1_000);
      await flow.releaseOnce(async () => 'gone');
      expect(notes).toHaveBeenCalledTimes(1);
      clock.advance(1_000);
      await vi.waitFor(() => expect(store.pausedWorkers('search')[0]?.expiresAtMs).toBe(1_008_000));
      expect(notes).toHaveBeenCalledTimes(2);
      expect(store.pausedWorkers('search')[0]).toEqual({
        queue: 'index',
        worker: 'w1',
        sinceMs: 1_000_000,
        untilMs: 1_005_000,
        expiresAtMs: 1_008_000,
      });
      // The pause ends (the breaker half-opens, the probe closes it): the entry goes before it would expire.
      clock.advance(3_500);
      await breaker.recordSuccess('search');
      expect(await flow.beforeRun('search', { jobId: '2', starts: 1 })).toEqual({ type: 'run' });
      await vi.waitFor(() => expect(store.pausedWorkers('search')).toEqual([]));
    } finally {
      await flow.stop();
    }
  });

  it('in shadow mode records no paused worker', async () => {
    const { flow, store, open } = setup({ queueDependency: 'search', mode: 'shadow' });
    await open();
    const notes = vi.spyOn(store, 'notePaused');
    const refusal = new BrokenCircuitError('search', 1_005_000, 'open', 5_000);
    expect(await flow.heldByBreaker('search', refusal)).toBeUndefined();
    expect(await flow.beforeRun('search', { jobId: '1', starts: 1 })).toEqual({ type: 'run' });
    await flow.stop();
    expect(notes).not.toHaveBeenCalled();
    expect(store.pausedWorkers('search')).toEqual([]);
  });

  it('with the kill switch on, nothing is held', async () => {
    const { flow, store, open } = setup();
    await open();
    store.setOff(true);
    expect(await flow.beforeRun('search', { jobId: '1', starts: 1 })).toEqual({ type: 'run' });
  });
});

describe('FlowController: slow start when the budget stops denying (memory stores, fake clock)', () => {
  /** Two retries of `dependency` asked at once: the window's one is granted, the other denied. */
  async function exhaust(budget: RetryBudget, dependency: string): Promise<void> {
    expect((await budget.trySpend(dependency)).granted).toBe(true);
    expect((await budget.trySpend(dependency)).granted).toBe(false);
  }

  it('marks a denying dependency down, and starts the shared ramp once the budget stops denying', async () => {
    const { clock, flow, budget, store, slept } = setup({ budgetMode: 'enforce' });
    expect(await flow.beforeRun('search', { jobId: '0', starts: 1 })).toEqual({ type: 'run' });
    await exhaust(budget, 'search');
    expect(store.read('search')).toEqual({ down: true, nowMs: 1_000_000, off: false });
    // Still denying: it stays down, and nothing is paced (no recovery has started).
    clock.advance(5_000);
    expect((await budget.state('search')).denied).toBeGreaterThan(0);
    expect(await flow.beforeRun('search', { jobId: '1', starts: 1 })).toEqual({ type: 'run' });
    expect(store.read('search').down).toBe(true);
    expect(slept).toEqual([]);
    // The window slides past the denial: the next read marks it up, and the ramp runs from now.
    clock.advance(6_000);
    expect((await budget.state('search')).denied).toBe(0);
    for (let n = 0; n < 3; n++)
      expect(await flow.beforeRun('search', { jobId: `j${n}`, starts: 1 })).toEqual({ type: 'run' });
    expect(store.read('search')).toEqual({
      down: false,
      recoveredAtMs: 1_011_000,
      nowMs: 1_011_000,
      off: false,
    });
    // The ramp's floor, 2 per second: slots at +0, +500 and +1 000 ms.
    expect(slept).toEqual([500, 1_000]);
  });

  it('a breaker recovery starts the ramp while the budget still denies; a later episode starts it again', async () => {
    const { clock, flow, breaker, budget, store, open } = setup({ budgetMode: 'enforce' });
    expect(await flow.beforeRun('search', { jobId: '0', starts: 1 })).toEqual({ type: 'run' });
    await exhaust(budget, 'search');
    await open();
    expect((await flow.beforeRun('search', { jobId: 'a', starts: 1 })).type).toBe('park');
    clock.advance(5_000);
    await breaker.recordSuccess('search', await breaker.acquire('search'));
    expect((await budget.state('search')).denied).toBeGreaterThan(0);
    expect(await flow.beforeRun('search', { jobId: 'b', starts: 1 })).toEqual({ type: 'run' });
    expect(store.read('search')).toMatchObject({ down: false, recoveredAtMs: 1_005_000 });
    // The denials age out of the window: the dependency is up already, nothing starts again.
    clock.advance(6_000);
    expect(await flow.beforeRun('search', { jobId: 'c', starts: 1 })).toEqual({ type: 'run' });
    expect(store.read('search').recoveredAtMs).toBe(1_005_000);
    // A new episode of denials, then its end: the ramp starts again.
    await exhaust(budget, 'search');
    expect(store.read('search').down).toBe(true);
    clock.advance(11_000);
    expect(await flow.beforeRun('search', { jobId: 'd', starts: 1 })).toEqual({ type: 'run' });
    expect(store.read('search')).toMatchObject({ down: false, recoveredAtMs: 1_022_000 });
  });

  it('ignores shadow denials and dependencies it does not gate', async () => {
    const shadow = setup({ budgetMode: 'shadow' });
    expect(await shadow.flow.beforeRun('search', { jobId: '0', starts: 1 })).toEqual({ type: 'run' });
    await shadow.budget.trySpend('search');
    await shadow.budget.trySpend('search');
    expect((await shadow.budget.state('search')).denied).toBe(1);
    expect(shadow.store.read('search').down).toBe(false);
    const { flow, budget, store } = setup({ budgetMode: 'enforce' });
    expect(await flow.beforeRun('search', { jobId: '0', starts: 1 })).toEqual({ type: 'run' });
    await exhaust(budget, 'mail');
    expect(store.read('mail').down).toBe(false);
  });
});
