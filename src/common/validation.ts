import type { z } from 'zod';
import { ValidationError } from '../errors/validation-error.js';

/**
 * Parses `input` with a zod schema and turns any failure into a {@link ValidationError} whose message
 * names each field, the value found there and the rule it breaks.
 *
 * @example
 * const options = parseWith(BudgetOptionsSchema, input, 'retry budget');
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, subject: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ValidationError(
    subject,
    result.error.issues.map((issue) => ({
      path: issue.path.map(String).join('.'),
      value: valueAt(input, issue.path),
      rule: issue.message,
    })),
  );
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = input;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}
