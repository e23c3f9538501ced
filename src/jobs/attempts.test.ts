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
});
