import type { Disposable } from '../common/events.js';
import { noteDependency, type ObserverContext } from './context.js';
import { BUDGET_MODES, LabelBounds } from './labels.js';
import type { ObservableBudget, ObservedBudgetState } from './sources.js';
import { withTimeout } from './timeout.js';

/**
 * Counts a budget's grants, denials and store outages as they happen in this process, and at each
 * scrape reads every dependency's fleet-wide state from the store, so every worker (and
 * `stormguard metrics serve`) reports the same figures: the fleet's, not its own slice.
 */
export function observeBudgetState(budget: ObservableBudget, ctx: ObserverContext): Disposable {
  const { instruments: m, bounds } = ctx;
  // Dependencies this budget has shown (its events, its store's listing): when the store cannot be read
  // they are still reported, as degraded. Dependencies seen only in worker events are left out: a job's
  // own name is a dependency for attempts, but has no budget unless the budget says so.
  const known = new Set<string>();
  const remember = (dependency: string | undefined) => {
    const label = noteDependency(ctx, dependency);
    if (label === dependency) known.add(dependency);
    return label;
  };

  const subs = [
    budget.events.on('granted', (e) => {
      m.budgetGrants.inc({ dependency: remember(e.dependency) });
    }),
    budget.events.on('denied', (e) => {
      m.budgetDenials.inc({
        dependency: remember(e.dependency),
        mode: LabelBounds.closed(e.mode, BUDGET_MODES),
      });
    }),
    budget.events.on('degraded', (e) => {
      if (e.dependency) remember(e.dependency);
      m.budgetStoreOutages.inc();
    }),
  ];

  const report = (snapshot: ObservedBudgetState | undefined) => {
    if (!snapshot) return;
    const labels = { dependency: bounds.open('dependency', snapshot.dependency) };
    m.budgetAllowance.set(labels, snapshot.allowance);
    m.budgetSpent.set(labels, snapshot.spent);
    m.budgetDenied.set(labels, snapshot.denied);
    m.budgetSuccesses.set(labels, snapshot.successes);
    m.budgetWindow.set(labels, snapshot.windowMs / 1000);
    m.budgetDegraded.set(labels, snapshot.degraded ? 1 : 0);
    const ratio = snapshot.ratio ?? budget.ratio;
    const minAllowance = snapshot.minAllowance ?? budget.minAllowance;
    if (ratio !== undefined) m.budgetRatio.set(labels, ratio);
    if (minAllowance !== undefined) m.budgetMinAllowance.set(labels, minAllowance);
  };
  const unreadable = (dependency: string, error: unknown) => {
    m.budgetStateErrors.inc();
    m.budgetDegraded.set({ dependency: bounds.open('dependency', dependency) }, 1);
    ctx.onError(error);
  };

  const refresh = async (): Promise<void> => {
    // One bound for the whole read: listing the dependencies and reading their states share it.
    const startedAt = performance.now();
    const remaining = () => Math.max(1, ctx.readTimeoutMs - (performance.now() - startedAt));
    let dependencies: readonly string[];
    try {
      dependencies = await withTimeout(budget.dependencies(), remaining(), 'the budget store');
    } catch (error) {
      if (known.size === 0) {
        m.budgetStateErrors.inc();
        ctx.onError(error);
      }
      for (const dependency of known) unreadable(dependency, error);
      return;
    }
    for (const dependency of dependencies) remember(dependency);
    await Promise.all(
      [...known].map(async (dependency) => {
        try {
          report(await withTimeout(budget.state(dependency), remaining(), `budget state of ${dependency}`));
        } catch (error) {
          unreadable(dependency, error);
        }
      }),
    );
  };
  const removeSource = ctx.scrape.add({ refresh });

  return {
    dispose: () => {
      for (const sub of subs) sub.dispose();
      removeSource();
    },
  };
}
