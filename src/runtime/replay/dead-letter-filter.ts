import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { DeadLetterFilter as StoreFilter } from '../contracts.js';
import { parseDeadLetterFilter } from '../dead-letter-record.js';

export { DEAD_LETTER_REASONS } from '../../policy/types.js';

/**
 * Selects dead-letter records: the store's filter (reason, dependency, name, `since`, `before`) plus
 * `sinceMs`, a window back from now. Every field is optional and they combine with AND; an empty filter
 * selects everything.
 *
 * @example
 * const filter: DeadLetterFilter = { reason: 'budget-exhausted', dependency: 'search', sinceMs: 3_600_000 };
 */
export interface DeadLetterFilter extends StoreFilter {
  /** Only records dead-lettered within the last `sinceMs` milliseconds (relative to the clock's now). */
  sinceMs?: number;
}

/**
 * The store filter for `filter`, validated, with `sinceMs` resolved against `nowMs` once (so one listing or
 * replay uses one cut-off; with `since` as well, the later of the two wins).
 *
 * @example
 * resolveFilter({ reason: 'permanent', sinceMs: 3_600_000 }, Date.now()); // { reason: 'permanent', since: … }
 */
export function resolveFilter(filter: DeadLetterFilter, nowMs: number): StoreFilter {
  const { sinceMs, ...rest } = filter;
  if (sinceMs !== undefined && !(Number.isFinite(sinceMs) && sinceMs >= 0))
    throw new InvalidInputError(`dead-letter filter: sinceMs must be a number of ms >= 0 (got ${sinceMs})`);
  const parsed = parseDeadLetterFilter(rest);
  if (sinceMs !== undefined) parsed.since = Math.max(parsed.since ?? 0, Math.max(0, nowMs - sinceMs));
  return parsed;
}
