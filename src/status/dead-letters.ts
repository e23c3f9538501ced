import { DEAD_LETTER_REASONS, type DeadLetterReason } from '../policy/types.js';
import type { DeadLetterQueueSummary } from '../runtime/contracts.js';
import type { DeadLetterStatusSource, DependencyDeadLetters, QueueStatus } from './types.js';

/**
 * Every queue's counts by reason and by the given dependencies, and each dependency's dead letters
 * over those queues. Counts on one index (by reason, by dependency) are one index count in every
 * store; a dependency's breakdown by reason counts on two indexes, which walks the smaller, so it is
 * skipped where that would pass `breakdownLimit` entries in all.
 */
export async function readDeadLetters(
  source: DeadLetterStatusSource,
  queueNames: readonly string[] | undefined,
  dependencies: readonly string[],
  breakdownLimit: number,
): Promise<{ queues: QueueStatus[]; byDependency: Map<string, DependencyDeadLetters> }> {
  const summaries = await summariesOf(source, queueNames);
  const queues: QueueStatus[] = [];
  const byDependency = new Map<string, DependencyDeadLetters>(
    dependencies.map((d) => [d, { total: 0, byReason: {}, byQueue: {} }]),
  );
  let walkBudget = breakdownLimit;
  for (const summary of summaries) {
    const { queue } = summary;
    const reasons = await countEach(DEAD_LETTER_REASONS, (reason) => source.count(queue, { reason }));
    const deps = await countEach(dependencies, (dependency) => source.count(queue, { dependency }));
    queues.push({ ...summary, byReason: reasons, byDependency: deps });
    for (const [dependency, total] of Object.entries(deps)) {
      const entry = byDependency.get(dependency)!;
      entry.total += total;
      entry.byQueue[queue] = total;
      if (entry.byReason === undefined) continue;
      // Shortcuts that need no walk: the dependency is the whole queue, or a reason is.
      if (total === summary.count) {
        for (const [reason, n] of Object.entries<number>(reasons))
          add(entry.byReason, reason as DeadLetterReason, n);
        continue;
      }
      for (const [reason, n] of Object.entries(reasons) as [DeadLetterReason, number][]) {
        if (n === summary.count) {
          add(entry.byReason, reason, total);
          continue;
        }
        const cost = Math.min(n, total);
        if (cost > walkBudget) {
          delete entry.byReason;
          break;
        }
        walkBudget -= cost;
        add(entry.byReason, reason, await source.count(queue, { reason, dependency }));
      }
    }
  }
  return { queues, byDependency };
}

async function summariesOf(
  source: DeadLetterStatusSource,
  queueNames: readonly string[] | undefined,
): Promise<DeadLetterQueueSummary[]> {
  if (queueNames === undefined) return source.queues();
  const found: DeadLetterQueueSummary[] = [];
  for (const queue of [...new Set(queueNames)].sort()) {
    const summary = await source.queue(queue);
    if (summary) found.push(summary);
  }
  return found;
}

/** `count(key)` for each key, in order; only counts above 0 are kept. */
async function countEach<K extends string>(
  keys: readonly K[],
  count: (key: K) => number | Promise<number>,
): Promise<Record<K, number>> {
  const counts = {} as Record<K, number>;
  for (const key of keys) {
    const n = await count(key);
    if (n > 0) counts[key] = n;
  }
  return counts;
}

function add(counts: Partial<Record<DeadLetterReason, number>>, reason: DeadLetterReason, n: number): void {
  if (n > 0) counts[reason] = (counts[reason] ?? 0) + n;
}
