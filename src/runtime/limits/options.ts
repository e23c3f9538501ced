import { z } from 'zod';
import { dependencyNameProblem } from '../../common/names.js';
import { parseWith } from '../../common/validation.js';
import { ValidationError } from '../../errors/validation-error.js';
import type { DependencyLimit, LimitStore } from './store.js';

/**
 * One dependency's limits in a worker's code (`createWorker(…, { limits: { openai: … } })`). Each field
 * unset: no such limit. Where workers' code disagrees, the lower value wins; an operator's override
 * (`stormguard limits set`) wins over all code until it expires.
 *
 * @example
 * const openai: DependencyLimitOptions = { maxInFlight: 25, maxRatePerSecond: 50, leaseMs: 60_000 };
 */
export interface DependencyLimitOptions extends DependencyLimit {
  /** Calls in flight at once, fleet-wide, in cost units (`ctx.call(…, { cost })`, default 1). A whole number >= 1. */
  maxInFlight?: number | undefined;
  /** Cost units started per second, fleet-wide. A finite number > 0. */
  maxRatePerSecond?: number | undefined;
  /**
   * How long an in-flight slot lives unless renewed, in ms: a slot is renewed every `leaseMs / 3` while its
   * call runs, so only a crashed worker's slots lapse, within `leaseMs`. Default 30 000.
   */
  leaseMs?: number | undefined;
}

/**
 * The `limits` worker option: dependency name → its limits.
 *
 * @example
 * const limits: LimitsByDependency = { openai: { maxInFlight: 25 }, crm: { maxRatePerSecond: 50 } };
 */
export type LimitsByDependency = Readonly<Record<string, DependencyLimitOptions>>;

/**
 * How a worker enforces limits (`createWorker(…, { limitsOptions })`). Every field has a default.
 *
 * @example
 * const limitsOptions: LimitsOptions = { store: new RedisFlowStore({ redis }), stateCacheMs: 250, maxPaceWaitMs: 1_000 };
 */
export interface LimitsOptions {
  /**
   * Where the fleet shares limits: a flow store (`RedisFlowStore`, `PostgresFlowStore`; `MemoryFlowStore`
   * for one process). Default: `flowControl.store` when the worker has flow control; else, on BullMQ over
   * Redis, a `RedisFlowStore` (prefix `stormguard`) on the worker's connection, and on BullMQ over
   * PostgreSQL, a `PostgresFlowStore` on its connection. A RabbitMQ consumer has no default.
   */
  store?: LimitStore | undefined;
  /**
   * How long this worker reuses what it read of a dependency's limits (an operator's override, a hold), in
   * ms: a change reaches every worker within it. Default 250.
   */
  stateCacheMs?: number | undefined;
  /**
   * The longest a call (or a job before it starts) waits in the worker for a slot, in ms; past it the job
   * is held without using an attempt (its queue paused, or the job delayed). Default 1 000.
   */
  maxPaceWaitMs?: number | undefined;
  /**
   * The longest a job whose queue's own dependency (flow control's `queueDependency`, or the one
   * dependency the `dependencies` mapping names) is at its in-flight cap waits in the worker before it
   * starts, in ms; past it the queue is paused as `maxPaceWaitMs` would. The job keeps its job slot while
   * it waits, so the worker takes no more jobs: a fleet pinned at its cap costs the store a poll per
   * worker, not a job put back and fetched again every `maxPaceWaitMs`. A freed slot of this worker goes
   * to its own waiting job at once; one freed elsewhere is found within 50 to 400 ms. Default 30 000 (0:
   * `maxPaceWaitMs`, as for any other dependency).
   */
  maxStartWaitMs?: number | undefined;
  /** How long the rate ramps up after a Retry-After hold's first success, in ms (0: no ramp). Default 30 000. */
  slowStartMs?: number | undefined;
  /** Cost units per second admitted fleet-wide right after a hold. Default 1. */
  floorPerSecond?: number | undefined;
}

/** One dependency's limits with every default applied. */
export interface ResolvedDependencyLimit {
  /** What this worker declares to the store. */
  limit: DependencyLimit;
  leaseMs: number;
}

/** {@link LimitsOptions} and the `limits` option with every default applied (the store aside). */
export interface ResolvedLimitsOptions {
  limits: ReadonlyMap<string, ResolvedDependencyLimit>;
  stateCacheMs: number;
  maxPaceWaitMs: number;
  maxStartWaitMs: number;
  slowStartMs: number;
  floorPerSecond: number;
}

/** The lease of a dependency this worker has no code limits for (an operator's override, a hold). */
export const DEFAULT_LEASE_MS = 30_000;

