import { describeError } from '../common/error-text.js';
import { InvalidInputError, isInvalidInputError } from '../errors/invalid-input-error.js';
import { isRedactionFailedError } from '../errors/redaction-failed-error.js';
import { isUnstorableValueError } from '../errors/unstorable-value-error.js';
import { isValidationError } from '../errors/validation-error.js';
import type { AttemptEntry, AttemptState, DeadLetterRecord } from './contracts.js';
import { markSafeForm } from './redaction.js';

/**
 * A write stormguard decided on after the processor ran, and could not make yet: the retry's attempt state
 * (then the move to its due time), or the dead-letter record with the job's final state. Plain JSON.
 *
 * @example
 * const write: PendingWrite = { type: 'dead-letter', record, state: { attempts: 1, deferrals: 0 }, ttlMs: 604_800_000 };
 */
export type PendingWrite =
  | {
      type: 'retry';
      state: AttemptState;
      ttlMs: number;
      dueAtMs: number;
      delayMs: number;
      retry: number;
      cause: 'backoff' | 'retry-after' | 'breaker-open' | 'budget-deferred';
      chargesAttempt: boolean;
      dependency: string;
      errorClass: string;
    }
  | {
      type: 'dead-letter';
      record: DeadLetterRecord;
      state: AttemptState;
      ttlMs: number;
      /** True once the record is the safe form (the original was refused for good). */
      safeForm?: true;
    };

/**
 * A decided outcome still to be written, kept in the job's own record so that neither a restart nor the
 * store that refused loses it: the job's next run writes it instead of running the processor.
 *
 * @example
 * const pending: PendingOutcome = { write, tries: 1, since: 1_700_000_000_000 };
 */
export interface PendingOutcome {
  write: PendingWrite;
  /** Tries of the write so far, the first included. */
  tries: number;
  /** When the write was first tried (epoch ms, the runtime's clock). */
  since: number;
}

/**
 * What stormguard keeps in a job's own record (BullMQ: the job's progress; a message queue: a header on
 * the requeued message), through {@link JobHandle.keepNote}. Plain JSON, small but for the record.
 *
 * @example
 * const note: JobNote = { pending, reruns: 0 };
 */
export interface JobNote {
  pending?: PendingOutcome;
  /** Times the processor ran again because stormguard could not settle its outcome (at most 2). */
  reruns?: number;
}

/**
 * How often stormguard retries a write a store refused, from the first retry to the longest wait.
 *
 * @example
 * const backoff: BookkeepingBackoff = { firstDelayMs: 5_000, maxDelayMs: 300_000 };
 */
export interface BookkeepingBackoff {
  firstDelayMs: number;
  maxDelayMs: number;
}

/**
 * Checks a {@link BookkeepingBackoff}, naming the field and the rule when one is wrong.
 *
 * @example
 * assertBookkeepingBackoff({ firstDelayMs: 5_000, maxDelayMs: 300_000 });
 */
export function assertBookkeepingBackoff(backoff: BookkeepingBackoff): void {
  const { firstDelayMs, maxDelayMs } = backoff ?? {};
  if (!(Number.isInteger(firstDelayMs) && firstDelayMs >= 1))
    throw new InvalidInputError(
      `bookkeepingBackoff.firstDelayMs must be an integer >= 1 (ms), got ${String(firstDelayMs)}`,
    );
  if (!(Number.isInteger(maxDelayMs) && maxDelayMs >= firstDelayMs))
    throw new InvalidInputError(
      `bookkeepingBackoff.maxDelayMs must be an integer >= firstDelayMs (${firstDelayMs}), got ${String(maxDelayMs)}`,
    );
}

/**
 * The default backoff of a write the job runtime could not make (its `bookkeepingBackoff`): 5 s doubling
 * to 5 minutes.
 *
 * @example
 * bookkeepingDelayMs(3, DEFAULT_BOOKKEEPING_BACKOFF); // 20_000
 */
export const DEFAULT_BOOKKEEPING_BACKOFF: Readonly<BookkeepingBackoff> = Object.freeze({
  firstDelayMs: 5_000,
  maxDelayMs: 300_000,
});

/** Times the processor may run again because its outcome could not be settled (a decision not made). */
export const MAX_BOOKKEEPING_RERUNS = 2;

/**
 * The wait after the `tries`-th refused try of a write: the first delay, doubling, capped.
 *
 * @example
 * bookkeepingDelayMs(3, DEFAULT_BOOKKEEPING_BACKOFF); // 20_000
 */
export function bookkeepingDelayMs(tries: number, backoff: BookkeepingBackoff): number {
  const doubled = backoff.firstDelayMs * 2 ** Math.min(Math.max(tries - 1, 0), 30);
  return Math.min(doubled, backoff.maxDelayMs);
}

/**
 * True for a refusal no retry can fix: a redaction hook that threw, a value the store cannot hold, a record
 * that fails validation, a name a part refuses. Everything else (a store down, a timeout, a lost
 * connection) is transient and retried.
 *
 * @example
 * isPermanentRefusal(new UnstorableValueError('U+0000 in text', 'PostgreSQL dead-letter store')); // true
 * isPermanentRefusal(new Error('connect ECONNREFUSED')); // false
 */
export function isPermanentRefusal(error: unknown): boolean {
  return (
    isRedactionFailedError(error) ||
    isUnstorableValueError(error) ||
    isValidationError(error) ||
    isInvalidInputError(error)
  );
}

