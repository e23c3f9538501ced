import { describeError } from '../common/error-text.js';
import { RedactionFailedError } from '../errors/redaction-failed-error.js';
import type { AttemptEntry, DeadLetterRecord, DeadLetterRedaction } from './contracts.js';

export type { DeadLetterRedaction } from './contracts.js';

/** The fields a redaction may change; every other field is the original's. */
const REDACTABLE = ['data', 'opts', 'lastError', 'detail'] as const;

/**
 * The record as the store keeps it: `redact`'s answer for the redactable fields, the original for the
 * rest; `record` itself when there is no hook. The hook gets a deep copy, so it may change it in place.
 * A hook that throws or returns no record keeps the record from being stored at all (a
 * `RedactionFailedError` says so): a raw value is never written because redaction failed. A safe form the
 * job runtime built after such a refusal ({@link isSafeForm}) holds only stormguard's own markers where the
 * hook's fields were, and is stored as it is, without the hook.
 *
 * @example
 * const stored = redactRecord(record, (r) => ({ ...r, data: '[redacted]' }));
 */
export function redactRecord(
  record: DeadLetterRecord,
  redact: DeadLetterRedaction | undefined,
): DeadLetterRecord {
  if (!redact || isSafeForm(record)) return record;
  let answer: DeadLetterRecord;
  try {
    answer = redact(structuredClone(record));
  } catch (error) {
    throw new RedactionFailedError(
      `dead-letter redaction of ${record.queue}/${record.jobId} failed, so the record was not stored: ${
        error instanceof Error ? error.message : String(error)
      }`,
      describeError(error).name,
      { cause: error },
    );
  }
  if (answer === null || typeof answer !== 'object')
    throw new RedactionFailedError(
      `dead-letter redaction of ${record.queue}/${record.jobId} returned ${answer === null ? 'null' : typeof answer}, so the record was not stored: return the record to store`,
      'no record',
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

const SAFE_FORM = Symbol.for('stormguard.safeForm');

/**
 * Marks a record as a safe form: built by the job runtime after a store refused the original for good,
 * with stormguard's own markers where the data and the error text were. Stores file it without the
 * redaction hook (the hook may be what refused, and there is nothing left for it to redact). The mark is
 * a symbol, so it is never stored and never survives a copy.
 *
 * @example
 * markSafeForm(record); isSafeForm(record); // true
 */
export function markSafeForm<T extends DeadLetterRecord>(record: T): T {
  Object.defineProperty(record, SAFE_FORM, { value: true, enumerable: false });
  return record;
}

/** True for a record built by {@link markSafeForm}. */
export function isSafeForm(record: DeadLetterRecord): boolean {
  return (record as unknown as Record<symbol, unknown>)[SAFE_FORM] === true;
}

/**
 * An error's text as a dead-letter store's hook redacts it when it is a record's `lastError`: `record`
 * gives the hook the job's other fields. With no hook, the text as it is; a hook that throws or answers
 * no error leaves the error's class alone.
 *
 * @example
 * redactErrorText({ name: 'HttpError', message: '503 token=abc' }, record, redact); // { name: 'HttpError', message: '503 token=[redacted]' }
 */
export function redactErrorText(
  error: { name: string; message: string; stack?: string },
  record: DeadLetterRecord,
  redact: DeadLetterRedaction,
): { name: string; message: string; stack?: string } {
  const { history: _history, ...rest } = record;
  const asLast: DeadLetterRecord = {
    ...rest,
    lastError: {
      ...error,
      classification: record.lastError?.classification ?? { retryable: false, reason: 'unknown' },
    },
  };
  try {
    const answer = redactRecord(asLast, redact).lastError;
    if (answer && typeof answer.name === 'string' && typeof answer.message === 'string')
      return keptStackRedacted(error, answer);
  } catch {
    // Fall through: a hook that fails must not let the raw text out.
  }
  return { name: error.name, message: `${error.name} (redaction failed)` };
}

/**
 * The hook's answer, with a stack it left as it was rewritten: a stack starts with the error's message, so
 * a hook that redacts the message alone would let the raw text out through the stack. The rewritten stack
 * is the redacted first line and the original's frames (`at …` lines, which hold no message text).
 *
 * @example
 * keptStackRedacted({ name: 'E', message: 'token=1', stack: 'E: token=1\n    at f' }, { name: 'E', message: 'token=[x]', stack: 'E: token=1\n    at f' });
 * // { name: 'E', message: 'token=[x]', stack: 'E: token=[x]\n    at f' }
 */
export function keptStackRedacted(
  original: { name: string; message: string; stack?: string | undefined },
  answer: { name: string; message: string; stack?: string | undefined },
): { name: string; message: string; stack?: string } {
  const { name, message } = answer;
  if (typeof answer.stack !== 'string') return { name, message };
  if (answer.stack !== original.stack || message === original.message)
    return { name, message, stack: answer.stack };
  const frames = answer.stack.split('\n').filter((line) => /^\s+at /.test(line));
  return { name, message, stack: [`${name}: ${message}`, ...frames].join('\n') };
}
