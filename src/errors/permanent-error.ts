const brand = Symbol.for('stormguard.PermanentError');

/**
 * Marks a failure that no retry can fix (a 400, a constraint violation, bad input). The job goes
 * straight to the dead-letter queue with reason `permanent`.
 *
 * @example
 * if (!doc) throw new PermanentError(`document ${id} does not exist`);
 */
export class PermanentError extends Error {
  readonly [brand] = true;
  override name = 'PermanentError';

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
  }
}

/**
 * True for a {@link PermanentError}, across package copies.
 *
 * @example
 * if (isPermanentError(error)) log.error(`will not retry: ${error.message}`);
 */
export function isPermanentError(error: unknown): error is PermanentError {
  return typeof error === 'object' && error !== null && brand in error;
}
