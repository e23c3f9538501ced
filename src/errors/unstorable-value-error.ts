const brand = Symbol.for('stormguard.UnstorableValueError');

/**
 * Thrown by a store that cannot hold a value it was given, whatever the retry: PostgreSQL refuses U+0000
 * in `text` and `jsonb`, a value past a column's or an index's size limit. Unlike a store that is down or
 * slow, no retry fixes it: the job runtime files a safe form of the record instead (see
 * docs/dead-letters.md). The message says what kind of value was refused, never the value itself.
 *
 * @example
 * if (isUnstorableValueError(error)) console.log(`${error.store} cannot hold it: ${error.message}`);
 */
export class UnstorableValueError extends Error {
  readonly [brand] = true;
  override name = 'UnstorableValueError';

  constructor(
    message: string,
    /** Which store refused, for people: `PostgreSQL dead-letter store`. */
    readonly store: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
  }
}

/**
 * True for an {@link UnstorableValueError}, across package copies.
 *
 * @example
 * if (isUnstorableValueError(error)) log.error(`${error.store} refused the value: ${error.message}`);
 */
export function isUnstorableValueError(error: unknown): error is UnstorableValueError {
  return typeof error === 'object' && error !== null && brand in error;
}
