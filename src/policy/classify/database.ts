import type { Classification } from '../types.js';
import { numberField, stringField } from './fields.js';

/**
 * Postgres SQLSTATEs of a transaction the server rolled back: serialization failure (40001) and deadlock
 * (40P01). Nothing it did was kept, so running it again is safe.
 *
 * @example
 * TRANSACTION_ROLLBACK_SQLSTATES.has('40P01'); // true
 */
export const TRANSACTION_ROLLBACK_SQLSTATES: ReadonlySet<string> = new Set(['40001', '40P01']);

/**
 * True for a Postgres error whose transaction the server rolled back ({@link TRANSACTION_ROLLBACK_SQLSTATES}),
 * its SQLSTATE read as the classifier reads it (`code`, `sqlState` or `sqlstate`).
 *
 * @example
 * isTransactionRollback(Object.assign(new Error('deadlock detected'), { code: '40P01' })); // true
 */
export function isTransactionRollback(error: unknown): boolean {
  return transactionRollbackState(error) !== undefined;
}

/**
 * The SQLSTATE of a Postgres error whose transaction the server rolled back (see
 * {@link isTransactionRollback}), or `undefined` for any other error.
 *
 * @example
 * transactionRollbackState(Object.assign(new Error('deadlock detected'), { code: '40P01' })); // '40P01'
 */
export function transactionRollbackState(error: unknown): string | undefined {
  const sqlState = stringField(error, 'code', 'sqlState', 'sqlstate');
  return sqlState !== undefined && TRANSACTION_ROLLBACK_SQLSTATES.has(sqlState) ? sqlState : undefined;
}

/**
 * Postgres SQLSTATEs worth another attempt: serialization failure (40001), deadlock (40P01), lock not
 * available (55P03), admin shutdown (57P01), crash shutdown (57P02), cannot connect now (57P03, a server
 * starting up), too many connections (53300), and every connection exception (class 08).
 *
 * @example
 * TRANSIENT_SQLSTATES.has('40001'); // true: a serialization failure succeeds when run again
 */
export const TRANSIENT_SQLSTATES: ReadonlySet<string> = new Set([
  ...TRANSACTION_ROLLBACK_SQLSTATES,
  '55P03',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/**
 * SQLSTATE classes that no retry fixes: data exceptions (22), integrity constraint violations (23), and
 * syntax errors or access rule violations (42).
 *
 * @example
 * PERMANENT_SQLSTATE_CLASSES.has('23505'.slice(0, 2)); // true: a unique violation stays one
 */
export const PERMANENT_SQLSTATE_CLASSES: ReadonlySet<string> = new Set(['22', '23', '42']);

/**
 * MySQL/MariaDB errno worth another attempt: deadlock (1213), lock wait timeout (1205), too many
 * connections (1040), and the client's "server has gone away" (2006) and "lost connection" (2013).
 *
 * @example
 * TRANSIENT_MYSQL_ERRNOS.has(1213); // true: ER_LOCK_DEADLOCK
 */
export const TRANSIENT_MYSQL_ERRNOS: ReadonlySet<number> = new Set([1213, 1205, 1040, 2006, 2013]);

/**
 * MySQL errno that no retry fixes: duplicate key (1062), foreign key failures (1451, 1452), bad SQL (1064).
 *
 * @example
 * PERMANENT_MYSQL_ERRNOS.has(1062); // true: ER_DUP_ENTRY
 */
export const PERMANENT_MYSQL_ERRNOS: ReadonlySet<number> = new Set([1062, 1451, 1452, 1064]);

const SQLSTATE = /^[0-9][0-9A-Z]{4}$/;

/**
 * node-postgres's own errors for a connection that closed under a query with no error message from the
 * server (a proxy, load balancer or NAT dropped it, or the server host went away), and pg-pool's for a
 * connection that could not be set up in time. They carry no code, only these messages.
 */
const PG_CONNECTION_LOST = new Set([
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
]);

/** mysql2's `code` for a connection the server (or something in between) closed. */
const MYSQL_CONNECTION_LOST = 'PROTOCOL_CONNECTION_LOST';

/**
 * Classifies Postgres errors (node-postgres puts the SQLSTATE in `code`; others use `sqlState`). Only
 * SQLSTATEs starting with a digit are read from `code`, so Node codes like `EPIPE` are never mistaken for
 * one. Reasons are `pg-<sqlstate>`; a SQLSTATE in neither list gets no opinion. node-postgres's
 * "Connection terminated unexpectedly" (a connection dropped without a word: no SQLSTATE) is retryable as
 * `pg-connection-lost`; its plain "Connection terminated" (the application called `end()`) is not read.
 *
 * @example
 * classifyPostgres({ code: '40P01', severity: 'ERROR' }); // { retryable: true, reason: 'pg-40P01', family: 'database' }
 * classifyPostgres(new Error('Connection terminated unexpectedly'));
 * // { retryable: true, reason: 'pg-connection-lost', family: 'database' }
 */
export function classifyPostgres(error: unknown): Classification | undefined {
  if (
    error instanceof Error &&
    stringField(error, 'code') === undefined &&
    PG_CONNECTION_LOST.has(error.message)
  )
    return { retryable: true, reason: 'pg-connection-lost', family: 'database' };
  const state = stringField(error, 'code', 'sqlState', 'sqlstate');
  if (state === undefined || !SQLSTATE.test(state)) return undefined;
  const reason = `pg-${state}`;
  if (TRANSIENT_SQLSTATES.has(state) || state.startsWith('08'))
    return { retryable: true, reason, family: 'database' };
  if (PERMANENT_SQLSTATE_CLASSES.has(state.slice(0, 2))) return { retryable: false, reason };
  return undefined;
}

/**
 * Classifies MySQL errors by `errno` (mysql2 sets `errno` plus `sqlState`/`sqlMessage`, and a `code` like
 * `ER_LOCK_DEADLOCK`). An errno is trusted only next to one of those, because Node system errors also
 * carry an (negative) `errno`. Reasons are `mysql-<errno>`. A connection the server closed (mysql2's
 * `PROTOCOL_CONNECTION_LOST`, no errno) is retryable as `mysql-connection-lost`.
 *
 * @example
 * classifyMysql({ errno: 1213, code: 'ER_LOCK_DEADLOCK', sqlState: '40001' });
 * // { retryable: true, reason: 'mysql-1213', family: 'database' }
 */
export function classifyMysql(error: unknown): Classification | undefined {
  if (stringField(error, 'code') === MYSQL_CONNECTION_LOST)
    return { retryable: true, reason: 'mysql-connection-lost', family: 'database' };
  const errno = numberField(error, 'errno');
  if (errno === undefined || errno < 1_000) return undefined;
  const code = stringField(error, 'code') ?? '';
  const looksMysql = stringField(error, 'sqlState', 'sqlMessage') !== undefined || /^(ER|CR)_/.test(code);
  if (!looksMysql) return undefined;
  const reason = `mysql-${errno}`;
  if (TRANSIENT_MYSQL_ERRNOS.has(errno)) return { retryable: true, reason, family: 'database' };
  if (PERMANENT_MYSQL_ERRNOS.has(errno)) return { retryable: false, reason };
  return undefined;
}
