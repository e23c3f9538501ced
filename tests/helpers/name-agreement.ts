import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import type { BreakerListing, BreakerStore } from '../../src/breaker/types.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import type { BudgetStore } from '../../src/budget/store.js';
import { dependencyNameProblem, jobDependencyName } from '../../src/common/names.js';
import { resolveFlowControlOptions } from '../../src/runtime/flow-control/options.js';
import type { FlowStore } from '../../src/runtime/flow-control/store.js';

// One name rule (src/common/names.ts) for every part and store: a name the budget accepts, the breaker,
// flow control and each store accept too, and one the rule refuses, every part refuses up front (never
// half-way through a decision). A job name is mapped (`jobDependencyName`) into a name they all accept.
// Run for each backend by tests/names.property.test.ts (memory, Redis, PostgreSQL) and
// tests/cluster/stores.test.ts (Redis Cluster).

// Text built from what tends to break a name somewhere: key separators and braces, escapes, whitespace
// alone, U+0000 and other control characters, lone surrogates, astral characters, and names near 200.
const unit = fc.constantFrom(
  ' ',
  ':',
  '{',
  '}',
  '%',
  '%3A',
  '~',
  '\n',
  '\t',
  '\u0000',
  '\u007F',
  '\uFEFF',
  '\uD800',
  '\uDFFF',
  '😀',
  'é',
  'a',
  '0',
);
export const names = fc.oneof(
  fc.string({ unit, maxLength: 10 }),
  fc.string({ unit: 'binary', maxLength: 10 }),
  fc
    .tuple(fc.integer({ min: 195, max: 205 }), fc.string({ unit, maxLength: 3 }))
    .map(([n, tail]) => 'x'.repeat(n - tail.length) + tail),
  fc.constantFrom('', ' ', '  ', 'search', `a~${'0'.repeat(32)}`),
);

export interface NameBackend {
  budget: BudgetStore;
  breaker: BreakerStore & BreakerListing;
  flow: FlowStore;
}

/** What each part says of `dependency`: 'ok', or the message it refused it with. */
async function verdicts(backend: NameBackend, dependency: string): Promise<Record<string, string>> {
  const budget = new RetryBudget({ store: backend.budget, minAllowance: 1 });
  const breaker = new CircuitBreaker({ store: backend.breaker, stateCacheMs: 0 });
  const attempt = async (work: () => unknown): Promise<string> => {
    try {
      await work();
      return 'ok';
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  };
  try {
    return {
      budget: await attempt(async () => {
        await budget.trySpend(dependency);
        await budget.state(dependency);
      }),
      breaker: await attempt(async () => {
        const admission = await breaker.acquire(dependency);
        await breaker.recordFailure(dependency, admission);
        await breaker.state(dependency);
      }),
      'flow control': await attempt(() =>
        resolveFlowControlOptions({
          store: backend.flow,
          queueDependency: dependency,
          maxRatePerSecond: { [dependency]: 5 },
        }),
      ),
    };
  } finally {
    await budget.close();
    await breaker.close();
  }
}

let jobs = 0;

/** Uses `dependency` in the flow store as flow control does: how many more jobs it holds parked after. */
async function useFlowStore(flow: FlowStore, dependency: string): Promise<number> {
  await flow.markDown(dependency);
  await flow.read(dependency);
  const before = await flow.parked(dependency, 'names');
  await flow.park(dependency, 'names', `job-${jobs++}`, 60_000);
  return (await flow.parked(dependency, 'names')) - before;
}

export function describeNameAgreement(label: string, open: () => Promise<NameBackend>, numRuns: number) {
  describe(`names on ${label}`, () => {
    it('no name is accepted by one part and refused by the next', async () => {
      const backend = await open();
      await fc.assert(
        fc.asyncProperty(names, async (name) => {
          const accepted = dependencyNameProblem(name) === undefined;
          const said = await verdicts(backend, name);
          const expected = accepted ? 'ok' : expect.stringContaining(dependencyNameProblem(name) ?? '');
          expect(said).toEqual({ budget: expected, breaker: expected, 'flow control': expected });
          if (accepted) expect(await useFlowStore(backend.flow, name)).toBe(1);
        }),
        { numRuns },
      );
    });

    it('every job name maps to a dependency that every part and store accepts and lists as it is', async () => {
      const backend = await open();
      const seen = new Set<string>();
      await fc.assert(
        fc.asyncProperty(names, async (name) => {
          const dependency = jobDependencyName(name);
          expect(dependencyNameProblem(dependency)).toBeUndefined();
          expect(await verdicts(backend, dependency)).toEqual({
            budget: 'ok',
            breaker: 'ok',
            'flow control': 'ok',
          });
          expect(await useFlowStore(backend.flow, dependency)).toBe(1);
          seen.add(dependency);
        }),
        { numRuns },
      );
      // What the stores list is exactly what was written: no name was altered on its way in or out.
      expect(new Set(await backend.budget.dependencies())).toEqual(seen);
      expect(new Set((await backend.breaker.list()).map((b) => b.dependency))).toEqual(seen);
    });
  });
}
