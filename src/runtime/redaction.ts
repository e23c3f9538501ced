import type { AttemptEntry, DeadLetterRecord } from './contracts.js';

/**
 * A dead-letter store's redaction hook: given a copy of the record about to be filed, returns the record
 * to store instead (synchronously). It may change `data`, `opts`, `lastError` and `detail`; the fields
 * that identify, index and replay the record (queue, jobId, createdAt, name, reason, dependency,
 * attemptsMade, timestamps, replays, replayedFrom, idempotencyKey) are kept as they were. Each error of
 * the record's attempt `history` goes through the hook too, as the `lastError` of a copy of the record,
 * so a hook written for `lastError` covers every attempt's message without knowing the history.
 *
 * @example
 * const redact: DeadLetterRedaction = (record) => ({
 *   ...record,
 *   data: { ...(record.data as object), cardNumber: '[redacted]' },
 *   lastError: { ...record.lastError, stack: undefined },
 * });
 * const store = new RedisDeadLetterStore({ redis, redact });
 */
export type DeadLetterRedaction = (record: DeadLetterRecord) => DeadLetterRecord;

/** The fields a redaction may change; every other field is the original's. */
const REDACTABLE = ['data', 'opts', 'lastError', 'detail'] as const;

/**
 * The record as the store keeps it: `redact`'s answer for the redactable fields, the original for the
 * rest; `record` itself when there is no hook. The hook gets a deep copy, so it may change it in place.
 * A hook that throws or returns no record keeps the record from being stored at all (the error says so):
 * a raw value is never written because redaction failed.
 *
 * @example
 * const stored = redactRecord(record, (r) => ({ ...r, data: '[redacted]' }));
 */
export function redactRecord(
  record: DeadLetterRecord,
  redact: DeadLetterRedaction | undefined,
): DeadLetterRecord {
  if (!redact) return record;
  let answer: DeadLetterRecord;
  try {
    answer = redact(structuredClone(record));
  } catch (error) {
    throw new Error(
      `dead-letter redaction of ${record.queue}/${record.jobId} failed, so the record was not stored: ${
        error instanceof Error ? error.message : String(error)
      }`,
      { cause: error },
    );
  }
  if (answer === null || typeof answer !== 'object')
    throw new TypeError(
      `dead-letter redaction of ${record.queue}/${record.jobId} returned ${answer === null ? 'null' : typeof answer}, so the record was not stored: return the record to store`,
    );
  const kept: DeadLetterRecord = { ...record };
  for (const field of REDACTABLE) (kept as unknown as Record<string, unknown>)[field] = answer[field];
  if (kept.lastError && kept.lastError.stack === undefined) delete kept.lastError.stack;
  if (record.history) kept.history = record.history.map((entry) => redactEntry(record, entry, redact));
  return kept;
}

/** An attempt's error as the hook redacts it when it is the record's `lastError`. */
function redactEntry(
  record: DeadLetterRecord,
  entry: AttemptEntry,
  redact: DeadLetterRedaction,
): AttemptEntry {
  const { history: _history, ...rest } = record;
  const asLast: DeadLetterRecord = {
    ...rest,
    lastError: { name: entry.error.name, message: entry.error.message, classification: entry.classification },
  };
  const answer = redactRecord(asLast, redact).lastError;
  return { ...entry, error: { name: String(answer?.name ?? ''), message: String(answer?.message ?? '') } };
}
