/**
 * The maths of fleet-wide limits (store.ts), as pure functions: which limits are enforced, whether one
 * lease may be taken, and the checks of a request. The memory store runs them as they are; the Redis
 * script (src/redis/lua/limits-exchange-3.lua) and the PostgreSQL function
 * (src/postgres/sql/functions/limits_exchange.sql) compute the same, and the limits cases of
 * src/runtime/flow-control/store.case.ts hold every store to it.
 */

import { ValidationError, type ValidationIssue } from '../../errors/validation-error.js';
import { pace } from '../flow-control/pacing.js';
import { slowStartRate } from '../flow-control/slow-start.js';
import type {
  DependencyLimit,
  LimitExchange,
  LimitExchangeResult,
  LimitHold,
  LimitOverride,
} from './store.js';

/**
 * The lowest value of each field among `limits` (a field no limit sets stays unset): where workers' code
 * disagrees, the lower value wins.
 *
 * @example
 * lowestLimit([{ maxInFlight: 25 }, { maxInFlight: 10, maxRatePerSecond: 50 }]); // { maxInFlight: 10, maxRatePerSecond: 50 }
 */
export function lowestLimit(limits: Iterable<DependencyLimit>): DependencyLimit {
  const lowest: DependencyLimit = {};
  for (const limit of limits) {
    if (limit.maxInFlight !== undefined)
      lowest.maxInFlight = Math.min(lowest.maxInFlight ?? Number.POSITIVE_INFINITY, limit.maxInFlight);
    if (limit.maxRatePerSecond !== undefined)
      lowest.maxRatePerSecond = Math.min(
        lowest.maxRatePerSecond ?? Number.POSITIVE_INFINITY,
        limit.maxRatePerSecond,
      );
  }
  return lowest;
}

/**
 * What is enforced: the override's fields where it sets them, else the declared ones.
 *
 * @example
 * effectiveLimit({ maxInFlight: 25, maxRatePerSecond: 50 }, { maxInFlight: 5 }); // { maxInFlight: 5, maxRatePerSecond: 50 }
 */
export function effectiveLimit(declared: DependencyLimit, override?: DependencyLimit): DependencyLimit {
  const effective: DependencyLimit = {};
  const maxInFlight = override?.maxInFlight ?? declared.maxInFlight;
  const maxRatePerSecond = override?.maxRatePerSecond ?? declared.maxRatePerSecond;
  if (maxInFlight !== undefined) effective.maxInFlight = maxInFlight;
  if (maxRatePerSecond !== undefined) effective.maxRatePerSecond = maxRatePerSecond;
  return effective;
}

/**
 * Cost units started per second, `nowMs`: the effective `maxRatePerSecond` (Infinity when unset), on the
 * slow-start ramp (`slowStartRate`, that rate as its ceiling) while the ramp after a hold runs.
 *
 * @example
 * limitRate({ maxRatePerSecond: 50 }, 1_000, 1_000, { slowStartMs: 10_000, floorPerSecond: 1 }); // 1
 * limitRate({ maxRatePerSecond: 50 }, undefined, 1_000, { slowStartMs: 10_000, floorPerSecond: 1 }); // 50
 */
export function limitRate(
  effective: DependencyLimit,
  recoveredAtMs: number | undefined,
  nowMs: number,
  ramp: LimitExchange['ramp'],
): number {
  return slowStartRate(recoveredAtMs === undefined ? undefined : nowMs - recoveredAtMs, {
    slowStartMs: ramp.slowStartMs,
    floorPerSecond: ramp.floorPerSecond,
    maxRatePerSecond: effective.maxRatePerSecond,
  });
}

/**
 * What a store knows of a dependency when it decides one take: its live override and hold, whether it
 * is probing, the cost units in flight, and the pacer's theoretical arrival time.
 *
 * @example
 * const at: TakeContext = { nowMs: 1_000, effective: { maxInFlight: 2 }, probing: false, probes: 1,
 *   inFlight: 1, tatMs: 0, recoveredAtMs: undefined, ramp: { slowStartMs: 10_000, floorPerSecond: 1 } };
 */
