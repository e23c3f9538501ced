import type { Clock } from '../common/clock.js';
import type { Disposable } from '../common/events.js';
import { withTimeout } from '../common/timeout.js';
import { noteDependency, type ObserverContext } from './context.js';
import { BUDGET_MODES, LabelBounds } from './labels.js';
import type { ObservableBudget, ObservedBudgetState } from './sources.js';

/** Options of `observeBudget`. */
export interface ObserveBudgetOptions {
  /** Dependencies to report from the first scrape on, before the budget has shown them. Default none. */
  dependencies?: readonly string[];
  /**
   * How often the budget's `dependencies()` (a listing of the store) is asked for dependencies other
   * processes use. Default 60 000 ms; 0 asks at every scrape; `Infinity` never (only dependencies this
   * process has used, and `dependencies`, are reported).
   */
  listIntervalMs?: number;
}

/**
 * Counts a budget's grants, denials and store outages as they happen in this process, and at each
 * scrape reads every known dependency's fleet-wide state from the store, so every worker (and
 * `stormguard metrics serve`) reports the same figures: the fleet's, not its own slice.
 *
 * Listing the store's dependencies scans its keys, which is slow on a Redis that also holds many BullMQ
 * jobs: it runs at most every `listIntervalMs`, off the scrape's path once a first list is known, and its
 * failure never marks a dependency degraded (only a failed state read does).
 */
export function observeBudgetState(
  budget: ObservableBudget,
  ctx: ObserverContext & { clock: Clock },
  options: ObserveBudgetOptions = {},
): Disposable {
  const { instruments: m, bounds } = ctx;
  const listIntervalMs = options.listIntervalMs ?? 60_000;
  // Dependencies this budget has shown (its events, its store's listing, the options): when the store
  // cannot be read they are still reported, as degraded. Dependencies seen only in worker events are
  // left out: a job's own name is a dependency for attempts, but has no budget unless the budget says so.
  const known = new Set<string>();
  const remember = (dependency: string | undefined) => {
    const label = noteDependency(ctx, dependency);
    if (label === dependency) known.add(dependency);
    return label;
  };
  for (const dependency of options.dependencies ?? []) remember(dependency);

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
    budget.events.on('flushed', (e) => {
      remember(e.dependency);
    }),
    budget.events.on('degraded', (e) => {
      if (e.dependency) remember(e.dependency);
      m.budgetStoreOutages.inc({});
    }),
  ];

  let listing: Promise<void> | undefined;
  let listedAtMs = Number.NEGATIVE_INFINITY;
  const relist = (): Promise<void> | undefined => {
    if (listing || !(ctx.clock.now() - listedAtMs >= listIntervalMs)) return listing;
    listedAtMs = ctx.clock.now();
    listing = Promise.resolve()
      .then(() => budget.dependencies())
      .then(
        (dependencies) => {
          for (const dependency of dependencies) remember(dependency);
        },
        (error: unknown) => {
          m.budgetStateErrors.inc({});
          ctx.onError(error);
        },
      )
      .finally(() => {
        listing = undefined;
      });
    return listing;
  };

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
    m.budgetStateErrors.inc({});
    m.budgetDegraded.set({ dependency: bounds.open('dependency', dependency) }, 1);
    ctx.onError(error);
  };

  const refresh = async (): Promise<void> => {
    // One bound for the whole read: the listing and the state reads share it.
    const startedAt = performance.now();
    const remaining = () => Math.max(1, ctx.readTimeoutMs - (performance.now() - startedAt));
    const read = new Set<string>();
    const readAll = () =>
      Promise.all(
        [...known]
          .filter((dependency) => !read.has(dependency))
          .map(async (dependency) => {
            read.add(dependency);
            try {
              report(
                await withTimeout(budget.state(dependency), remaining(), `budget state of ${dependency}`),
              );
            } catch (error) {
              unreadable(dependency, error);
            }
          }),
      );
    // A listing in flight runs beside the reads of what is known; what it finds in time is read after it.
    const pending = relist();
    await Promise.all([
      readAll(),
      pending && withTimeout(pending, remaining(), 'the budget store').then(readAll, () => {}),
    ]);
  };
  const removeSource = ctx.scrape.add({ refresh });

  return {
    dispose: () => {
      for (const sub of subs) sub.dispose();
      removeSource();
    },
  };
}
