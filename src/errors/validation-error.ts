import { InvalidInputError } from './invalid-input-error.js';

const brand = Symbol.for('stormguard.ValidationError');

/** One broken rule: where (`maxAttempts`, `backoff.baseMs`), the value found, and the rule it breaks. */
export interface ValidationIssue {
  path: string;
  value: unknown;
  rule: string;
}

/**
 * Thrown when a policy, budget, breaker or scenario is built from invalid settings. The message names
 * the field, the value and the rule, e.g. `maxAttempts: Infinity is invalid: must be a finite integer >= 1`.
 *
 * @example
 * try { definePolicy({ maxAttempts: 0 }) } catch (e) { if (isValidationError(e)) console.log(e.issues) }
 */
export class ValidationError extends InvalidInputError {
  readonly [brand] = true;
  override name = 'ValidationError';

  constructor(
    readonly subject: string,
    readonly issues: ValidationIssue[],
  ) {
    super(
      `invalid ${subject}: ${issues
        .map((i) => `${i.path || '(root)'}: ${formatValue(i.value)} is invalid: ${i.rule}`)
        .join('; ')}`,
    );
  }
}

/**
 * True for a {@link ValidationError}, across package copies.
 *
 * @example
 * try { definePolicy({ maxAttempts: 0 }) } catch (e) { if (isValidationError(e)) console.log(e.issues[0]?.path) }
 */
export function isValidationError(error: unknown): error is ValidationError {
  return typeof error === 'object' && error !== null && brand in error;
}

function formatValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  try {
    const text = JSON.stringify(value);
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch {
    return String(value);
  }
}
