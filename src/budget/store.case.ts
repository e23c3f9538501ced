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
  /** fast-check runs of each property (the 10 000-event one makes ~10 000 store calls a run). Default 20. */
  propertyRuns?: number;
  /** fast-check runs of the window and mixed-settings properties (20 to 300 events each). Default 50. */
  windowPropertyRuns?: number;
}

const WINDOW = 60_000;
const BUCKET = 6_000;
// The suite checks what a store answers, not how fast: on a loaded machine a slow answer must not turn into
// the degraded fallback, which every case here expects not to see (degraded: false).
const STORE_TIMEOUT_MS = 10_000;

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
        timeoutMs: STORE_TIMEOUT_MS,
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

    it('bounds every true window at a sub-bucket edge: a burst at the end of one bucket is not granted again', async () => {
      // 1 000 ms window in 10 buckets, floor 10, no successes: the allowance is 10 in ANY 1 000 ms.
      const { clock, budget } = await setup({ windowMs: 1_000, minAllowance: 10 }, 0);
      clock.set(99); // the last millisecond of bucket 0
      expect(await spend(budget, 'search', 10)).toBe(10);
      // 1 098 is inside the true window (98, 1 098] that holds the burst: nothing more may be granted.
      clock.set(1_098);
      expect(await spend(budget, 'search', 10)).toBe(0);
      // Once the burst has left every window ending now, the floor is available again.
      clock.set(1_100);
      expect(await spend(budget, 'search', 11)).toBe(10);
      await budget.close();
    });

    it('property: in every true window, grants ≤ max(floor, ratio × successes of that window and one bucket before)', async () => {
      const clock = new FakeClock(0);
      const store = await factory(clock);
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(1, 2, 4, 5, 10),
          fc.integer({ min: 0, max: 10 }),
          fc.integer({ min: 1, max: 1_000 }),
          fc.array(
            fc.record({
              advanceMs: fc.oneof(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 1_200 })),
              successes: fc.integer({ min: 0, max: 30 }),
              retries: fc.integer({ min: 0, max: 4 }),
            }),
            { minLength: 20, maxLength: 300, size: 'medium' },
          ),
          async (buckets, minAllowance, permille, events) => {
            const W = 1_000;
            const bucketMs = W / buckets;
            const dependency = `edge-${run++}`;
            clock.set(1_000_000 * run);
            const budget = new RetryBudget({
              timeoutMs: STORE_TIMEOUT_MS,
              store,
              ratio: permille / 1_000,
              minAllowance,
              windowMs: W,
              buckets,
              clock,
            });
            const successesAt: Array<[number, number]> = [];
            const grantsAt: number[] = [];
            for (const event of events) {
              clock.advance(event.advanceMs);
              if (event.successes > 0) {
                budget.recordSuccess(dependency, event.successes);
                await budget.flush();
                successesAt.push([clock.now(), event.successes]);
              }
              for (let i = 0; i < event.retries; i++) {
                if (!(await budget.trySpend(dependency)).granted) continue;
                const t = clock.now();
                grantsAt.push(t);
                // The oracle, in integers: the successes of (t − W − bucketMs, t] at most.
                let successes = 0;
                for (const [at, n] of successesAt) if (at > t - W - bucketMs) successes += n;
                const bound = Math.max(minAllowance, Math.floor((permille * successes) / 1_000));
                const inWindow = grantsAt.filter((g) => g > t - W).length;
                expect(inWindow, `grants in (${t - W}, ${t}]`).toBeLessThanOrEqual(bound);
              }
            }
            await budget.close();
          },
        ),
        { numRuns: options.windowPropertyRuns ?? 50, seed: 11, endOnFailure: true },
      );
    });

    it('lets the settings stored first govern every caller, whatever the caller asks', async () => {
      const { clock, store, budget: sixty } = await setup({ windowMs: 60_000, minAllowance: 10 }, 0);
      const overruled: BudgetEvents['overruled'][] = [];
      const thirty = new RetryBudget({
        timeoutMs: STORE_TIMEOUT_MS,
        store,
        clock,
        windowMs: 30_000,
        minAllowance: 20,
        ratio: 0.5,
        log: false,
      });
      thirty.events.on('overruled', (e) => overruled.push(e));
      expect(await spend(sixty, 'search', 1)).toBe(1);
      // The 30 s worker is held to the stored 60 s, floor-10 settings, and told so once.
      expect(await thirty.trySpend('search')).toMatchObject({
        granted: true,
        allowance: 10,
        windowMs: 60_000,
      });
      expect(await spend(thirty, 'search', 20)).toBe(8);
      expect(overruled).toHaveLength(1);
      expect(overruled[0]).toMatchObject({
        dependency: 'search',
        stored: { windowMs: 60_000, minAllowance: 10 },
      });
      // 40 s later the 30 s window would have forgotten every grant; the stored 60 s one has not.
      clock.advance(40_000);
      expect(await spend(thirty, 'search', 5)).toBe(0);
      expect(await thirty.state('search')).toMatchObject({ allowance: 10, spent: 10, windowMs: 60_000 });
      await sixty.close();
      await thirty.close();
    });

    it('never lets a rolling change of windowMs switch the budget off: old and new workers in turn grant no more than one configuration', async () => {
      // The old (60 s) and the new (30 s) settings, no successes, floor 10, 1 000 requests over 100 s.
      const { clock, store, budget: old } = await setup({ windowMs: 60_000, minAllowance: 10 }, 0);
      const young = new RetryBudget({
        timeoutMs: STORE_TIMEOUT_MS,
        store,
        clock,
        windowMs: 30_000,
        minAllowance: 10,
        log: false,
      });
      const grants: number[] = [];
      for (let i = 0; i < 1_000; i++) {
        clock.advance(100);
        if ((await (i % 2 === 0 ? old : young).trySpend('search')).granted) grants.push(clock.now());
      }
      // The 60 s settings alone allow 10 per 60 s: 20 in 100 s (the 30 s settings alone: 40).
      expect(grants.length).toBeLessThanOrEqual(20);
      for (const t of grants)
        expect(grants.filter((g) => g > t - 60_000 && g <= t).length).toBeLessThanOrEqual(10);
      await old.close();
      await young.close();
    });

    it('rolls a change out with a higher settingsVersion: both configurations bind until the new one holds a whole window', async () => {
      const { clock, store, budget: v0 } = await setup({ windowMs: 60_000, minAllowance: 10 }, 0);
      const v1 = new RetryBudget({
        timeoutMs: STORE_TIMEOUT_MS,
        store,
        clock,
        windowMs: 30_000,
        minAllowance: 6,
        settingsVersion: 1,
        log: false,
      });
      expect(await spend(v0, 'search', 4)).toBe(4);
      // v1 starts the change: its own (empty) ring allows 6, the old one 6 more of its 10: 6 in all.
      expect(await v1.trySpend('search')).toMatchObject({ granted: true, windowMs: 60_000 });
      expect(await spend(v1, 'search', 10)).toBe(5);
      expect(await spend(v0, 'search', 10)).toBe(0);
      // 30 s + one bucket later the new settings hold a whole window and take over, for every worker.
      clock.advance(33_000);
      expect(await v0.trySpend('search')).toMatchObject({ granted: true, windowMs: 30_000, allowance: 6 });
      expect(await spend(v1, 'search', 10)).toBe(5);
      // Those grants leave its window a window and a bucket later (the oldest bucket counts whole).
      clock.advance(32_000);
      expect(await spend(v0, 'search', 10)).toBe(0);
      clock.advance(1_000);
      expect(await spend(v0, 'search', 10)).toBe(6);
      // A lower version never takes it back.
      const back = new RetryBudget({
        timeoutMs: STORE_TIMEOUT_MS,
        store,
        clock,
        windowMs: 60_000,
        minAllowance: 50,
        log: false,
      });
      expect(await back.trySpend('search')).toMatchObject({ granted: false, windowMs: 30_000, allowance: 6 });
      await v0.close();
      await v1.close();
      await back.close();
    });

    it('property: two configurations in turn on one dependency never grant more in a window of the governing one than it allows', async () => {
      const clock = new FakeClock(0);
      const store = await factory(clock);
      let run = 0;
      const config = fc.record({
        windowMs: fc.constantFrom(600, 1_200, 1_800),
        buckets: fc.constantFrom(1, 2, 3, 6),
        minAllowance: fc.integer({ min: 0, max: 8 }),
        permille: fc.integer({ min: 1, max: 1_000 }),
        settingsVersion: fc.integer({ min: 0, max: 2 }),
      });
      await fc.assert(
        fc.asyncProperty(
          config,
          config,
          fc.array(
            fc.record({
              worker: fc.integer({ min: 0, max: 1 }),
              advanceMs: fc.integer({ min: 0, max: 150 }),
              successes: fc.integer({ min: 0, max: 20 }),
              retries: fc.integer({ min: 0, max: 3 }),
            }),
            { minLength: 20, maxLength: 300, size: 'medium' },
          ),
          async (a, b, events) => {
            const dependency = `mixed-${run++}`;
            clock.set(1_000_000 * run);
            const budgets = [a, b].map(
              (c) =>
                new RetryBudget({
                  timeoutMs: STORE_TIMEOUT_MS,
                  store,
                  clock,
                  windowMs: c.windowMs,
                  buckets: c.buckets,
                  minAllowance: c.minAllowance,
                  ratio: c.permille / 1_000,
                  settingsVersion: c.settingsVersion,
                  log: false,
                }),
            );
            const successesAt: Array<[number, number]> = [];
            const grantsAt: number[] = [];
            for (const event of events) {
              clock.advance(event.advanceMs);
              const budget = budgets[event.worker]!;
              if (event.successes > 0) {
                budget.recordSuccess(dependency, event.successes);
                await budget.flush();
                successesAt.push([clock.now(), event.successes]);
              }
              for (let i = 0; i < event.retries; i++) {
                const result = await budget.trySpend(dependency);
                if (!result.granted) continue;
                const t = clock.now();
                grantsAt.push(t);
                // The governing configuration is one of the two: whichever has this window.
                const candidates = [a, b].filter((c) => c.windowMs === result.windowMs);
                const bounds = candidates.map((c) => {
                  const bucketMs = c.windowMs / c.buckets;
                  let successes = 0;
                  for (const [at, n] of successesAt) if (at > t - c.windowMs - bucketMs) successes += n;
                  const bound = Math.max(c.minAllowance, Math.floor((c.permille * successes) / 1_000));
                  return bound - grantsAt.filter((g) => g > t - c.windowMs).length;
                });
                expect(candidates.length).toBeGreaterThan(0);
                expect(
                  Math.max(...bounds),
                  `grants in the governing window ending at ${t}`,
                ).toBeGreaterThanOrEqual(0);
              }
            }
            for (const budget of budgets) await budget.close();
          },
        ),
        { numRuns: options.windowPropertyRuns ?? 50, seed: 5, endOnFailure: true },
      );
    });

    it('computes the allowance exactly for parts-per-million ratios and saturates counts at 2^53 − 1', async () => {
      const { budget } = await setup({ ratio: 0.000001, minAllowance: 0 });
      budget.recordSuccess('ppm', 10_000_000);
      expect(await budget.trySpend('ppm')).toMatchObject({ allowance: 10, successes: 10_000_000 });
      const { budget: whole } = await setup({ ratio: 0.2, minAllowance: 0 });
      whole.recordSuccess('huge', Number.MAX_SAFE_INTEGER);
      whole.recordSuccess('huge', Number.MAX_SAFE_INTEGER);
      await whole.flush();
      const huge = await whole.trySpend('huge');
      // The expected value in BigInt: floor((2^53 − 1) × 200 000 / 1 000 000).
      const expected = Number(((2n ** 53n - 1n) * 200_000n) / 1_000_000n);
      expect(huge).toMatchObject({ successes: Number.MAX_SAFE_INTEGER, allowance: expected, spent: 1 });
      await budget.close();
      await whole.close();
    });

    it('stamps successes with their age on the store clock: old ones leave the window sooner, too old ones never count', async () => {
      const clock = new FakeClock(1_000_000);
      const store = await factory(clock);
      const window = {
        ratioPpm: 200_000,
        windowMs: WINDOW,
        buckets: 10,
        bucketMs: BUCKET,
        minAllowance: 0,
        version: 0,
      };
      await store.addSuccesses(
        'aged',
        [
          { ageMs: 5_000, count: 100 },
          { ageMs: 0, count: 100 },
          { ageMs: 70_000, count: 1_000 },
        ],
        window,
      );
      expect(await store.read('aged')).toMatchObject({ successes: 200, allowance: 40 });
      // At 1 056 000 the bucket of 995 000 has left the ring; the bucket of 1 000 000 is the oldest, whole.
      clock.set(1_056_000);
      expect(await store.read('aged')).toMatchObject({ successes: 100 });
      expect(await store.trySpend('aged', window, [{ ageMs: 0, count: 50 }], 1)).toMatchObject({
        granted: 1,
        successes: 150,
        allowance: 30,
      });
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
            const budget = new RetryBudget({
              timeoutMs: STORE_TIMEOUT_MS,
              store,
              ratio,
              minAllowance,
              windowMs: WINDOW,
              clock,
            });
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
