import type { AttentionReason, DependencyStatus } from './types.js';

/** Every reason, most pressing first: the order of `attention` and the weight of `needsAttention`. */
const ORDER: readonly AttentionReason[] = [
  'breaker-forced-open',
  'breaker-open',
  'breaker-half-open',
  'budget-exhausted',
  'budget-denying',
  'budget-unreadable',
  'degraded',
  'marked-down',
  'limit-held',
  'limit-paused',
  'workers-paused',
  'jobs-parked',
  'limit-pinned',
  'breaker-forced-closed',
  'dead-letters',
];

/**
 * Why a dependency needs an operator's eyes, most pressing first (pure: derived from its parts).
 *
 * @example
 * attentionOf({ dependency: 'search', breaker: { state: 'open', ... }, attention: [] }); // ['breaker-open']
 */
export function attentionOf(status: Omit<DependencyStatus, 'attention'>): AttentionReason[] {
  const found = new Set<AttentionReason>();
  const { budget, breaker, deadLetters } = status;
  if (breaker?.override?.state === 'open') found.add('breaker-forced-open');
  else if (breaker?.override?.state === 'closed') found.add('breaker-forced-closed');
  else if (breaker?.state === 'open') found.add('breaker-open');
  else if (breaker?.state === 'half-open') found.add('breaker-half-open');
  if (budget?.unreadable !== undefined) found.add('budget-unreadable');
  else if (budget) {
    if (budget.headroom === 0) found.add('budget-exhausted');
    if (budget.denied > 0) found.add('budget-denying');
  }
  if (budget?.degraded || breaker?.degraded) found.add('degraded');
  if (status.flow?.down) found.add('marked-down');
  if (status.limits?.hold) found.add('limit-held');
  if (status.limits?.paused) found.add('limit-paused');
  if (status.limits?.pinned) found.add('limit-pinned');
  if ((status.pausedWorkers ?? 0) > 0) found.add('workers-paused');
  if ((status.parkedJobs ?? 0) > 0) found.add('jobs-parked');
  if ((deadLetters?.total ?? 0) > 0) found.add('dead-letters');
  return ORDER.filter((reason) => found.has(reason));
}

/**
 * The names of the dependencies that need attention, the most pressing first: by their most pressing
 * reason, then by how many reasons they have, then by name.
 *
 * @example
 * needsAttention(status.dependencies); // ['search', 'mail']
 */
export function needsAttention(dependencies: readonly DependencyStatus[]): string[] {
  const rank = (d: DependencyStatus) => ORDER.indexOf(d.attention[0]!);
  return dependencies
    .filter((d) => d.attention.length > 0)
    .sort(
      (a, b) =>
        rank(a) - rank(b) ||
        b.attention.length - a.attention.length ||
        (a.dependency < b.dependency ? -1 : a.dependency > b.dependency ? 1 : 0),
    )
    .map((d) => d.dependency);
}
