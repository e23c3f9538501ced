import { z } from 'zod';
import { parseWith } from '../common/validation.js';
import type { AttemptState, DeadLetterRecord, RetentionLimits } from './contracts.js';

const RetentionSchema = z
  .object({
    maxAgeMs: z.number().int().positive().optional(),
    maxCount: z.number().int().positive().optional(),
  })
  .strict();

/**
 * Checks retention limits, naming the field and the rule when one is wrong.
 *
 * @example
 * assertRetention({ maxAgeMs: 30 * 86_400_000, maxCount: 100_000 });
 */
export function assertRetention(retention: RetentionLimits): void {
  parseWith(RetentionSchema, retention, 'dead-letter retention');
}

/**
 * The attempt state a store writes with a filed record: the caller's, with the dead-lettered mark taken
 * from the record itself and the id the store gave it, and without the attempt history (the record holds
 * it, redacted). The mark is what makes filing idempotent.
 *
 * @example
 * finalStateOf(record, { attempts: 5, deferrals: 0 }, '17').deadLettered?.recordId; // '17'
 */
export function finalStateOf(record: DeadLetterRecord, state: AttemptState, recordId: string): AttemptState {
  const { history: _history, ...kept } = state;
  return {
    ...kept,
    deadLettered: { reason: record.reason, detail: record.detail, recordId, at: record.deadLetteredAt },
  };
}

/**
 * How many records one filing evicts at most. Retention catches up over a few filings after its limits
 * are lowered, so no single write does unbounded work.
 */
export const MAX_EVICTIONS_PER_FILING = 100;
