import { z } from 'zod';
import { parseWith } from '../common/validation.js';
import type { DeadLetterReason } from '../policy/types.js';
import type { DeadLetterRecord } from './types.js';

/**
 * The dead-letter reasons stormguard writes, for validating filters.
 *
 * @example
 * DEAD_LETTER_REASONS.includes('budget-exhausted'); // true
 */
export const DEAD_LETTER_REASONS = [
  'permanent',
  'max-attempts',
  'max-age',
  'budget-exhausted',
  'breaker-open',
  'retry-after-too-long',
  'no-idempotency-key',
] as const satisfies readonly DeadLetterReason[];

/**
 * Selects dead-letter records. Every field is optional and they combine with AND; an empty filter
 * selects everything.
 *
 * @example
 * const filter: DeadLetterFilter = { reason: 'budget-exhausted', dependency: 'search', sinceMs: 3_600_000 };
 */
export interface DeadLetterFilter {
  reason?: DeadLetterReason;
  dependency?: string;
  /** The original job name (the task). */
  name?: string;
  /** Only records dead-lettered at or after this epoch ms. */
  since?: number;
  /** Only records dead-lettered within the last `sinceMs` milliseconds (relative to the clock's now). */
  sinceMs?: number;
}

const FilterSchema = z.object({
  reason: z.enum(DEAD_LETTER_REASONS).optional(),
  dependency: z.string().min(1).optional(),
  name: z.string().min(1).optional(),
  since: z.number().finite().nonnegative().optional(),
  sinceMs: z.number().finite().nonnegative().optional(),
});

/**
 * Validates a filter, naming the field and the rule when it is wrong.
 *
 * @example
 * parseFilter({ reason: 'permanent', sinceMs: 3_600_000 });
 */
export function parseFilter(input: DeadLetterFilter): DeadLetterFilter {
  return parseWith(FilterSchema, input, 'dead-letter filter');
}

/**
 * A predicate for `filter`, with `sinceMs` resolved against `nowMs` once, so one listing or replay uses
 * one cut-off.
 *
 * @example
 * const keep = recordMatcher({ reason: 'permanent' }, Date.now());
 * records.filter(keep);
 */
export function recordMatcher(
  filter: DeadLetterFilter,
  nowMs: number,
): (record: DeadLetterRecord) => boolean {
  const cutoffs = [filter.since, filter.sinceMs === undefined ? undefined : nowMs - filter.sinceMs];
  const since = Math.max(...cutoffs.map((c) => c ?? Number.NEGATIVE_INFINITY));
  return (record) =>
    (filter.reason === undefined || record.reason === filter.reason) &&
    (filter.dependency === undefined || record.dependency === filter.dependency) &&
    (filter.name === undefined || record.name === filter.name) &&
    record.deadLetteredAt >= since;
}
