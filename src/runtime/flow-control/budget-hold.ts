import type { BudgetGate } from '../../policy/types.js';

/**
 * Holding what the retry budget refuses. Under flow control in `enforce` mode, a transient failure the
 * budget refuses a retry for, and a run admission refuses for the budget, are held, not dead-lettered:
 * the job is deferred past the budget's window without charging an attempt (as `onExhausted: 'defer'`
 * does) and asks the budget again when it comes back, until the budget admits it, or until the next
 * deferral would pass its `maxAge` (then it is dead-lettered `budget-exhausted`, as before). The budget's
 * own `onExhausted` applies only without flow control, in `shadow` mode, or with flow control switched
 * off (`enabled: false`, `stormguard flow off`). Policy stays pure: `decide` and `admit` are only handed a
 * budget gate that says `defer`.
 */

/**
 * What {@link budgetUnderFlow} asks of flow control: whether it holds budget refusals now.
 * `FlowController` is one.
 *
 * @example
 * const holder: BudgetDenialHolder = { holdsBudgetDenials: async () => true };
 */
export interface BudgetDenialHolder {
  holdsBudgetDenials(): Promise<boolean>;
}

/**
 * The budget gate `decide` and admission ask: `budget` itself without flow control; with it, the same
 * budget (every `trySpend` goes to it) whose `onExhausted` reads `defer` once it has refused and `flow`
 * holds budget refusals now. Flow control is asked only on a refusal, so a granted retry costs nothing
 * more. `decide` and `admit` read `onExhausted` after the refusal; read before, it is the budget's own.
 *
 * @example
 * const decision = await decide({ ...ctx, budget: budgetUnderFlow(budget, flow) });
 * // refused under enforce mode: { action: 'retry', chargesAttempt: false, cause: 'budget-deferred', … }
 */
export function budgetUnderFlow(budget: BudgetGate, flow: BudgetDenialHolder | undefined): BudgetGate {
  if (flow === undefined || budget.onExhausted === 'defer') return budget;
  let held = false;
  return {
    get onExhausted() {
      return held ? 'defer' : budget.onExhausted;
    },
    trySpend: async (dependency) => {
      const verdict = await budget.trySpend(dependency);
      held = !verdict.granted && (await flow.holdsBudgetDenials());
      return verdict;
    },
  };
}
