import { describe, expect, it } from 'vitest';
import { isInvalidInputError } from '../../errors/invalid-input-error.js';
import { parseFilterFlags, parseRate, parseWholeNumber } from './dlq-options.js';

describe('dlq options', () => {
  it('parses rates per second, minute and hour', () => {
    expect([
      parseRate('50/s'),
      parseRate('600/m'),
      parseRate('3600/h'),
      parseRate('2.5'),
      parseRate('5/sec'),
    ]).toEqual([50, 10, 1, 2.5, 5]);
  });

  it.each(['fast', '0/s', '-1/s', '10/d', ''])('refuses the rate %j, naming the format', (text) => {
    expect(() => parseRate(text)).toThrow(/--rate: .* is not a rate; write it like 50\/s/);
    let thrown: unknown;
    try {
      parseRate(text);
    } catch (error) {
      thrown = error;
    }
    expect(isInvalidInputError(thrown)).toBe(true);
  });

  it('turns filter flags into a filter', () => {
    expect(
      parseFilterFlags({ reason: 'permanent', dependency: 'search', since: '1h', name: 'reindex' }),
    ).toEqual({
      reason: 'permanent',
      dependency: 'search',
      sinceMs: 3_600_000,
      name: 'reindex',
    });
    expect(() => parseFilterFlags({ reason: 'bored' })).toThrow(
      /--reason: "bored" is not a dead-letter reason/,
    );
  });

  it('parses whole numbers with a floor', () => {
    expect(parseWholeNumber('12', '--limit', 1)).toBe(12);
    expect(() => parseWholeNumber('0', '--limit', 1)).toThrow('--limit: "0" is not a whole number >= 1');
    expect(() => parseWholeNumber('1.5', '--limit')).toThrow(/--limit/);
  });
});
