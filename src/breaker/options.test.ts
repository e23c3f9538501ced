import { describe, expect, it } from 'vitest';
import { isValidationError } from '../errors/validation-error.js';
import { DEFAULT_BREAKER_OPTIONS, resolveBreakerOptions } from './options.js';

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(isValidationError(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected a validation error');
}

describe('resolveBreakerOptions', () => {
  it('fills in the documented defaults and derives the bucket width and the integer threshold', () => {
    expect(resolveBreakerOptions()).toEqual({
      ...DEFAULT_BREAKER_OPTIONS,
      bucketMs: 6_000,
      failureRatePpm: 500_000,
    });
    expect(DEFAULT_BREAKER_OPTIONS).toMatchObject({
      failureRateThreshold: 0.5,
      windowMs: 60_000,
      minimumVolume: 20,
      consecutiveFailures: 10,
      coolDownMs: 30_000,
      halfOpenProbes: 1,
      successesToClose: 3,
    });
  });

  it('keeps given values and ignores undefined ones', () => {
    const options = resolveBreakerOptions({
      windowMs: 1_005,
      coolDownMs: undefined,
      failureRateThreshold: 0.1,
    });
    expect(options).toMatchObject({
      windowMs: 1_005,
      bucketMs: 101,
      coolDownMs: 30_000,
      failureRatePpm: 100_000,
    });
  });

  it.each([
    [{ failureRateThreshold: 0 }, 'failureRateThreshold: 0 is invalid: must be in (0, 1]'],
    [{ failureRateThreshold: 1.5 }, 'failureRateThreshold: 1.5 is invalid: must be in (0, 1]'],
    [{ windowMs: 50 }, 'windowMs: 50 is invalid: must be a whole number >= 100'],
    [{ minimumVolume: 0 }, 'minimumVolume: 0 is invalid: must be a whole number >= 1'],
    [{ consecutiveFailures: 2.5 }, 'consecutiveFailures: 2.5 is invalid: must be a whole number >= 1'],
    [{ coolDownMs: -5 }, 'coolDownMs: -5 is invalid: must be a whole number >= 1'],
    [{ halfOpenProbes: 0 }, 'halfOpenProbes: 0 is invalid: must be a whole number >= 1'],
    [{ successesToClose: Number.POSITIVE_INFINITY }, 'successesToClose: Infinity is invalid'],
    [{ coolDownMs: '30s' }, 'coolDownMs: "30s" is invalid: must be a number'],
    [{ coolDownMs: 1e300 }, 'coolDownMs: 1e+300 is invalid: must be at most 86400000 (one day)'],
    [{ windowMs: 86_400_001 }, 'windowMs: 86400001 is invalid: must be at most 86400000 (one day)'],
    [{ minimumVolume: 2 ** 60 }, 'must be at most 1000000000'],
  ])('rejects %j naming the field, the value and the rule', (input, expected) => {
    expect(messageOf(() => resolveBreakerOptions(input as never))).toContain(expected);
  });

  it('rejects an unknown option (a typo must not silently fall back to a default)', () => {
    expect(messageOf(() => resolveBreakerOptions({ coolDown: 5 } as never))).toContain(
      'coolDown: 5 is invalid: not a breaker option; the options are failureRateThreshold, windowMs',
    );
  });

  it('reports every bad field at once, under the given subject', () => {
    const message = messageOf(() =>
      resolveBreakerOptions({ windowMs: 0, halfOpenProbes: 0 }, 'breaker for "crm"'),
    );
    expect(message).toMatch(/^invalid breaker for "crm": /);
    expect(message).toContain('windowMs');
    expect(message).toContain('halfOpenProbes');
  });
});
