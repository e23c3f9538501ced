import type { DeadLetterReason, Decision } from '../policy/types.js';
import type { AttemptEntry } from './contracts.js';
import type { SettleAction } from './settle.js';

/**
 * How many attempts a job's history keeps: the most recent, so a record stays small however long the
 * job retried (`attemptsMade` still counts them all).
 *
 * @example
 * record.history!.length <= ATTEMPT_HISTORY_LIMIT; // true
 */
export const ATTEMPT_HISTORY_LIMIT = 16;

/** The longest error message an entry keeps, in UTF-16 code units; a longer one is cut and ends in `…`. */
export const ATTEMPT_MESSAGE_LIMIT = 1_000;

/**
 * The history entry of one settled attempt, from the decision, its action and the error.
 *
 * @example
 * attemptEntry({ attempt: 1, at: 10_000, dependency: 'search', error }, decision, action);
 * // { attempt: 1, at: 10_000, ..., decision: 'retry', cause: 'backoff', delayMs: 200 }
 */
export function attemptEntry(
  facts: { attempt: number; at: number; dependency: string; error: { name: string; message: string } },
  decision: Decision,
  action: SettleAction,
): AttemptEntry {
  const entry: AttemptEntry = {
    attempt: facts.attempt,
    at: facts.at,
    dependency: facts.dependency,
    error: { name: facts.error.name, message: cut(facts.error.message) },
    classification: decision.classification,
    decision: action.type,
    cause: action.type === 'retry' || action.type === 'defer' ? action.cause : reasonOf(decision),
  };
  if (action.type === 'retry' || action.type === 'defer') entry.delayMs = action.delayMs;
  return entry;
}

/**
 * `history` with `entry` appended, keeping the last {@link ATTEMPT_HISTORY_LIMIT}. A new array: the
 * history it was given is left as it was.
 *
 * @example
 * appendAttempt(undefined, entry); // [entry]
 */
export function appendAttempt(
  history: readonly AttemptEntry[] | undefined,
  entry: AttemptEntry,
): AttemptEntry[] {
  const kept = history ?? [];
  const from = Math.max(0, kept.length + 1 - ATTEMPT_HISTORY_LIMIT);
  return [...kept.slice(from), entry];
}

function reasonOf(decision: Decision): DeadLetterReason | string {
  return decision.action === 'retry' ? decision.cause : decision.reason;
}

function cut(message: string): string {
  return message.length <= ATTEMPT_MESSAGE_LIMIT
    ? message
    : `${message.slice(0, ATTEMPT_MESSAGE_LIMIT - 1)}…`;
}
