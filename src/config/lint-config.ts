import { formatDuration } from '../common/duration.js';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { isValidationError } from '../errors/validation-error.js';
import { backoffCap } from '../policy/backoff.js';
import { LONG_WINDOW_MS } from '../policy/plan-window.js';
import { retryDelayBounds } from '../policy/retry-delay.js';
import { worstCaseSpanMs } from '../policy/schedule-span.js';
import type { RetryPolicy } from '../policy/types.js';
import { parseConfigShape, resolvePolicyEntry } from './policy-config.js';

/** How bad a finding is: `error` fails `stormguard lint` (exit 1); the others are advice. */
export type LintSeverity = 'error' | 'warning' | 'info';

/** One finding of {@link lintConfig}. */
export interface LintFinding {
  severity: LintSeverity;
  /** The policy it concerns, or null for the config as a whole. */
  policy: string | null;
  /** The checklist item: `valid`, `idempotency`, `classification`, `limits`, `jitter`, `cap`, `dead-letter`. */
  rule: string;
  message: string;
}

/** What {@link lintConfig} returns. */
export interface LintReport {
  /** Names of the policies checked. */
  policies: string[];
  findings: LintFinding[];
  errors: number;
  warnings: number;
}

/** Delays above this park jobs for longer than an operator will wait to see them move. */
const LONG_CAP_MS = 60 * 60_000;

/**
 * Checks a config's policies against the retry design checklist: idempotency decided before retries
 * (declared; a key-required policy has a key TTL of at least its max age), errors classified (unknown errors
 * not blindly retried), finite limits (and a retry curve that ends within 15 minutes or hands over to a
 * dead-letter queue), jitter, a sane cap, a dead-letter target, and key TTL >= maxAge. An invalid policy is
 * one error per broken rule; the other policies are still checked.
 *
 * @example
 * const report = lintConfig(await readConfigFile('stormguard.config.yaml'), 'stormguard.config.yaml');
 * if (report.errors > 0) process.exitCode = 1;
 */
export function lintConfig(data: unknown, source: string): LintReport {
  const findings: LintFinding[] = [];
  const shape = parseConfigShape(data, source);
  const add = (severity: LintSeverity, policy: string | null, rule: string, message: string) =>
    findings.push({ severity, policy, rule, message });

  if (shape.deadLetter === false)
    add(
      'error',
      null,
      'dead-letter',
      'deadLetter is false: jobs that run out of retries would be failed, not kept for replay',
    );
  else if (shape.deadLetter === undefined)
    add(
      'warning',
      null,
      'dead-letter',
      'no deadLetter target named; name the queue so replay and alerts know where failed jobs go',
    );

  for (const [key, entry] of Object.entries(shape.policies)) {
    let policy: RetryPolicy;
    try {
      policy = resolvePolicyEntry(key, entry, shape);
    } catch (error) {
      if (isValidationError(error))
        for (const issue of error.issues)
          add(
            'error',
            key,
            issue.path === 'idempotencyKeyTtlMs' ? 'idempotency' : 'valid',
            `${issue.path || '(root)'}: ${issue.rule}`,
          );
      else if (isInvalidInputError(error)) add('error', key, 'valid', error.message);
      else throw error;
      continue;
    }
    for (const f of lintPolicy(policy, entry as Record<string, unknown>, shape.idempotencyKeyTtlMs))
      add(f.severity, key, f.rule, f.message);
  }
  return {
    policies: Object.keys(shape.policies),
    findings,
    errors: findings.filter((f) => f.severity === 'error').length,
    warnings: findings.filter((f) => f.severity === 'warning').length,
  };
}

function lintPolicy(
  policy: RetryPolicy,
  entry: Record<string, unknown>,
  configTtlMs: number | undefined,
): Omit<LintFinding, 'policy'>[] {
  const out: Omit<LintFinding, 'policy'>[] = [];
  const add = (severity: LintSeverity, rule: string, message: string) =>
    out.push({ severity, rule, message });
  const retries = policy.maxAttempts > 1;
  const age = policy.maxAgeMs;

  // Idempotency before retries.
  if (retries && entry.preset === undefined && entry.idempotency === undefined)
    add(
      'warning',
      'idempotency',
      "idempotency is not declared (it defaults to 'idempotent'); state it, or use 'key-required' for side effects",
    );
  if (policy.idempotency === 'key-required') {
    const ttl = policy.idempotencyKeyTtlMs ?? configTtlMs;
    if (ttl === undefined)
      add(
        'warning',
        'idempotency',
        `no idempotency key TTL declared; keys must live at least ${age ? formatDuration(age) : 'as long as the retries'}`,
      );
    if (age === undefined)
      add(
        'warning',
        'idempotency',
        'key-required without maxAgeMs: the retries have no time bound, so no key TTL is provably long enough',
      );
  }

  // Classified errors.
  if (policy.retryUnknown)
    add(
      policy.idempotency === 'idempotent' ? 'info' : 'warning',
      'classification',
      'retryUnknown is true: an error no rule recognises (a bug) is retried too; add classifiers or set it false',
    );
  if (!policy.retryUnknown && policy.retryOn?.length === 0 && !policy.classifiers?.length)
    add('info', 'classification', 'only errors thrown as TransientError are retried');

  // Finite limits.
  const span = worstCaseSpanMs(policy);
  const horizon = Math.min(span, age ?? Number.POSITIVE_INFINITY);
  if (retries && horizon > LONG_WINDOW_MS)
    add(
      'warning',
      'limits',
      `retries can hold a job for ${formatDuration(horizon)}; past 15m a dead-letter queue and replay serve better`,
    );
  if (retries && age !== undefined && age < retryDelayBounds(policy, 1).minMs)
    add(
      'warning',
      'limits',
      `maxAgeMs (${formatDuration(age)}) is shorter than the first retry's delay: no retry can start`,
    );
  else if (retries && age !== undefined && age > span && policy.retryAfter.onExceeded === 'dead-letter')
    add(
      'info',
      'limits',
      `maxAgeMs (${formatDuration(age)}) never binds: every retry starts within ${formatDuration(span)}`,
    );
  if (retries && age === undefined)
    add(
      'info',
      'limits',
      `no maxAgeMs: only maxAttempts ends the retries (within ${formatDuration(span)} plus any Retry-After waits)`,
    );

  // Jitter and cap.
  if (retries && policy.jitter === 'none')
    add(
      'warning',
      'jitter',
      'jitter is none: a fleet that failed together retries together; use full, equal or decorrelated',
    );
  const cap = backoffCap(policy.backoff);
  if (retries && cap > LONG_CAP_MS)
    add(
      'warning',
      'cap',
      `maxDelayMs is ${formatDuration(cap)}; delays above 1h park jobs where nobody sees them`,
    );
  if (retries && retryDelayBounds(policy, 1).maxMs === 0)
    add('warning', 'cap', 'the delay is 0: retries run at once and hit a failing dependency in a burst');
  return out;
}
