import type { Classification, Classifier, ClassifyContext, RetryPolicy } from '../types.js';
import { composeClassifiers, throughCauses } from './compose.js';
import { classifyMysql, classifyPostgres } from './database.js';
import { classifyMarked } from './error-classes.js';
import { classifyHttp } from './http.js';
import { classifyNetwork } from './network.js';
import { classifyRedis } from './redis.js';

/**
 * Every built-in rule, in order: the application's own markings (`TransientError`, `PermanentError`),
 * HTTP status with `Retry-After`, network codes, Redis availability errors, MySQL errno, Postgres SQLSTATE. Needs `context.nowMs` only
 * for a `Retry-After` given as an HTTP-date (it defaults to 0, the epoch, so a date is read as far future
 * rather than past).
 *
 * @example
 * builtInClassifier(err, { nowMs: clock.now() });
 */
export const builtInClassifier: Classifier = composeClassifiers(
  classifyMarked,
  (error, context?: ClassifyContext) => classifyHttp(error, context?.nowMs ?? 0),
  classifyNetwork,
  classifyRedis,
  classifyMysql,
  classifyPostgres,
);

/**
 * Decides whether a failure is worth another attempt under `policy`:
 *
 * 1. the policy's own `classifiers`, asked about the error and then each error it wraps (`cause`);
 * 2. the built-in rules ({@link builtInClassifier}), the same way; a recognised transient family that the
 *    policy's `retryOn` leaves out becomes not retryable (same reason label);
 * 3. otherwise `{ retryable: policy.retryUnknown, reason: 'unknown' }`.
 *
 * Pure: the time (for HTTP-date `Retry-After`) is the `nowMs` parameter.
 *
 * @example
 * classify(Object.assign(new Error('x'), { status: 503 }), policy, Date.now());
 * // { retryable: true, reason: 'http-503', family: 'http-5xx' }
 */
export function classify(
  error: unknown,
  policy: Pick<RetryPolicy, 'classifiers' | 'retryOn' | 'retryUnknown'>,
  nowMs: number,
): Classification {
  const context: ClassifyContext = { nowMs };
  if (policy.classifiers && policy.classifiers.length > 0) {
    const own = throughCauses(composeClassifiers(...policy.classifiers))(error, context);
    if (own !== undefined) return own;
  }
  const builtIn = throughCauses(builtInClassifier)(error, context);
  if (builtIn !== undefined) {
    if (builtIn.retryable && builtIn.family && policy.retryOn && !policy.retryOn.includes(builtIn.family))
      return { retryable: false, reason: builtIn.reason, family: builtIn.family };
    return builtIn;
  }
  return { retryable: policy.retryUnknown, reason: 'unknown' };
}