const DependencySchema = z
  .object({
    maxInFlight: z
      .number()
      .int('must be a whole number >= 1 (pause the dependency to stop every call)')
      .min(1, 'must be a whole number >= 1 (pause the dependency to stop every call)')
      .max(Number.MAX_SAFE_INTEGER)
      .optional(),
    maxRatePerSecond: z.number().finite().positive().optional(),
    leaseMs: z
      .number()
      .int('must be a whole number of ms >= 300 (a slot is renewed every leaseMs / 3)')
      .min(300, 'must be a whole number of ms >= 300 (a slot is renewed every leaseMs / 3)')
      .max(24 * 3_600_000)
      .default(DEFAULT_LEASE_MS),
  })
  .strict();

const wholeMs = z.number().int().min(0);

const OptionsSchema = z
  .object({
    store: z
      .custom<LimitStore>(
        (v) => typeof v === 'object' && v !== null && typeof (v as LimitStore).exchangeLimits === 'function',
        'must be a flow store with limits (RedisFlowStore, PostgresFlowStore, MemoryFlowStore)',
      )
      .optional(),
    stateCacheMs: wholeMs.default(250),
    maxPaceWaitMs: wholeMs.max(60_000).default(1_000),
    maxStartWaitMs: wholeMs.max(600_000).default(30_000),
    slowStartMs: wholeMs.default(30_000),
    floorPerSecond: z.number().finite().positive().default(1),
  })
  .strict();

const LimitsSchema = z.record(z.string(), DependencySchema);

/**
 * Validates the `limits` and `limitsOptions` worker options and applies the defaults; a bad field throws
 * a `ValidationError` naming it. `subject` names the caller (`createWorker`, `createConsumer`).
 *
 * @example
 * resolveLimitsOptions({ openai: { maxInFlight: 25 } }, {}).limits.get('openai'); // { limit: { maxInFlight: 25 }, leaseMs: 30000 }
 */
export function resolveLimitsOptions(
  limits: LimitsByDependency | undefined,
  options: LimitsOptions | undefined,
  subject = 'limits',
): ResolvedLimitsOptions {
  // Names first, each with the one name rule's own words (a zod record reports only "invalid key").
  if (limits !== null && typeof limits === 'object') {
    const issues = Object.keys(limits).flatMap((name) => {
      const problem = dependencyNameProblem(name);
      return problem === undefined
        ? []
        : [{ path: JSON.stringify(name), value: name, rule: `dependency name ${problem}` }];
    });
    if (issues.length > 0) throw new ValidationError(`${subject} limits`, issues);
  }
  const parsedLimits = parseWith(LimitsSchema, limits ?? {}, `${subject} limits`);
  const parsed = parseWith(OptionsSchema, options ?? {}, `${subject} limitsOptions`);
  const resolved = new Map<string, ResolvedDependencyLimit>();
  for (const [dependency, entry] of Object.entries(parsedLimits)) {
    const limit: DependencyLimit = {};
    if (entry.maxInFlight !== undefined) limit.maxInFlight = entry.maxInFlight;
    if (entry.maxRatePerSecond !== undefined) limit.maxRatePerSecond = entry.maxRatePerSecond;
    resolved.set(dependency, { limit, leaseMs: entry.leaseMs });
  }
  return {
    limits: resolved,
    stateCacheMs: parsed.stateCacheMs,
    maxPaceWaitMs: parsed.maxPaceWaitMs,
    maxStartWaitMs: parsed.maxStartWaitMs,
    slowStartMs: parsed.slowStartMs,
    floorPerSecond: parsed.floorPerSecond,
  };
}

/**
 * The `limits` a worker enforces: its own, with the deprecated `flowControl.maxRatePerSecond` folded in
 * (each of its rates becomes that dependency's `maxRatePerSecond`; where both set one, the lower wins).
 *
 * @example
 * limitsWithRateAlias({ crm: { maxRatePerSecond: 80 } }, { crm: 50, mail: 10 });
 * // { crm: { maxRatePerSecond: 50 }, mail: { maxRatePerSecond: 10 } }
 */
export function limitsWithRateAlias(
  limits: LimitsByDependency | undefined,
  rates: Readonly<Record<string, number>> | undefined,
): LimitsByDependency | undefined {
  if (rates === undefined || Object.keys(rates).length === 0) return limits;
  const merged: Record<string, DependencyLimitOptions> = { ...limits };
  for (const [dependency, rate] of Object.entries(rates)) {
    const own = merged[dependency];
    const lower =
      own?.maxRatePerSecond === undefined || !(own.maxRatePerSecond <= rate) ? rate : own.maxRatePerSecond;
    merged[dependency] = { ...own, maxRatePerSecond: lower };
  }
  return merged;
}
