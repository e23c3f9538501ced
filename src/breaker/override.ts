import { InvalidInputError } from '../errors/invalid-input-error.js';
import { BREAKER_OVERRIDE_OPS } from './machine.js';
import type { BreakerOverrideOp, BreakerOverrideRequest } from './types.js';

const MAX_REASON = 500;
const MAX_BY = 200;

/**
 * Checks an operator's override before any store sees it: a known op, a reason (required: an override
 * nobody can explain later is worse than none) and who asked. Returns the request with its text trimmed;
 * throws an {@link InvalidInputError} naming what is wrong.
 *
 * @example
 * checkOverride('force-open', { reason: ' reindexing ', by: 'alice' }); // { reason: 'reindexing', by: 'alice' }
 * checkOverride('force-open', { reason: '', by: 'alice' }); // throws: reason is required
 */
export function checkOverride(
  op: unknown,
  request: { reason?: unknown; by?: unknown },
): BreakerOverrideRequest {
  if (!BREAKER_OVERRIDE_OPS.includes(op as BreakerOverrideOp))
    throw new InvalidInputError(
      `breaker override ${JSON.stringify(op)}: use one of ${BREAKER_OVERRIDE_OPS.join(', ')}`,
    );
  const reason = typeof request.reason === 'string' ? request.reason.trim() : '';
  if (reason === '' || reason.length > MAX_REASON)
    throw new InvalidInputError(
      `reason: a breaker override needs a reason of 1-${MAX_REASON} characters saying why (for example "search cluster reindexing until 14:00")`,
    );
  const by = request.by === undefined ? 'anonymous' : typeof request.by === 'string' ? request.by.trim() : '';
  if (by === '' || by.length > MAX_BY)
    throw new InvalidInputError(
      `by: who overrides a breaker must be 1-${MAX_BY} characters (an identity, or leave it out for "anonymous")`,
    );
  return { reason, by };
}
