const brand = Symbol.for('stormguard.InvalidInputError');

/**
 * Bad input from a user: an unparseable duration, an unknown preset, a malformed file. Its message says
 * what is wrong and how to fix it; the CLI prints it on one line and exits with code 2.
 *
 * @example
 * throw new InvalidInputError('--window: "15x" is not a duration; write it like 90s, 15m or 4h');
 */
export class InvalidInputError extends Error {
  readonly [brand] = true;
  override name = 'InvalidInputError';
}

/**
 * True for an {@link InvalidInputError} (and its subclasses, {@link ValidationError} among them), across
 * package copies.
 *
 * @example
 * try { parseDuration('15x') } catch (e) { if (isInvalidInputError(e)) console.error(e.message) }
 */
export function isInvalidInputError(error: unknown): error is InvalidInputError {
  return typeof error === 'object' && error !== null && brand in error;
}
