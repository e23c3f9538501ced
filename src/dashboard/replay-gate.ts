import type { BudgetSnapshot } from '../budget/types.js';
import type { HealthGate } from '../runtime/replay/replay-pacing.js';
import { budgetStatusOf } from '../status/budget.js';
import type { ConsoleBackend } from './backend.js';

/**
 * The console's "when healthy": a dependency's budget is not denying retries, and its breaker is not
 * open, as the fleet's stores say.
 */
export function consoleHealthGate(backend: ConsoleBackend): HealthGate {
  const { status, breakers } = backend;
  return {
    pollMs: 500,
    budget: {
      state: async (dependency) =>
        ((status.budget ? await budgetStatusOf(status.budget, dependency) : undefined) ?? {
          allowance: 1,
          spent: 0,
          denied: 0,
        }) as BudgetSnapshot,
    },
    isHealthy: async (dependency) =>
      (await breakers.list()).find((b) => b.dependency === dependency)?.state !== 'open',
  };
}