/**
 * Why a refusal happened, for the marker that replaces what was refused: the class and, for stormguard's
 * own typed refusals, what kind of value was refused (never the value, nor a hook's own text).
 *
 * @example
 * refusalText(new UnstorableValueError('U+0000 in text', 'PostgreSQL dead-letter store')); // 'UnstorableValueError: U+0000 in text'
 */
export function refusalText(error: unknown): string {
  if (isRedactionFailedError(error)) return `the redaction hook failed (${error.hookErrorClass})`;
  if (isUnstorableValueError(error)) return `${error.store} cannot hold it: ${error.message}`;
  if (isValidationError(error))
    return `it failed validation (${error.issues.map((i) => `${i.path || '(root)'}: ${i.rule}`).join('; ')})`;
  return describeError(error).name;
}

/** Marks the start of a name or id the safe form had to encode; `decodeStoredName` reads it back. */
export const ENCODED_PREFIX = 'sg-encoded:';

// U+0000 (PostgreSQL's text and jsonb refuse it) and lone surrogates (no UTF-8 form), and `%` for the escape.
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what it looks for.
const UNHOLDABLE = /[\u0000%]|\p{Cs}/gu;
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what it looks for.
const NEEDS_ENCODING = /\u0000|\p{Cs}/u;
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what it looks for.
const UNHOLDABLE_TEXT = /\u0000|\p{Cs}/gu;

/**
 * A name or id as every store can hold it: unchanged unless it holds U+0000 or a lone surrogate (or starts
 * with the marker), else `sg-encoded:` and the text with `%`, U+0000 and lone surrogates as `%XXXX`
 * escapes. Lossless: {@link decodeStoredName} gives the original back.
 *
 * @example
 * encodeStoredName('a\u0000b'); // 'sg-encoded:a%0000b'
 * encodeStoredName('reindex'); // 'reindex'
 */
export function encodeStoredName(name: string): string {
  if (!NEEDS_ENCODING.test(name) && !name.startsWith(ENCODED_PREFIX)) return name;
  return (
    ENCODED_PREFIX +
    name.replace(UNHOLDABLE, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`)
  );
}

/**
 * The original of a name or id {@link encodeStoredName} encoded; any other text as it is.
 *
 * @example
 * decodeStoredName('sg-encoded:a%0000b'); // 'a\u0000b'
 */
export function decodeStoredName(stored: string): string {
  if (!stored.startsWith(ENCODED_PREFIX)) return stored;
  return stored
    .slice(ENCODED_PREFIX.length)
    .replace(/%([0-9A-F]{4})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/**
 * The safe form of a record a store refused for good: the job's data replaced by a marker that says why,
 * the error text (last error and every attempt's) by a marker text, the options kept only when every store
 * can hold them, and names and ids a store cannot hold encoded losslessly ({@link encodeStoredName}). It
 * keeps what identifies, indexes and replays the record (queue, reason, dependency, times, attempts), so it
 * is listed, counted and replayed like any record, and is filed without the redaction hook (there is nothing
 * left for it to redact).
 *
 * @example
 * const safe = safeFormOf(record, 'the redaction hook failed (TypeError)');
 * safe.data; // { stormguard: 'withheld', why: 'the redaction hook failed (TypeError)' }
 */
export function safeFormOf(record: DeadLetterRecord, why: string, keepOptions: boolean): DeadLetterRecord {
  const marker = `[withheld by stormguard: ${why}]`;
  const enc = encodeStoredName;
  const { classification } = record.lastError;
  const safe: DeadLetterRecord = {
    queue: record.queue,
    jobId: enc(record.jobId),
    createdAt: record.createdAt,
    name: enc(record.name),
    data: { stormguard: 'withheld', why },
    opts: keepOptions && holdable(record.opts) ? record.opts : {},
    reason: record.reason,
    detail: scrub(record.detail),
    lastError: {
      name: enc(record.lastError.name),
      message: marker,
      classification: { retryable: classification.retryable, reason: scrub(classification.reason) },
    },
    attemptsMade: record.attemptsMade,
    dependency: enc(record.dependency),
    deadLetteredAt: record.deadLetteredAt,
    replays: record.replays,
  };
  if (record.firstFailedAt !== undefined) safe.firstFailedAt = record.firstFailedAt;
  if (record.idempotencyKey !== undefined) safe.idempotencyKey = enc(record.idempotencyKey);
  if (record.replayedFrom !== undefined) safe.replayedFrom = enc(record.replayedFrom);
  if (record.traceLinks !== undefined && holdable(record.traceLinks)) safe.traceLinks = record.traceLinks;
  if (record.history !== undefined)
    safe.history = record.history.map(
      (entry): AttemptEntry => ({
        ...entry,
        dependency: enc(entry.dependency),
        error: { name: enc(entry.error.name), message: marker },
        classification: {
          retryable: entry.classification.retryable,
          reason: scrub(entry.classification.reason),
        },
      }),
    );
  return markSafeForm(safe);
}

/** A text every store holds: U+0000 and lone surrogates become U+FFFD (for people's text, never an id). */
function scrub(text: string): string {
  return text.replace(UNHOLDABLE_TEXT, '\uFFFD');
}

/** True when the value is plain JSON holding no string a store cannot hold. */
function holdable(value: unknown): boolean {
  try {
    // JSON escapes U+0000 and lone surrogates (`\u0000`, `\ud800`): look for the escapes.
    return !/\\u0000|\\ud[89a-f][0-9a-f]{2}/i.test(JSON.stringify(value) ?? '');
  } catch {
    return false;
  }
}
