/**
 * docs/breaker.md, "Wrapping calls yourself", kept compiling: `npm test` type-checks this file against
 * the built package, and tests/docs/breaker-page.test.ts checks that the page shows this code.
 */
import { BrokenCircuitError, CircuitBreaker, MemoryBudgetStore, RetryBudget } from 'stormguard';

// Stand-ins for your own client and for the answers it treats as the dependency's health.
const search = { query: async (q: string) => [q] };
const saysUnhealthy = (error: unknown) => !(error instanceof Error && error.message.startsWith('http-4'));
const breaker = new CircuitBreaker();
const budget = new RetryBudget({ store: new MemoryBudgetStore() });

export async function query(q: string): Promise<string[]> {
  const admission = await breaker.acquire('search');
  if (!admission.allowed) {
    const { state, halfOpenAtMs } = admission.snapshot;
    // Nothing was sent, so nothing is recorded.
    throw state === 'half-open'
      ? new BrokenCircuitError('search', undefined, 'half-open') // every probe slot is taken
      : new BrokenCircuitError('search', halfOpenAtMs, 'open');
  }
  try {
    const hits = await search.query(q);
    await breaker.recordSuccess('search', admission); // the same admission: a probe's success may close it
    budget.recordSuccess('search'); // the budget takes no admission: every success refills it
    return hits;
  } catch (error) {
    // A 4xx is an answer: the dependency is healthy, the request was wrong.
    if (saysUnhealthy(error)) await breaker.recordFailure('search', admission);
    else await breaker.recordSuccess('search', admission);
    throw error;
  }
}
