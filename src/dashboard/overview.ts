import type { BreakerStateName } from '../breaker/types.js';
import type { BudgetStatus } from '../budget/status.js';
import type { DeadLetterReason } from '../policy/types.js';
import { DEAD_LETTER_REASONS } from '../runtime/dead-letter-record.js';
import type { ConsoleBackend } from './backend.js';

/**
 * One dependency on the overview: its budget, its breaker and the dead letters attributed to it.
 * Plain JSON, sent to the browser as it is.
 */
export interface DependencyView {
  dependency: string;
  budget?: Pick<
    BudgetStatus,
    'allowance' | 'spent' | 'denied' | 'successes' | 'headroom' | 'windowMs' | 'ratio' | 'minAllowance'
  > & { unreadable?: string };
  breaker?: {
    state: BreakerStateName;
    failures: number;
    volume: number;
    consecutiveFailures: number;
    openedAtMs?: number;
    halfOpenAtMs?: number;
    degraded: boolean;
  };
  /** Dead letters of this dependency over every queue (by reason: see its queues). */
  deadLetters: { total: number };
  /** Why it needs attention, most urgent first; empty when it does not. */
  attention: string[];
}

/** One registered dead-letter queue on the overview. */
export interface QueueView {
  queue: string;
  count: number;
  byReason: Partial<Record<DeadLetterReason, number>>;
  evicted: number;
}

/**
 * What the overview shows at one moment: dependencies needing attention first.
 *
 * @example
 * const snapshot = await readOverview(backend, Date.now());
 * snapshot.dependencies.filter((d) => d.attention.length > 0);
 */
export interface OverviewSnapshot {
  atMs: number;
  dependencies: DependencyView[];
  queues: QueueView[];
}

/**
 * Reads the fleet's state once. Every count is an index read (a ZCOUNT per queue and reason, per queue
 * and dependency), so its cost follows the number of queues, dependencies and reasons, never the number
 * of dead letters.
 */
export async function readOverview(backend: ConsoleBackend, atMs: number): Promise<OverviewSnapshot> {
  const store = backend.deadLetters;
  const [budgets, breakers, queues] = await Promise.all([
    backend.budgets(),
    backend.breakers(),
    store.queues(),
  ]);
  const names = new Set<string>([...budgets.map((b) => b.dependency), ...breakers.map((b) => b.dependency)]);
  const queueViews = await Promise.all(
    queues.map(async (q): Promise<QueueView> => {
      const counts = await Promise.all(DEAD_LETTER_REASONS.map((reason) => store.count(q.queue, { reason })));
      return { queue: q.queue, count: q.count, evicted: q.evicted, byReason: nonZero(counts) };
    }),
  );
  // Per dependency, the total only: one ZCOUNT per queue. A count by dependency and reason together
  // walks an index (two filters), which would make one update grow with the queue.
  const perDependency = new Map<string, DependencyView['deadLetters']>();
  await Promise.all(
    [...names].map(async (dependency) => {
      const counts = await Promise.all(queues.map((q) => store.count(q.queue, { dependency })));
      perDependency.set(dependency, { total: counts.reduce((a, b) => a + b, 0) });
    }),
  );
  const dependencies = [...names].sort().map((dependency): DependencyView => {
    const view: DependencyView = {
      dependency,
      deadLetters: perDependency.get(dependency) ?? { total: 0 },
      attention: [],
    };
    const budget = budgets.find((b) => b.dependency === dependency);
    if (budget) {
      const { allowance, spent, denied, successes, headroom, windowMs, ratio, minAllowance } = budget;
      view.budget = { allowance, spent, denied, successes, headroom, windowMs, ratio, minAllowance };
      if (budget.unreadable) view.budget.unreadable = budget.unreadable;
    }
    const breaker = breakers.find((b) => b.dependency === dependency);
    if (breaker) {
      view.breaker = {
        state: breaker.state,
        failures: breaker.failures,
        volume: breaker.volume,
        consecutiveFailures: breaker.consecutiveFailures,
        degraded: breaker.degraded,
      };
      if (breaker.openedAtMs !== undefined) view.breaker.openedAtMs = breaker.openedAtMs;
      if (breaker.halfOpenAtMs !== undefined) view.breaker.halfOpenAtMs = breaker.halfOpenAtMs;
    }
    view.attention = attentionOf(view);
    return view;
  });
  dependencies.sort((a, b) => urgency(b) - urgency(a) || a.dependency.localeCompare(b.dependency));
  return { atMs, dependencies, queues: queueViews };
}

/** Why a dependency needs attention, most urgent first. */
function attentionOf(view: DependencyView): string[] {
  const out: string[] = [];
  if (view.breaker?.state === 'open') out.push('breaker open');
  if (view.breaker?.state === 'half-open') out.push('breaker half-open');
  if (view.budget?.unreadable) out.push(`budget unreadable: ${view.budget.unreadable}`);
  if (view.budget && view.budget.denied > 0) out.push(`${view.budget.denied} retries denied`);
  else if (view.budget && view.budget.headroom === 0) out.push('no retry headroom');
  if (view.deadLetters.total > 0) out.push(`${view.deadLetters.total} dead letters`);
  return out;
}

function urgency(view: DependencyView): number {
  let score = 0;
  if (view.breaker?.state === 'open') score += 8;
  if (view.breaker?.state === 'half-open') score += 4;
  if (view.budget && (view.budget.denied > 0 || view.budget.unreadable)) score += 2;
  if (view.deadLetters.total > 0) score += 1;
  return score;
}

function nonZero(counts: number[]): Partial<Record<DeadLetterReason, number>> {
  const out: Partial<Record<DeadLetterReason, number>> = {};
  DEAD_LETTER_REASONS.forEach((reason, i) => {
    if ((counts[i] ?? 0) > 0) out[reason] = counts[i];
  });
  return out;
}
