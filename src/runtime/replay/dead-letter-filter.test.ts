import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../../errors/invalid-input-error.js';
import { isValidationError } from '../../errors/validation-error.js';
import { resolveFilter } from './dead-letter-filter.js';

describe('resolveFilter', () => {
  it('keeps only the fields that are set', () => {
    expect(resolveFilter({ reason: 'permanent', dependency: undefined }, 0)).toEqual({ reason: 'permanent' });
  });

  it('resolves sinceMs against the given now, and the later of since and sinceMs wins', () => {
    expect(resolveFilter({ sinceMs: 1_000 }, 10_000)).toEqual({ since: 9_000 });
    expect(resolveFilter({ sinceMs: 1_000, since: 9_500 }, 10_000)).toEqual({ since: 9_500 });
    expect(resolveFilter({ sinceMs: 1_000, since: 2_000 }, 10_000)).toEqual({ since: 9_000 });
    expect(resolveFilter({ sinceMs: 50_000 }, 10_000)).toEqual({ since: 0 });
  });

  it('refuses an unknown reason, an empty name and a negative window, naming them', () => {
    expect(() => resolveFilter({ reason: 'tired' as never }, 0)).toThrow(/reason/);
    try {
      resolveFilter({ name: '' }, 0);
      expect.unreachable();
    } catch (error) {
      expect(isValidationError(error) && /name/.test((error as Error).message)).toBe(true);
    }
    expect(() => resolveFilter({ sinceMs: -1 }, 0)).toThrow(/sinceMs/);
    try {
      resolveFilter({ sinceMs: Number.NaN }, 0);
      expect.unreachable();
    } catch (error) {
      expect(isInvalidInputError(error)).toBe(true);
    }
  });
});
