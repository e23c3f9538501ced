/** PostgreSQL's deadlock and serialization failures: the server rolled the transaction back. */
const TRANSACTION_CONFLICTS: ReadonlySet<string> = new Set(['40P01', '40001']);

/**
 * True for a PostgreSQL error whose transaction was rolled back for a deadlock (SQLSTATE 40P01) or a
 * serialization failure (40001): nothing it did was kept, and running it again is safe. BullMQ 6's
 * PostgreSQL backend passes them on as `pg` throws them, `code` set.
 *
 * @example
 * isTransactionConflict(Object.assign(new Error('deadlock detected'), { code: '40P01' })); // true
 */
export function isTransactionConflict(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    TRANSACTION_CONFLICTS.has((error as { code?: unknown }).code as string)
  );
}
