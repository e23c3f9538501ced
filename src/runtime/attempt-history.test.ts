import { describe, expect, it } from 'vitest';
import type { Decision } from '../policy/types.js';
import { appendAttempt, attemptEntry } from './attempt-history.js';
import type { AttemptEntry } from './contracts.js';

const classification = { retryable: true, reason: 'http-503' };
const retry: Decision = {
  action: 'retry',
  delayMs: 400,
  retry: 2,
  chargesAttempt: true,
  cause: 'backoff',
  classification,
};

function entry(attempt: number, message = 'HTTP 503'): AttemptEntry {
  return attemptEntry(
    { attempt, at: 1_000 * attempt, dependency: 'search', error: { name: 'HttpError', message } },
    retry,
    { type: 'retry', delayMs: 400, dueAtMs: 1_000 * attempt + 400, retry: 2, cause: 'backoff' },
  );
}

describe('attempt history', () => {
  it('keeps the last 16 attempts, oldest first, and leaves the history it was given as it was', () => {
    let history: AttemptEntry[] | undefined;
    const snapshots: AttemptEntry[][] = [];
    for (let n = 1; n <= 20; n++) {
      history = appendAttempt(history, entry(n));
      snapshots.push(history);
    }
    expect(history?.map((e) => e.attempt)).toEqual([
      5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ]);
    expect(snapshots[1]?.map((e) => e.attempt)).toEqual([1, 2]);
  });

  it('records the decision, its cause and delay; a terminal one has no delay', () => {
    expect(entry(2)).toEqual({
      attempt: 2,
      at: 2_000,
      dependency: 'search',
      error: { name: 'HttpError', message: 'HTTP 503' },
      classification,
      decision: 'retry',
      cause: 'backoff',
      delayMs: 400,
    });
    const deadLetter: Decision = { action: 'dead-letter', reason: 'permanent', detail: 'x', classification };
    const filed = attemptEntry(
      { attempt: 3, at: 3_000, dependency: 'search', error: { name: 'HttpError', message: 'HTTP 404' } },
      deadLetter,
      { type: 'fail', reason: 'permanent', detail: 'x', message: 'x' },
    );
    expect(filed).toEqual({
      attempt: 3,
      at: 3_000,
      dependency: 'search',
      error: { name: 'HttpError', message: 'HTTP 404' },
      classification,
      decision: 'fail',
      cause: 'permanent',
    });
  });

  it('cuts a long error message at 1 000 characters', () => {
    const message = entry(1, 'x'.repeat(5_000)).error.message;
    expect(message).toHaveLength(1_000);
    expect(message.endsWith('x…')).toBe(true);
  });
});