export interface TakeContext {
  nowMs: number;
  effective: DependencyLimit;
  /** The live override, if any. */
  override?: Pick<LimitOverride, 'paused' | 'expiresAtMs'> | undefined;
  /** The hold, if any (live or not: one whose `untilMs` has come refuses nothing). */
  hold?: Pick<LimitHold, 'untilMs'> | undefined;
  /** Probing after a hold (the hold itself has ended). */
  probing: boolean;
  probes: number;
  /** Cost units held by live leases. */
  inFlight: number;
  tatMs: number;
  recoveredAtMs: number | undefined;
  ramp: LimitExchange['ramp'];
}

/**
 * One take's verdict.
 *
 * @example
 * const verdict: TakeVerdict = { granted: false, refusedBy: 'rate', waitMs: 250 };
 */
export type TakeVerdict =
  | { granted: true /** The pacer's state after the grant. */; tatMs: number }
  | { granted: false; refusedBy: NonNullable<LimitExchangeResult['refusedBy']>; waitMs: number };

/**
 * Whether a lease of `cost` units may be taken now, checked in this order: a paused override (wait until
 * it expires, 0 when it never does: the caller polls), a live hold (until it ends), the in-flight cap (the
 * effective `maxInFlight`, or `probes` while probing, whichever is lower; wait 0: it frees when a lease
 * ends), then the rate pacer (`pace` at `rate / cost` per second, so a call of cost n takes n slots; wait
 * until the next slot). A call heavier than the whole cap is granted when nothing is in flight, so it runs
 * alone instead of never.
 *
 * @example
 * takeVerdict({ nowMs: 1_000, effective: { maxInFlight: 2 }, probing: false, probes: 1, inFlight: 2,
 *   tatMs: 0, recoveredAtMs: undefined, ramp: { slowStartMs: 0, floorPerSecond: 1 } }, 1);
 * // { granted: false, refusedBy: 'in-flight', waitMs: 0 }
 */
export function takeVerdict(at: TakeContext, cost: number): TakeVerdict {
  if (at.override?.paused === true)
    return {
      granted: false,
      refusedBy: 'paused',
      waitMs: at.override.expiresAtMs === undefined ? 0 : at.override.expiresAtMs - at.nowMs,
    };
  if (at.hold !== undefined && at.hold.untilMs > at.nowMs)
    return { granted: false, refusedBy: 'hold', waitMs: at.hold.untilMs - at.nowMs };
  const cap = Math.min(
    at.effective.maxInFlight ?? Number.POSITIVE_INFINITY,
    at.probing ? at.probes : Number.POSITIVE_INFINITY,
  );
  if (at.inFlight > 0 && at.inFlight + cost > cap)
    return { granted: false, refusedBy: 'in-flight', waitMs: 0 };
  const rate = limitRate(at.effective, at.recoveredAtMs, at.nowMs, at.ramp);
  const verdict = pace(at.tatMs, at.nowMs, rate / cost, 0);
  if (!verdict.granted) return { granted: false, refusedBy: 'rate', waitMs: verdict.waitMs };
  return { granted: true, tatMs: verdict.tatMs };
}

/**
 * Throws a {@link ValidationError} naming each field of `request` that no store can take: `leaseMs` and
 * `probes` whole numbers >= 1, each cost a whole number >= 1, declared limits valid (see
 * {@link checkDependencyLimit}), a non-negative ramp with a floor above 0.
 *
 * @example
 * checkLimitExchange({ ...request, leaseMs: 0 }); // throws: leaseMs: 0 is invalid: must be a whole number of ms >= 1
 */
export function checkLimitExchange(request: LimitExchange): void {
  const issues: ValidationIssue[] = [];
  if (typeof request.holder !== 'string' || request.holder === '')
    issues.push({ path: 'holder', value: request.holder, rule: 'must be a non-empty string' });
  if (!isWhole(request.leaseMs))
    issues.push({ path: 'leaseMs', value: request.leaseMs, rule: 'must be a whole number of ms >= 1' });
  if (!isWhole(request.probes))
    issues.push({ path: 'probes', value: request.probes, rule: 'must be a whole number >= 1' });
  issues.push(...limitIssues(request.declared, 'declared'));
  request.take.forEach((t, i) => {
    if (!isWhole(t.cost))
      issues.push({ path: `take.${i}.cost`, value: t.cost, rule: 'must be a whole number of units >= 1' });
  });
  const { slowStartMs, floorPerSecond } = request.ramp;
  if (!(Number.isFinite(slowStartMs) && slowStartMs >= 0))
    issues.push({ path: 'ramp.slowStartMs', value: slowStartMs, rule: 'must be a number of ms >= 0' });
  if (!(Number.isFinite(floorPerSecond) && floorPerSecond > 0))
    issues.push({ path: 'ramp.floorPerSecond', value: floorPerSecond, rule: 'must be a number > 0' });
  if (issues.length > 0) throw new ValidationError('limits exchange', issues);
}

