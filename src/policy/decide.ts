import { formatDuration } from '../common/duration.js';
import { type BrokenCircuitError, isBrokenCircuitError } from '../errors/broken-circuit-error.js';
import { backoffBase } from './backoff.js';
import { classify } from './classify/classify.js';
import { retryDelay, retryDelayBounds } from './retry-delay.js';
import type { BreakerVerdict, Classification, DeadLetterReason, DecideContext, Decision } from './types.js';

/** The part of a {@link DecideContext} that `decideSync` reads: everything except the gates. */
export type SyncDecideContext = Omit<DecideContext, 'breaker' | 'budget'>;

/** An error the steps before the gates judged worth retrying, with what the later steps need. */
interface Retryable {
  classification: Classification;
  retry: number;
  /** Latest start allowed by `maxAgeMs` (epoch ms), or +Infinity. */
  deadlineMs: number;
}

/**
 * What happens after a failed attempt, in this fixed order:
 *
 * 1. **classify** the error (`classify`); not retryable → `dead-letter` `permanent`.
 * 2. **ceiling and age**: `attemptsMade >= maxAttempts` → `max-attempts`; a `key-required` policy without
 *    `ctx.hasIdempotencyKey` gets one attempt (`no-idempotency-key`); a `Retry-After` above
 *    `policy.retryAfter.maxMs` → `retry-after-too-long` unless `onExceeded` is `'wait'`; and `max-age` when
 *    even the earliest possible start of the retry (the jitter's lower bound, or the server's `Retry-After`)
 *    would fall after `createdAtMs + maxAgeMs`: no retry starts later than `maxAge`.
 * 3. **breaker** (`ctx.breaker`, optional): open → a retry at `halfOpenAtMs` (plus up to one backoff base of
 *    spread; `cause: 'breaker-open'`), or `dead-letter` `breaker-open` when `policy.whenBreakerOpen` says so
 *    or the half-open time is past the job's max age. The attempt that failed really ran, so it is charged:
 *    `maxAttempts` bounds executions whatever the breaker does. The budget is not asked (the breaker already
 *    holds the job back).
 * 4. **budget** (`ctx.budget`, optional): asked only now, for an error that would otherwise be retried.
 *    Denied → `dead-letter` `budget-exhausted`; with `onExhausted: 'defer'`, a retry after one to one and a
 *    half budget windows (spread so deferred jobs do not return together) that does not charge an attempt.
 * 5. **delay**: `retryDelay` (backoff, jitter, cap), never shorter than the server's `Retry-After`, and
 *    shortened if needed so the retry starts no later than the max-age deadline.
 *
 * A call the breaker refused (`BrokenCircuitError`, from `ctx.call` or `CircuitBreaker.execute`) skips the
 * ceiling and the budget: nothing reached the dependency, so it neither uses up an attempt nor spends a
 * retry. It goes straight to the breaker step (delay to the half-open time, or dead-letter `breaker-open`);
 * only the max age still applies.
 *
 * Terminal decisions are `fail` instead of `dead-letter` when `ctx.hasDeadLetterTarget === false`.
 * Pure apart from the two optional gates; time and randomness come from `ctx`.
 *
 * @example
 * const decision = await decide({
 *   policy, error, attemptsMade: job.attemptsMade, createdAtMs: job.timestamp, nowMs: clock.now(),
 *   random: systemRandom, dependency: 'search', budget, breaker,
 * });
 * if (decision.action === 'retry') await job.moveToDelayed(Date.now() + decision.delayMs, token);
 */
export async function decide(ctx: DecideContext): Promise<Decision> {
  const refusal = breakerRefusal(ctx.error);
  if (refusal) return refusedByBreaker(ctx, refusal);
  const early = beforeGates(ctx);
  if ('action' in early) return early;
  if (ctx.breaker) {
    const verdict = await ctx.breaker.check(ctx.dependency);
    if (verdict.state === 'open') return breakerOpen(ctx, early, verdict, true);
  }
  if (ctx.budget) {
    const verdict = await ctx.budget.trySpend(ctx.dependency);
    if (!verdict.granted) return budgetDenied(ctx, early, verdict.windowMs, ctx.budget.onExhausted);
  }
  return withDelay(ctx, early);
}

/**
 * {@link decide} for callers without a breaker or budget: the same steps 1, 2 and 5, synchronously.
 *
 * @example
 * const decision = decideSync({ policy, error, attemptsMade: 1, createdAtMs: 0, nowMs: 0, random, dependency: 'crm' });
 */
export function decideSync(ctx: SyncDecideContext): Decision {
  const early = beforeGates(ctx);
  return 'action' in early ? early : withDelay(ctx, early);
}

