const brand = Symbol.for('stormguard.CorruptBudgetStateError');

/**
 * A dependency's stored budget state could not be read (written by hand or by another version). Only that
 * dependency is affected: its next write replaces the state with fresh counts.
 *
 * @example
 * try { await store.read('search') } catch (e) { if (isCorruptBudgetStateError(e)) console.log(e.dependency) }
 */
export class CorruptBudgetStateError extends Error {
  readonly [brand] = true;
  override name = 'CorruptBudgetStateError';

  constructor(
    readonly dependency: string,
    readonly reason: string,
  ) {
    super(
      `retry budget state of dependency ${JSON.stringify(dependency)} cannot be read (${reason}); ` +
        'the next retry decision for it replaces it with fresh counts',
    );
  }
}

/**
 * True for a {@link CorruptBudgetStateError}, across package copies.
 *
 * @example
 * if (isCorruptBudgetStateError(error)) log.warn(`budget of ${error.dependency} unreadable: ${error.reason}`);
 */
export function isCorruptBudgetStateError(error: unknown): error is CorruptBudgetStateError {
  return typeof error === 'object' && error !== null && brand in error;
}
