const brand = Symbol.for('stormguard.TransientError');

/**
 * Marks a failure as worth retrying (a timeout, a 503, a dropped connection). `retryAfterMs` carries a
 * server's request to wait at least that long.
 *
 * @example
 * throw new TransientError('search timed out', { cause: err, retryAfterMs: 5_000 });
 */
export class TransientError extends Error {
  readonly [brand] = true;
  override name = 'TransientError';
  readonly retryAfterMs: number | undefined;

  constructor(message: string, options: { cause?: unknown; retryAfterMs?: number } = {}) {
    super(message, { cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * True for a {@link TransientError} (and its subclasses, such as {@link BrokenCircuitError}), across
 * package copies.
 *
 * @example
 * if (isTransientError(error)) log.warn(`will retry; asked to wait ${error.retryAfterMs ?? 0} ms`);
 */
export function isTransientError(error: unknown): error is TransientError {
  return typeof error === 'object' && error !== null && brand in error;
}