/**
 * Why a job that holds no grant was refused before it ran (flow control's admission): the breaker is open,
 * or the budget denied the retry it asked for.
 *
 * @example
 * const refusal: AdmissionRefusal = { by: 'budget', windowMs: 60_000, onExhausted: 'defer' };
 */
export type AdmissionRefusal =
  | { by: 'breaker'; verdict: Pick<BreakerVerdict, 'halfOpenAtMs' | 'halfOpenInMs'> }
  | { by: 'budget'; windowMs: number; onExhausted?: 'dead-letter' | 'defer' | undefined };

/**
 * What happens to a job that was refused admission before it ran: the same breaker and budget steps as
 * {@link decide} (steps 3 and 4), applied to a run that never reached the dependency. Nothing ran, so no
 * attempt is charged: an open breaker delays the job to its half-open time, a denied budget defers it
 * again (or dead-letters it `budget-exhausted`), and either dead-letters it when the wait would pass the
 * job's max age. `ctx.attemptsMade` is the attempt the job is waiting to make (its charged attempts + 1).
 * Pure: time and randomness come from `ctx`.
 *
 * @example
 * const decision = decideRefusedAdmission(
 *   { policy, error, attemptsMade: 2, createdAtMs: 0, nowMs: 10_000, random, dependency: 'search' },
 *   { by: 'budget', windowMs: 60_000, onExhausted: 'defer' },
 * );
 * // { action: 'retry', chargesAttempt: false, cause: 'budget-deferred', delayMs: 60_000..90_000, … }
 */
export function decideRefusedAdmission(ctx: SyncDecideContext, refusal: AdmissionRefusal): Decision {
  const deadlineMs =
    ctx.policy.maxAgeMs === undefined ? Number.POSITIVE_INFINITY : ctx.createdAtMs + ctx.policy.maxAgeMs;
  const r: Retryable = {
    classification: { retryable: true, reason: refusal.by === 'breaker' ? 'breaker-open' : 'budget-denied' },
    retry: ctx.attemptsMade,
    deadlineMs,
  };
  if (refusal.by === 'breaker') return breakerOpen(ctx, r, refusal.verdict, false);
  return budgetDenied(ctx, r, refusal.windowMs, refusal.onExhausted);
}

function beforeGates(ctx: SyncDecideContext): Decision | Retryable {
  const { policy, attemptsMade, nowMs } = ctx;
  if (!Number.isInteger(attemptsMade) || attemptsMade < 1)
    throw new RangeError(`decide: attemptsMade must be an integer >= 1, got ${attemptsMade}`);
  const classification = classify(ctx.error, policy, nowMs);
  const end = (reason: DeadLetterReason, detail: string) => terminal(ctx, reason, detail, classification);

  if (!classification.retryable) return end('permanent', `${classification.reason} is not retryable`);
  if (attemptsMade >= policy.maxAttempts)
    return end('max-attempts', `${attemptsMade} of ${policy.maxAttempts} attempts made`);
  if (policy.idempotency === 'key-required' && ctx.hasIdempotencyKey !== true)
    return end('no-idempotency-key', 'this policy retries only jobs that carry an idempotency key');

  const asked = classification.retryAfterMs;
  if (
    asked !== undefined &&
    asked > policy.retryAfter.maxMs &&
    policy.retryAfter.onExceeded === 'dead-letter'
  )
    return end(
      'retry-after-too-long',
      `the server asked to wait ${formatDuration(asked)}, above the policy's ${formatDuration(policy.retryAfter.maxMs)}`,
    );

  const retry = attemptsMade;
  const deadlineMs =
    policy.maxAgeMs === undefined ? Number.POSITIVE_INFINITY : ctx.createdAtMs + policy.maxAgeMs;
  const earliest = Math.max(retryDelayBounds(policy, retry, ctx.previousDelayMs).minMs, asked ?? 0);
  if (nowMs + earliest > deadlineMs)
    return end(
      'max-age',
      `the next retry could not start before the max age of ${formatDuration(policy.maxAgeMs ?? 0)}`,
    );
  return { classification, retry, deadlineMs };
}

/** The breaker refusal behind `error`, also when a caller wrapped it as a `cause`. */
function breakerRefusal(error: unknown): BrokenCircuitError | undefined {
  for (let e = error, depth = 0; e !== undefined && depth < 5; depth++) {
    if (isBrokenCircuitError(e)) return e;
    e = typeof e === 'object' && e !== null ? (e as { cause?: unknown }).cause : undefined;
  }
  return undefined;
}

