import { describe, expect, it } from 'vitest';
import { parseAttemptState, serializeAttemptState } from './attempts.js';

describe('attempt state', () => {
  it('round-trips through its stored form', () => {
    const state = { attempts: 3, deferrals: 1, previousDelayMs: 400, firstFailedAt: 1_700_000_000_000 };
    expect(parseAttemptState(serializeAttemptState(state))).toEqual(state);
  });

  it('reads a missing or unreadable field as a fresh job, never as a reason to refuse it', () => {
    for (const raw of [undefined, null, '', 'not json', '[]', '{"attempts":-1,"deferrals":"x"}'])
      expect(parseAttemptState(raw)).toEqual({ attempts: 0, deferrals: 0 });
  });

  it('drops fields that are not times', () => {
    expect(
      parseAttemptState('{"attempts":2,"deferrals":0,"previousDelayMs":-5,"firstFailedAt":"soon"}'),
    ).toEqual({
      attempts: 2,
      deferrals: 0,
    });
  });

  it('keeps a dead-lettered mark whole, and a mark with a known reason even when its details do not read', () => {
    const deadLettered = {
      reason: 'budget-exhausted' as const,
      detail: 'budget for search exhausted',
      lastError: {
        name: 'Error',
        message: 'timeout',
        stack: 'Error: timeout',
        classification: { retryable: true, reason: 'timeout', retryAfterMs: 100 },
      },
      attemptsMade: 2,
      dependency: 'search',
      idempotencyKey: 'doc-1',
      at: 5_000,
    };
    const state = { attempts: 2, deferrals: 0, deadLettered };
    expect(parseAttemptState(serializeAttemptState(state))).toEqual(state);
    expect(
      parseAttemptState('{"attempts":1,"deferrals":0,"deadLettered":{"reason":"permanent","lastError":7}}'),
    ).toEqual({
      attempts: 1,
      deferrals: 0,
      deadLettered: {
        reason: 'permanent',
        detail: 'dead-lettered by an earlier attempt',
        lastError: {
          name: 'Error',
          message: 'unknown',
          classification: { retryable: false, reason: 'unknown' },
        },
        attemptsMade: 0,
        dependency: '',
        at: 0,
      },
    });
    expect(parseAttemptState('{"attempts":1,"deferrals":0,"deadLettered":{"reason":"bored"}}')).toEqual({
      attempts: 1,
      deferrals: 0,
    });
  });
});