/**
 * Throws a {@link ValidationError} when a limit cannot be enforced: `maxInFlight` a whole number >= 1,
 * `maxRatePerSecond` a finite number > 0 (a pause is how to stop every call). `subject` names it.
 *
 * @example
 * checkDependencyLimit({ maxInFlight: 0 }, 'override'); // throws: maxInFlight: 0 is invalid: …
 */
export function checkDependencyLimit(limit: DependencyLimit, subject: string): void {
  const issues = limitIssues(limit, '');
  if (issues.length > 0) throw new ValidationError(subject, issues);
}

/**
 * An operator's override as every store keeps it, checked: the limits it sets (unset fields absent),
 * `paused` only when true, `reason` and `by`. Throws a {@link ValidationError} naming what is wrong: a
 * limit as {@link checkDependencyLimit} says, an empty `reason`, a `by` that is not a string, an
 * `expiresInMs` that is not a whole number of ms >= 1.
 *
 * @example
 * normalOverride({ maxInFlight: 5, paused: false, reason: 'incident', by: 'ops' }); // { maxInFlight: 5, reason: 'incident', by: 'ops' }
 */
export function normalOverride(
  override: Omit<LimitOverride, 'setAtMs' | 'expiresAtMs'> & { expiresInMs?: number | undefined },
): Omit<LimitOverride, 'setAtMs' | 'expiresAtMs'> {
  const issues = limitIssues(override, '');
  if (typeof override.reason !== 'string' || override.reason.trim() === '')
    issues.push({ path: 'reason', value: override.reason, rule: 'must say why, as a non-empty string' });
  if (typeof override.by !== 'string')
    issues.push({ path: 'by', value: override.by, rule: 'must name who sets it, as a string' });
  if (override.expiresInMs !== undefined && !isWhole(override.expiresInMs))
    issues.push({
      path: 'expiresInMs',
      value: override.expiresInMs,
      rule: 'must be a whole number of ms >= 1',
    });
  if (issues.length > 0) throw new ValidationError('limits override', issues);
  const normal: Omit<LimitOverride, 'setAtMs' | 'expiresAtMs'> = { reason: override.reason, by: override.by };
  if (override.maxInFlight !== undefined) normal.maxInFlight = override.maxInFlight;
  if (override.maxRatePerSecond !== undefined) normal.maxRatePerSecond = override.maxRatePerSecond;
  if (override.paused === true) normal.paused = true;
  return normal;
}

/**
 * Throws a {@link ValidationError} unless `forMs`, a hold's length, is a whole number of ms >= 1.
 *
 * @example
 * checkHoldMs(0); // throws: forMs: 0 is invalid: must be a whole number of ms >= 1
 */
export function checkHoldMs(forMs: number): void {
  if (!isWhole(forMs))
    throw new ValidationError('limits hold', [
      { path: 'forMs', value: forMs, rule: 'must be a whole number of ms >= 1' },
    ]);
}

function limitIssues(limit: DependencyLimit, at: string): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const path = (field: string) => (at === '' ? field : `${at}.${field}`);
  if (limit.maxInFlight !== undefined && !isWhole(limit.maxInFlight))
    issues.push({
      path: path('maxInFlight'),
      value: limit.maxInFlight,
      rule: 'must be a whole number >= 1 (pause the dependency to stop every call)',
    });
  const rate = limit.maxRatePerSecond;
  if (rate !== undefined && !(Number.isFinite(rate) && rate > 0))
    issues.push({ path: path('maxRatePerSecond'), value: rate, rule: 'must be a finite number > 0' });
  return issues;
}

function isWhole(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}
