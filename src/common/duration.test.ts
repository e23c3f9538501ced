import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { formatDuration, parseDuration } from './duration.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['90s', 90_000],
    ['15m', 900_000],
    ['4h', 14_400_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1_500],
    ['250', 250],
    [' 2s ', 2_000],
  ])('parses %s', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it('accepts a number of milliseconds', () => {
    expect(parseDuration(1234)).toBe(1234);
  });

  it.each(['', '15x', 'm15', '-5s', '1h 30m', 'soon'])(
    'rejects %j with an error naming it and the accepted forms',
    (input) => {
      let error: unknown;
      try {
        parseDuration(input, '--window');
      } catch (e) {
        error = e;
      }
      expect(isInvalidInputError(error)).toBe(true);
      expect((error as Error).message).toContain('--window');
      expect((error as Error).message).toMatch(/90s, 15m/);
    },
  );

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('rejects the number %s', (input) => {
    expect(() => parseDuration(input)).toThrow(/not a duration/);
  });

  it.each([1e300, '1'.padEnd(400, '0'), '3651d', '99999999999999999999h', 3_650 * 86_400_000 + 1])(
    'refuses %s, longer than ten years, naming the flag',
    (input) => {
      expect(() => parseDuration(input, '--since')).toThrow(
        /^--since: .* is longer than the longest duration, 3650d \(ten years\)$/,
      );
    },
  );

  it('accepts exactly ten years', () => {
    expect(parseDuration('3650d')).toBe(315_360_000_000);
  });
});

describe('formatDuration', () => {
  it.each([
    [850, '850ms'],
    [12_500, '12.5s'],
    [90_000, '1m 30s'],
    [900_000, '15m'],
    [5_400_000, '1h 30m'],
    [14_400_000, '4h'],
  ])('formats %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
