import { describe, expect, it } from 'vitest';
import { MemoryBudgetStore } from '../budget/memory-store.js';
import { budgetWindow } from '../budget/window.js';
import { FakeClock } from '../common/clock.js';
import { seededRandom } from '../common/random.js';
import { DeferredSuccessStore } from './deferred-budget-store.js';

const WINDOW = budgetWindow({ ratio: 0.2, windowMs: 10_000, buckets: 10, minAllowance: 2, version: 0 });
const OTHER = budgetWindow({ ratio: 0.5, windowMs: 20_000, buckets: 10, minAllowance: 1, version: 1 });

/**
 * Drives a DeferredSuccessStore and a MemoryBudgetStore with the same operations on one clock and
 * returns every answer of each, side by side: the deferred store must answer exactly as the store whose
 * writes are applied at once. Gaps of up to 45 s let dependencies be forgotten (two windows: 20 s) between
 * writes, and reads come rarely, as in a fleet of per-worker budgets.
 */
function drive(
  seed: number,
  steps: number,
  settingsAt?: number,
  viaLog = false,
): { deferred: unknown[]; direct: unknown[] } {
  const clock = new FakeClock(0);
  const deferred = new DeferredSuccessStore(clock);
  const direct = new MemoryBudgetStore({ clock });
  const random = seededRandom(seed);
  const answers = { deferred: [] as unknown[], direct: [] as unknown[] };
  const names = ['a', 'b', 'c'];
  for (let step = 0; step < steps; step++) {
    const gap = random() < 0.05 ? 45_000 * random() : 800 * random();
    clock.set(clock.now() + Math.floor(gap));
    const dependency = names[Math.floor(random() * names.length)] as string;
    const window = settingsAt !== undefined && step >= settingsAt ? OTHER : WINDOW;
    const op = random();
    if (op < 0.8) {
      const successes = [
        { ageMs: viaLog ? 0 : Math.floor(random() * 300), count: 1 + Math.floor(random() * 3) },
      ];
      // As SampledBudget records a success with its own settings (the first written): logged when the
      // store can, else written. Other settings are written.
      if (viaLog && window === WINDOW && deferred.logSuccess(dependency, successes[0]!.count))
        answers.deferred.push({ window });
      else answers.deferred.push(deferred.addSuccesses(dependency, successes, window));
      answers.direct.push(direct.addSuccesses(dependency, successes, window));
    } else if (op < 0.93) {
      const count = 1 + Math.floor(random() * 2);
      answers.deferred.push(deferred.trySpend(dependency, window, [], count));
      answers.direct.push(direct.trySpend(dependency, window, [], count));
    } else {
      answers.deferred.push(deferred.read(dependency));
      answers.direct.push(direct.read(dependency));
    }
  }
  answers.deferred.push(deferred.dependencies());
  answers.direct.push(direct.dependencies());
  return answers;
}

describe('DeferredSuccessStore', () => {
  it('answers every trySpend, read and write as a store that applies each write at once', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const { deferred, direct } = drive(seed, 4_000);
      expect(deferred, `seed ${seed}`).toEqual(direct);
    }
  });

  it('keeps answering as the store does once a write brings other settings', () => {
    for (const seed of [6, 7]) {
      const { deferred, direct } = drive(seed, 3_000, 1_500);
      expect(deferred, `seed ${seed}`).toEqual(direct);
    }
  });

  it('answers as the store does when successes are logged with logSuccess, as a budget records them', () => {
    for (const seed of [8, 9]) {
      const { deferred, direct } = drive(seed, 3_000, undefined, true);
      expect(deferred, `seed ${seed}`).toEqual(direct);
    }
    const { deferred, direct } = drive(10, 3_000, 1_500, true);
    expect(deferred).toEqual(direct);
  });

  it('counts successes logged over many writes, and forgets those left unread for two windows', () => {
    const clock = new FakeClock(0);
    const store = new DeferredSuccessStore(clock);
    // 100 successes a second for 5 s: more writes than a log holds before it applies them.
    for (let t = 0; t < 5_000; t += 10) {
      clock.set(t);
      store.addSuccesses('search', [{ ageMs: 0, count: 1 }], WINDOW);
    }
    clock.set(5_000);
    expect(store.read('search')).toMatchObject({ successes: 500, allowance: 100, spent: 0 });
    clock.set(10_000);
    store.addSuccesses('mail', [{ ageMs: 0, count: 7 }], WINDOW);
    // Nothing wrote mail for two windows (20 s) after 10 s: at 30 s it is forgotten, unread.
    clock.set(30_000);
    expect(store.read('mail')).toBeUndefined();
    expect(store.dependencies()).toEqual([]);
  });
});
