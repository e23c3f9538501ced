import { describe, expect, it } from 'vitest';
import type { BudgetSnapshot } from '../../budget/types.js';
import { FakeClock } from '../../common/clock.js';
import { isBudgetDenying, Pacer, type Sleep, waitUntilHealthy } from './replay-pacing.js';

const snapshot = (spent: number, denied: number, allowance = 10): BudgetSnapshot => ({
  dependency: 'search',
  allowance,
  spent,
  denied,
  successes: 0,
  windowMs: 60_000,
  degraded: false,
});

function virtual(clock: FakeClock, log: number[]): Sleep {
  return async (ms, signal) => {
    signal?.throwIfAborted();
    log.push(ms);
    clock.advance(ms);
  };
}

describe('isBudgetDenying', () => {
  it('is true only with denials and the allowance used up', () => {
    expect(isBudgetDenying(snapshot(10, 1))).toBe(true);
    expect(isBudgetDenying(snapshot(12, 3))).toBe(true);
    expect(isBudgetDenying(snapshot(10, 0))).toBe(false);
    // Successes raised the allowance above what was spent: retries are granted again.
    expect(isBudgetDenying(snapshot(10, 5, 30))).toBe(false);
  });
});

describe('Pacer', () => {
  it('spaces events 1000/rate ms apart and does not burst after a pause', async () => {
    const clock = new FakeClock(0);
    const sleeps: number[] = [];
    const pacer = new Pacer(4, clock, virtual(clock, sleeps));
    const at: number[] = [];
    for (let i = 0; i < 3; i++) {
      await pacer.next();
      at.push(clock.now());
    }
    clock.advance(5_000);
    for (let i = 0; i < 2; i++) {
      await pacer.next();
      at.push(clock.now());
    }
    expect(at).toEqual([0, 250, 500, 5_500, 5_750]);
    expect(sleeps).toEqual([250, 250, 250]);
  });

  it('does not wait without a rate', async () => {
    const clock = new FakeClock(0);
    const sleeps: number[] = [];
    const pacer = new Pacer(undefined, clock, virtual(clock, sleeps));
    await pacer.next();
    await pacer.next();
    expect(sleeps).toEqual([]);
  });
});

describe('waitUntilHealthy', () => {
  it('polls until the budget stops denying and the extra check passes', async () => {
    const clock = new FakeClock(0);
    const sleeps: number[] = [];
    const states = [snapshot(10, 2), snapshot(10, 2), snapshot(3, 0), snapshot(3, 0)];
    let breakerOpen = true;
    let waits = 0;
    await waitUntilHealthy(
      'search',
      {
        budget: { state: () => states.shift() ?? snapshot(0, 0) },
        isHealthy: () => {
          const healthy = !breakerOpen;
          breakerOpen = false;
          return healthy;
        },
        pollMs: 100,
      },
      virtual(clock, sleeps),
      undefined,
      () => waits++,
    );
    expect(sleeps).toEqual([100, 100, 100]);
    expect(waits).toBe(3);
  });

  it('rejects when the signal aborts', async () => {
    const controller = new AbortController();
    controller.abort();
    const clock = new FakeClock(0);
    await expect(
      waitUntilHealthy('search', { isHealthy: () => false }, virtual(clock, []), controller.signal, () => {}),
    ).rejects.toThrow();
  });
});
