/**
 * The conformance suite every budget store must pass, written once and run against each implementation
 * (tests/budget/memory-store.test.ts, tests/budget/redis-store.test.ts). Every case runs on a FakeClock:
 * the Redis store takes it through its test-only time override, so window cases are exact on both.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import type { RetryBudgetOptions } from './options.js';
import { RetryBudget } from './retry-budget.js';
import type { BudgetStore } from './store.js';
import type { BudgetEvents } from './types.js';

/** Builds a fresh, empty store whose time is `clock`. */
export type StoreFactory = (clock: FakeClock) => BudgetStore | Promise<BudgetStore>;

export interface ConformanceOptions {
  /** fast-check runs of the 10 000-event property (each run makes ~10 000 store calls). Default 20. */
  propertyRuns?: number;
}

const WINDOW = 60_000;
const BUCKET = 6_000;

/** Registers the budget store conformance cases under `describe(name)`. */
export function describeBudgetStore(
  name: string,
  factory: StoreFactory,
  options: ConformanceOptions = {},
): void {
  describe(`${name} conformance`, () => {
    async function setup(overrides: Partial<RetryBudgetOptions> = {}, start = 1_000_000) {
      const clock = new FakeClock(start);
      const store = await factory(clock);
      const budget = new RetryBudget({
        store,
        ratio: 0.2,
        windowMs: WINDOW,
        minAllowance: 10,
        clock,
        ...overrides,
      });
      return { clock, store, budget };
    }

    async function spend(budget: RetryBudget, dependency: string, n: number): Promise<number> {
      let granted = 0;
      for (let i = 0; i < n; i++) if ((await budget.trySpend(dependency)).granted) granted++;
      return granted;
    }

    /** Records `perStep` successes every `stepMs` for `durationMs` of virtual time, calling `each` after each step. */
    async function steady(
      clock: FakeClock,
      budget: RetryBudget,
      dependency: string,
      { stepMs, perStep, durationMs }: { stepMs: number; perStep: number; durationMs: number },
      each?: () => Promise<void>,
    ): Promise<void> {
      for (let t = 0; t < durationMs; t += stepMs) {
        budget.recordSuccess(dependency, perStep);
        await budget.flush();
        clock.advance(stepMs);
        await each?.();
      }
    }

    it('allows the floor at zero traffic, then denies', async () => {
      const { budget } = await setup();
      expect(await spend(budget, 'search', 10)).toBe(10);
      const eleventh = await budget.trySpend('search');
      expect(eleventh).toMatchObject({
        dependency: 'search',
        granted: false,
        allowance: 10,
        spent: 10,
        denied: 1,
        successes: 0,
        windowMs: WINDOW,
        degraded: false,
      });
      await budget.close();
    });

    it('allows ratio × successes at steady traffic', async () => {
      const { budget } = await setup();
      budget.recordSuccess('search', 1_000);
      await budget.flush();
      expect(await spend(budget, 'search', 250)).toBe(200);
      expect(await budget.state('search')).toEqual({
        dependency: 'search',
        allowance: 200,
        spent: 200,
        denied: 50,
        successes: 1_000,
        windowMs: WINDOW,
        degraded: false,
      });
      await budget.close();
    });

    it('counts successes not yet flushed in the next decision', async () => {
      const { budget } = await setup();
      budget.recordSuccess('search', 1_000);
      const first = await budget.trySpend('search');
      expect(first).toMatchObject({ granted: true, allowance: 200, successes: 1_000, spent: 1 });
      await budget.close();
    });

    it('never counts a denial as spent: after a storm of denials new successes free retries at once', async () => {
      const { budget } = await setup();
      budget.recordSuccess('search', 500);
      await budget.flush();
      expect(await spend(budget, 'search', 100)).toBe(100);
      expect(await spend(budget, 'search', 1_000)).toBe(0);
      expect(await budget.state('search')).toMatchObject({ allowance: 100, spent: 100, denied: 1_000 });
      budget.recordSuccess('search', 500);
      await budget.flush();
      expect(await spend(budget, 'search', 100)).toBe(100);
      expect((await budget.trySpend('search')).granted).toBe(false);
      await budget.close();
    });

    it('keeps dependencies apart', async () => {
      const { budget } = await setup();
      budget.recordSuccess('search', 1_000);
      await budget.flush();
      expect(await spend(budget, 'mail', 20)).toBe(10);
      expect(await spend(budget, 'search', 20)).toBe(20);
      expect(await budget.dependencies()).toEqual(['mail', 'search']);
      expect(await budget.state('crm')).toMatchObject({ allowance: 10, spent: 0, denied: 0, successes: 0 });
      await budget.close();
    });

    it('slides: under steady traffic the allowance never dips below 90 % of steady state at a bucket edge', async () => {
      const { clock, budget } = await setup({}, 0);
      // 100 successes per second: steady state is 6 000 successes per window, an allowance of 1 200.
      await steady(clock, budget, 'search', { stepMs: 500, perStep: 50, durationMs: WINDOW });
      const seen: number[] = [];
      // Both paths: the read-only state and a decision (a few grants stay far below the allowance).
      const sample = async () => {
        seen.push((await budget.state('search')).allowance);
        seen.push((await budget.trySpend('search')).allowance);
      };
      await steady(clock, budget, 'search', { stepMs: 500, perStep: 50, durationMs: 2 * WINDOW }, sample);
      // Just before and just after a sub-bucket edge and a window edge.
      for (const edge of [clock.now() + BUCKET, clock.now() + WINDOW]) {
        while (clock.now() < edge - 1) {
          budget.recordSuccess('search', 50);
          await budget.flush();
          clock.set(Math.min(clock.now() + 500, edge - 1));
        }
        await sample();
        clock.advance(2);
        await sample();
      }
      expect(seen.length).toBeGreaterThan(240);
      // Sub-buckets alone would keep 90 % (1 - 1/buckets); weighting the oldest by its overlap keeps ~100 %.
      expect(Math.min(...seen)).toBeGreaterThanOrEqual(0.99 * 1_200);
      expect(Math.max(...seen)).toBeLessThanOrEqual(1_200);
      await budget.close();
    });

    it('forgets successes and spend older than one window', async () => {
      const { clock, budget } = await setup();
      budget.recordSuccess('search', 1_000);
      await budget.flush();
      expect(await spend(budget, 'search', 200)).toBe(200);
      clock.advance(WINDOW + BUCKET);
      expect(await budget.state('search')).toMatchObject({ allowance: 10, spent: 0, successes: 0 });
      expect(await spend(budget, 'search', 11)).toBe(10);
      await budget.close();
    });

    it('recovers within one window after an outage', async () => {
      const { clock, budget } = await setup({}, 0);
      await steady(clock, budget, 'search', { stepMs: 1_000, perStep: 100, durationMs: WINDOW });
      // The dependency goes down: no more successes, a storm of retries spends the budget and is denied.
      expect(await spend(budget, 'search', 1_500)).toBe(1_200);
      clock.advance(WINDOW / 2);
      expect(await spend(budget, 'search', 100)).toBe(0);
      // It comes back: successes resume. Retries must be granted again within one window.
      const recoveredAt = clock.now();
      let grantedAt: number | undefined;
      await steady(clock, budget, 'search', { stepMs: 1_000, perStep: 100, durationMs: WINDOW }, async () => {
        if (grantedAt === undefined && (await budget.trySpend('search')).granted) grantedAt = clock.now();
      });
      expect(grantedAt).toBeDefined();
      expect(grantedAt! - recoveredAt).toBeLessThanOrEqual(WINDOW);
      expect((await budget.state('search')).allowance).toBeGreaterThanOrEqual(0.9 * 1_200);
      await budget.close();
    });

    it('in shadow mode never denies but counts the denials it would have made', async () => {
      const { budget } = await setup({ mode: 'shadow' });
      const denials: BudgetEvents['denied'][] = [];
      budget.events.on('denied', (e) => denials.push(e));
      const results = [];
      for (let i = 0; i < 25; i++) results.push(await budget.trySpend('search'));
      expect(results.every((r) => r.granted)).toBe(true);
      expect(denials).toHaveLength(15);
      expect(denials.every((d) => d.mode === 'shadow' && d.granted)).toBe(true);
      expect(await budget.state('search')).toMatchObject({ allowance: 10, spent: 10, denied: 15 });
      // Shadow decisions match enforce ones: new successes free retries exactly as they would when enforcing.
      budget.recordSuccess('search', 100);
      await budget.flush();
      expect((await budget.trySpend('search')).spent).toBe(11);
      await budget.close();
    });

    it('emits granted and denied events with the result', async () => {
      const { budget } = await setup({ minAllowance: 1 });
      const seen: string[] = [];
      budget.events.on('granted', (e) => seen.push(`granted:${e.spent}`));
      budget.events.on('denied', (e) => seen.push(`denied:${e.denied}:${e.mode}`));
      await spend(budget, 'search', 3);
      expect(seen).toEqual(['granted:1', 'denied:1:enforce', 'denied:2:enforce']);
      await budget.close();
    });

    it('property: over 10 000 events on a frozen clock, grants = max(floor, ratio × successes), never more', async () => {
      const clock = new FakeClock(5_000_000);
      const store = await factory(clock);
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 1_000 }),
          fc.integer({ min: 0, max: 50 }),
          fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 10_000, maxLength: 10_000 }),
          async (permille, minAllowance, events) => {
            const dependency = `property-${run++}`;
            const ratio = permille / 1_000;
            // The oracle in integers too: Math.floor(0.009 * 3000) is 26 in floating point, not 27.
            const formula = (successes: number) =>
              Math.max(minAllowance, Math.floor((permille * successes) / 1_000));
            const budget = new RetryBudget({ store, ratio, minAllowance, windowMs: WINDOW, clock });
            let successes = 0;
            let granted = 0;
            for (const event of events) {
              // Three successes for every two retry requests, on average.
              if (event < 6) {
                budget.recordSuccess(dependency);
                successes++;
                continue;
              }
              if ((await budget.trySpend(dependency)).granted) granted++;
              expect(granted).toBeLessThanOrEqual(formula(successes));
            }
            // Drain whatever the budget still allows: the total must land on the formula.
            for (;;) {
              const r = await budget.trySpend(dependency);
              if (!r.granted) {
                expect(r.spent).toBe(granted);
                break;
              }
              granted++;
            }
            const expected = formula(successes);
            expect(Math.abs(granted - expected)).toBeLessThanOrEqual(1);
            expect(granted).toBeLessThanOrEqual(expected);
            await budget.close();
          },
        ),
        // Shrinking 10 000-event arrays takes minutes; the seed and the first counterexample are enough.
        { numRuns: options.propertyRuns ?? 20, seed: 3, endOnFailure: true },
      );
    });
  });
}
