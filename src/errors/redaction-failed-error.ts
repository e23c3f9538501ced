const brand = Symbol.for('stormguard.RedactionFailedError');

/**
 * Thrown when a dead-letter store's `redact` hook throws or returns no record: the record was not stored,
 * so no raw value was written because redaction failed. No retry fixes it; the job runtime files a safe
 * form of the record instead (every value the hook would have seen replaced by a marker). The message
 * names the record and the hook error's class, never its text (which may quote the value).
 *
 * @example
 * if (isRedactionFailedError(error)) console.log(`redaction threw ${error.hookErrorClass}`);
 */
export class RedactionFailedError extends Error {
  readonly [brand] = true;
  override name = 'RedactionFailedError';

  constructor(
    message: string,
    /** The class of what the hook threw (`TypeError`), or `no record` when it returned none. */
    readonly hookErrorClass: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
  }
}

/**
 * True for a {@link RedactionFailedError}, across package copies.
 *
 * @example
 * if (isRedactionFailedError(error)) log.error(`the redact hook threw ${error.hookErrorClass}`);
 */
export function isRedactionFailedError(error: unknown): error is RedactionFailedError {
  return typeof error === 'object' && error !== null && brand in error;
}
