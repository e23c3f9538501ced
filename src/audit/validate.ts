import { z } from 'zod';
import { parseWith } from '../common/validation.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { AuditPageRequest, AuditWrite } from './types.js';

/**
 * The default bound of every audit log: the newest 10 000 entries are kept.
 *
 * @example
 * const audit = new MemoryAuditLog({ maxEntries: DEFAULT_AUDIT_ENTRIES }); // the same as the default
 */
export const DEFAULT_AUDIT_ENTRIES = 10_000;

const text = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

const WriteSchema = z.object({
  by: text(200).optional(),
  action: z
    .string()
    .regex(
      /^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$/,
      'must look like "<area>.<verb>", for example "breaker.reset"',
    )
    .max(64, 'must be at most 64 characters'),
  target: text(500),
  reason: text(1_000).optional(),
  detail: z.record(z.string(), z.unknown()).optional(),
});

const PageSchema = z.object({
  limit: z
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(1_000, 'must be at most 1000'),
  cursor: z.string().optional(),
});

/**
 * A write as a store keeps it: checked (a clear error naming the field), trimmed, `by` defaulting to
 * `anonymous`, and `detail` round-tripped through JSON so only plain JSON is stored.
 *
 * @example
 * normalizeAuditWrite({ action: 'breaker.reset', target: 'search' }); // { by: 'anonymous', action: 'breaker.reset', target: 'search' }
 */
export function normalizeAuditWrite(write: AuditWrite): Required<Pick<AuditWrite, 'by'>> & AuditWrite {
  const valid = parseWith(WriteSchema, write, 'audit entry');
  const entry: Required<Pick<AuditWrite, 'by'>> & AuditWrite = {
    by: valid.by ?? 'anonymous',
    action: valid.action,
    target: valid.target,
  };
  if (valid.reason !== undefined) entry.reason = valid.reason;
  if (valid.detail !== undefined)
    entry.detail = JSON.parse(JSON.stringify(valid.detail)) as Record<string, unknown>;
  return entry;
}

/** Checks a page request; returns the cursor as a whole number (the id entries start below), if any. */
export function parseAuditPage(page: AuditPageRequest): { limit: number; before?: number } {
  const valid = parseWith(PageSchema, page, 'audit page');
  if (valid.cursor === undefined) return { limit: valid.limit };
  const before = Number(valid.cursor);
  if (!/^\d{1,15}$/.test(valid.cursor) || !Number.isSafeInteger(before))
    throw new InvalidInputError(
      `audit page cursor ${JSON.stringify(valid.cursor)}: not a cursor this log gave; pass the previous page's next`,
    );
  return { limit: valid.limit, before };
}

/** Checks a store's bound. */
export function checkMaxEntries(maxEntries: number | undefined): number {
  return parseWith(
    z.number().int('must be a whole number').min(1, 'must be at least 1'),
    maxEntries ?? DEFAULT_AUDIT_ENTRIES,
    'audit log maxEntries',
  );
}
