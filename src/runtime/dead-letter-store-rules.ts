import { z } from 'zod';
import type { AuditLog } from '../audit/types.js';
import { parseWith } from '../common/validation.js';
import type { DeadLetterReason } from '../policy/types.js';
import type {
  AttemptState,
  DeadLetterEvictions,
  DeadLetterFiling,
  DeadLetterRecord,
  RetentionLimits,
} from './contracts.js';

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

/**
 * Counts one filing's evictions, by the evicted record's reason and by the limit that evicted it, into the
 * {@link DeadLetterEvictions} a filing reports. The memory store uses it; the Redis and PostgreSQL stores
 * count in their script and function and report the same shape.
 *
 * @example
 * const tally = new EvictionTally();
 * tally.add('permanent', 'maxCount');
 * tally.report(); // { count: 1, reasons: { permanent: 1 }, limits: { maxCount: 1 } }
 */
export class EvictionTally {
  count = 0;
  readonly #reasons: Partial<Record<DeadLetterReason, number>> = {};
  readonly #limits: { maxAgeMs?: number; maxCount?: number } = {};

  add(reason: string, limit: 'maxAgeMs' | 'maxCount', n = 1): void {
    if (n <= 0) return;
    this.count += n;
    const key = reason as DeadLetterReason;
    this.#reasons[key] = (this.#reasons[key] ?? 0) + n;
    this.#limits[limit] = (this.#limits[limit] ?? 0) + n;
  }

  /** The report, or `undefined` when nothing was evicted. */
  report(): DeadLetterEvictions | undefined {
    if (this.count === 0) return undefined;
    return { count: this.count, reasons: { ...this.#reasons }, limits: { ...this.#limits } };
  }
}

/**
 * Writes the one audit entry of a filing that evicted records (action `dead-letters.evict`, target the
 * queue, detail the counts and the id filed), after the filing. A log that cannot be written never undoes
 * or fails the filing: the filing comes back with `auditError` set in its `evicted`, and the eviction
 * event and metric still count it.
 *
 * @example
 * const filing = await auditEvictions(audit, 'index', { id: '17', created: true, evicted });
 */
export async function auditEvictions(
  audit: AuditLog,
  queue: string,
  filing: DeadLetterFiling & { evicted: DeadLetterEvictions },
): Promise<DeadLetterFiling> {
  const { count, reasons, limits } = filing.evicted;
  try {
    await audit.append({
      by: 'stormguard',
      action: 'dead-letters.evict',
      target: queue,
      reason: `retention evicted ${count} record(s) when record ${filing.id} was filed`,
      detail: { count, reasons, limits, filed: filing.id },
    });
    return filing;
  } catch (error) {
    return {
      ...filing,
      evicted: { ...filing.evicted, auditError: error instanceof Error ? error.message : String(error) },
    };
  }
}
