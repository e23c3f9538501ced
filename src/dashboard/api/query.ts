import { parseDuration } from '../../common/duration.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import { DEAD_LETTER_REASONS, type DeadLetterReason } from '../../policy/types.js';
import type { DeadLetterFilter } from '../../runtime/contracts.js';

/**
 * The dead-letter filter a console URL or request body names: `reason`, `dependency`, `name`, and `age`
 * (a duration such as `15m` or `2h`: records dead-lettered within it). Empty values mean "any".
 *
 * @example
 * filterOf(new URLSearchParams('reason=permanent&age=1h'), Date.now());
 */
export function filterOf(get: (key: string) => string | null | undefined, nowMs: number): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  const reason = get('reason') || undefined;
  if (reason !== undefined) {
    if (!DEAD_LETTER_REASONS.includes(reason as DeadLetterReason))
      throw new InvalidInputError(`reason: "${reason}" is not one of ${DEAD_LETTER_REASONS.join(', ')}`);
    filter.reason = reason as DeadLetterReason;
  }
  const dependency = get('dependency') || undefined;
  if (dependency !== undefined) filter.dependency = dependency;
  const name = get('name') || undefined;
  if (name !== undefined) filter.name = name;
  const age = get('age') || undefined;
  if (age !== undefined) filter.since = Math.max(0, nowMs - parseDuration(age, 'age'));
  return filter;
}

/** A whole number in [min, max] from the query, or the default. */
export function intOf(value: string | null | undefined, fallback: number, min: number, max: number): number {
  if (value === null || value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new InvalidInputError(`expected a whole number from ${min} to ${max}, got "${value}"`);
  return n;
}

/** How many of reason, dependency and name a filter sets (one or none: a count is one index read). */
export function indexedFields(filter: DeadLetterFilter): number {
  return [filter.reason, filter.dependency, filter.name].filter((v) => v !== undefined).length;
}
