import { describe, expect, it } from 'vitest';
import { isValidationError } from '../errors/validation-error.js';
import { parseFilter, recordMatcher } from './dead-letter-filter.js';
import type { DeadLetterRecord } from './types.js';

const record = (overrides: Partial<DeadLetterRecord>): DeadLetterRecord =>
  ({
    reason: 'permanent',
    dependency: 'search',
    name: 'reindex',
    deadLetteredAt: 5_000,
    ...overrides,
  }) as DeadLetterRecord;

describe('recordMatcher', () => {
  it('matches everything with an empty filter', () => {
    expect(recordMatcher({}, 0)(record({}))).toBe(true);
  });

  it('combines fields with AND', () => {
    const keep = recordMatcher({ reason: 'budget-exhausted', dependency: 'mail', name: 'welcome' }, 0);
    expect(keep(record({ reason: 'budget-exhausted', dependency: 'mail', name: 'welcome' }))).toBe(true);
    expect(keep(record({ reason: 'budget-exhausted', dependency: 'mail', name: 'reindex' }))).toBe(false);
    expect(keep(record({ reason: 'permanent', dependency: 'mail', name: 'welcome' }))).toBe(false);
  });

  it('takes the later of since and now - sinceMs, inclusive', () => {
    expect(recordMatcher({ sinceMs: 5_000 }, 10_000)(record({ deadLetteredAt: 5_000 }))).toBe(true);
    expect(recordMatcher({ sinceMs: 5_000 }, 10_000)(record({ deadLetteredAt: 4_999 }))).toBe(false);
    expect(recordMatcher({ since: 8_000, sinceMs: 5_000 }, 10_000)(record({ deadLetteredAt: 7_000 }))).toBe(
      false,
    );
  });
});

describe('parseFilter', () => {
  it('names the field and the rule', () => {
    expect(() => parseFilter({ reason: 'nope' as never })).toThrow(/reason/);
    try {
      parseFilter({ sinceMs: -1 });
      expect.unreachable();
    } catch (error) {
      expect(isValidationError(error) && (error as Error).message).toMatch(/sinceMs/);
    }
  });
});
