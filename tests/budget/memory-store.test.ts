import { describe, expect, it } from 'vitest';
import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { describeBudgetStore } from '../../src/budget/store.case.js';
import { FakeClock } from '../../src/common/clock.js';

describeBudgetStore('MemoryBudgetStore', (clock) => new MemoryBudgetStore({ clock }), { propertyRuns: 10 });

describe('MemoryBudgetStore memory', () => {
  it('forgets a dependency two windows after its last write, never one still in its window', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const budget = new RetryBudget({ store: new MemoryBudgetStore({ clock }), clock, windowMs: 1_000 });
    for (let i = 0; i < 3_000; i++) {
      await budget.trySpend(`job-${i}`);
      clock.advance(1);
    }
    // 3 000 names over 3 s: those written in the last two windows (2 s) are kept, the rest forgotten.
    const listed = await budget.dependencies();
    expect(listed.length).toBeGreaterThan(1_900);
    expect(listed.length).toBeLessThanOrEqual(2_000);
    expect(listed).toContain('job-2999');
    expect(listed).not.toContain('job-0');
    // A live dependency keeps what it spent, through the sweeps 2 500 new names bring.
    for (let i = 0; i < 10; i++) await budget.trySpend('search');
    for (let i = 0; i < 2_500; i++) {
      await budget.trySpend(`later-${i}`);
      if (i % 5 === 0) clock.advance(1);
    }
    expect(await budget.state('search')).toMatchObject({ spent: 10 });
    expect((await budget.trySpend('search')).granted).toBe(false);
  });
});