function refusedByBreaker(ctx: SyncDecideContext, refusal: BrokenCircuitError): Decision {
  const classification: Classification = { retryable: true, reason: 'breaker-open' };
  const deadlineMs =
    ctx.policy.maxAgeMs === undefined ? Number.POSITIVE_INFINITY : ctx.createdAtMs + ctx.policy.maxAgeMs;
  // Half-open with every probe slot taken carries no half-open time: the backoff's own delay is used.
  return breakerOpen(ctx, { classification, retry: ctx.attemptsMade, deadlineMs }, refusal, false);
}

function breakerOpen(
  ctx: SyncDecideContext,
  r: Retryable,
  breaker: Pick<BreakerVerdict, 'halfOpenAtMs' | 'halfOpenInMs'>,
  /** True when the failed attempt reached the dependency; false for a call the breaker refused. */
  chargesAttempt: boolean,
): Decision {
  const waitMs = untilHalfOpen(ctx, breaker);
  if (ctx.policy.whenBreakerOpen === 'dead-letter')
    return terminal(ctx, 'breaker-open', `the ${ctx.dependency} breaker is open`, r.classification);
  // Waiting jobs return spread over one backoff base after the half-open time, not all at its first
  // millisecond; without a half-open time the breaker gives no hint and the backoff's own delay is used.
  const delayed =
    waitMs === undefined
      ? retryDelay(ctx.policy, r.retry, ctx)
      : waitMs + Math.round(ctx.random() * backoffBase(ctx.policy.backoff));
  const delayMs = Math.max(delayed, r.classification.retryAfterMs ?? 0);
  if (ctx.nowMs + delayMs > r.deadlineMs)
    return terminal(
      ctx,
      'breaker-open',
      `the ${ctx.dependency} breaker stays open past the job's max age`,
      r.classification,
    );
  return {
    action: 'retry',
    delayMs,
    retry: r.retry,
    chargesAttempt,
    cause: 'breaker-open',
    classification: r.classification,
  };
}

/**
 * How long until the breaker half-opens. Its deadline is on the breaker's clock (Redis TIME), so the wait
 * is the duration the breaker measured on that clock; only a gate that gives none has its deadline
 * compared with `ctx.nowMs`.
 */
function untilHalfOpen(
  ctx: SyncDecideContext,
  breaker: Pick<BreakerVerdict, 'halfOpenAtMs' | 'halfOpenInMs'>,
): number | undefined {
  if (breaker.halfOpenInMs !== undefined) return Math.max(0, breaker.halfOpenInMs);
  if (breaker.halfOpenAtMs !== undefined) return Math.max(0, breaker.halfOpenAtMs - ctx.nowMs);
  return undefined;
}

function budgetDenied(
  ctx: SyncDecideContext,
  r: Retryable,
  windowMs: number,
  onExhausted: 'dead-letter' | 'defer' | undefined,
): Decision {
  const detail = `the ${ctx.dependency} retry budget is exhausted`;
  if (onExhausted !== 'defer') return terminal(ctx, 'budget-exhausted', detail, r.classification);
  // One window lets the budget refill; the extra half-window spread keeps deferred jobs from returning as a herd.
  const spread = Math.round((ctx.random() * windowMs) / 2);
  const delayMs = Math.max(windowMs + spread, r.classification.retryAfterMs ?? 0);
  if (ctx.nowMs + windowMs > r.deadlineMs)
    return terminal(
      ctx,
      'budget-exhausted',
      `${detail} and deferring would pass the job's max age`,
      r.classification,
    );
  return {
    action: 'retry',
    delayMs: Math.min(delayMs, Math.max(windowMs, r.deadlineMs - ctx.nowMs)),
    retry: r.retry,
    chargesAttempt: false,
    cause: 'budget-deferred',
    classification: r.classification,
  };
}

function withDelay(ctx: SyncDecideContext, r: Retryable): Decision {
  const backoff = retryDelay(ctx.policy, r.retry, ctx);
  const asked = r.classification.retryAfterMs ?? 0;
  const wanted = Math.max(backoff, asked);
  // beforeGates checked that the earliest start fits, so the deadline never cuts below Retry-After.
  const delayMs = Math.min(wanted, r.deadlineMs - ctx.nowMs);
  return {
    action: 'retry',
    delayMs,
    retry: r.retry,
    chargesAttempt: true,
    cause: asked > backoff ? 'retry-after' : 'backoff',
    classification: r.classification,
  };
}

function terminal(
  ctx: SyncDecideContext,
  reason: DeadLetterReason,
  detail: string,
  classification: Classification,
): Decision {
  return ctx.hasDeadLetterTarget === false
    ? { action: 'fail', reason, detail, classification }
    : { action: 'dead-letter', reason, detail, classification };
}
