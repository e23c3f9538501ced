import { describe, expect, it } from 'vitest';
import { MemoryAuditLog } from '../../src/audit/memory-audit-log.js';
import { isInvalidInputError } from '../../src/errors/invalid-input-error.js';
import { MemoryFlowStore } from '../../src/runtime/flow-control/memory-store.js';
import { changeLimits, checkLimitChange } from '../../src/status/limit-actions.js';

describe("checking an operator's limits change", () => {
  it('trims the reason and who acts, and defaults who to anonymous', () => {
    expect(checkLimitChange('set', { reason: ' slow down ', maxInFlight: 10 })).toEqual({
      reason: 'slow down',
      by: 'anonymous',
      maxInFlight: 10,
    });
    expect(checkLimitChange('pause', { reason: 'incident', by: ' alice ', expiresInMs: 60_000 })).toEqual({
      reason: 'incident',
      by: 'alice',
      expiresInMs: 60_000,
    });
  });

  it.each([
    ['set', {}, /^reason: changing a dependency's limits needs a reason/],
    ['pause', { reason: '   ' }, /^reason: /],
    ['pause', { reason: 'x'.repeat(501) }, /^reason: .*1-500 characters/],
    ['reset', { reason: 'ok', by: '' }, /^by: who changes limits must be 1-200 characters/],
    ['set', { reason: 'ok' }, /^set: give maxInFlight and\/or maxRatePerSecond/],
    ['set', { reason: 'ok', maxInFlight: 0 }, /^maxInFlight: 0 is not a whole number from 1 to 1000000/],
    ['set', { reason: 'ok', maxInFlight: 2.5 }, /^maxInFlight: 2.5 is not a whole number/],
    ['set', { reason: 'ok', maxRatePerSecond: -1 }, /^maxRatePerSecond: -1 is not a number above 0/],
    ['set', { reason: 'ok', maxRatePerSecond: '5' }, /^maxRatePerSecond: "5" is not a number/],
    ['pause', { reason: 'ok', maxInFlight: 5 }, /^maxInFlight: only "set" changes it/],
    ['resume', { reason: 'ok', expiresInMs: 60_000 }, /^expiresInMs: only "set" and "pause" take an expiry/],
    ['pause', { reason: 'ok', expiresInMs: 10 }, /^expiresInMs: 10 ms is not a duration from 1s to 3650d/],
    ['drop', { reason: 'ok' }, /^limits action "drop": use one of set, pause, resume, reset/],
  ])('%s %j is bad input: %s', (action, request, message) => {
    let error: unknown;
    try {
      checkLimitChange(action, request);
    } catch (e) {
      error = e;
    }
    expect(isInvalidInputError(error)).toBe(true);
    expect((error as Error).message).toMatch(message);
  });

  it('names each field as the caller calls it', () => {
    expect(() =>
      checkLimitChange('set', { reason: 'ok', maxInFlight: 0 }, { maxInFlight: '--max-in-flight' }),
    ).toThrow(/^--max-in-flight: 0 is not a whole number/);
  });
});

describe('changeLimits', () => {
  it('refuses a bad dependency name before touching the store', async () => {
    const store = new MemoryFlowStore();
    await expect(changeLimits({ store }, '', 'pause', { reason: 'incident' })).rejects.toThrow(
      /^dependency "": must not be empty/,
    );
    expect(store.limitedDependencies()).toEqual([]);
  });

  it('says the change stands when the audit log refuses it', async () => {
    const store = new MemoryFlowStore();
    const audit = new MemoryAuditLog();
    audit.append = async () => {
      throw new Error('audit store down');
    };
    await expect(changeLimits({ store, audit }, 'openai', 'pause', { reason: 'incident' })).rejects.toThrow(
      'the openai limits change (pause) was applied, but the audit log could not record it: audit store down',
    );
    expect(store.limitState('openai').override?.paused).toBe(true);
  });

  it('resuming a pause that was all the override held removes the override', async () => {
    const store = new MemoryFlowStore();
    await changeLimits({ store }, 'openai', 'pause', { reason: 'incident', by: 'alice' });
    const { state } = await changeLimits({ store }, 'openai', 'resume', { reason: 'over', by: 'alice' });
    expect(state.override).toBeUndefined();
    expect(store.limitedDependencies()).toEqual([]);
  });
});
