import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isValidationError } from '../errors/validation-error.js';
import { parseWith } from './validation.js';

describe('parseWith', () => {
  const schema = z.object({
    ratio: z.number().gt(0, 'must be > 0').max(1, 'must be <= 1'),
    nested: z.object({ n: z.number().int() }),
  });

  it('returns the parsed value', () => {
    expect(parseWith(schema, { ratio: 0.2, nested: { n: 1 } }, 'budget')).toEqual({
      ratio: 0.2,
      nested: { n: 1 },
    });
  });

  it('names the field, the value and the rule', () => {
    let error: unknown;
    try {
      parseWith(schema, { ratio: 1.5, nested: { n: 1.5 } }, 'retry budget');
    } catch (e) {
      error = e;
    }
    expect(isValidationError(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('invalid retry budget');
    expect(message).toContain('ratio: 1.5 is invalid: must be <= 1');
    expect(message).toContain('nested.n: 1.5 is invalid');
  });
});
