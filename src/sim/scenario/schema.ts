import { z } from 'zod';
import { formatDuration } from '../../common/duration.js';
import { isValidationError } from '../../errors/validation-error.js';
import { getPreset, presets } from '../../policy/presets.js';
import { durationSchema as duration, policySchema } from '../../policy/schema.js';
import { checkDependencyLimit } from '../../runtime/limits/limit-maths.js';
import { formatCount } from '../format/numbers.js';

const probability = () => z.number().min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1');
const name = () =>
  z.string().regex(/^[A-Za-z0-9][\w.-]*$/, 'must be a name of letters, digits, ".", "_" or "-" (no spaces)');

/**
 * The kinds of strategy the simulator knows: a per-job ceiling alone, plus a fleet budget, plus one budget
 * per worker, plus a fleet budget and a circuit breaker, flow control (the fleet budget and breaker, with
 * workers that stop taking a down dependency's jobs and ramp back up after it recovers), or the fleet
 * budget plus the dependencies' `limits` (`budget-and-limits`). A scenario that names none runs all but
 * `budget-and-breaker` and `budget-and-limits`.
 *
 * @example
 * STRATEGY_KINDS.includes('flow-control'); // true
 */
export const STRATEGY_KINDS = [
  'ceiling-only',
  'fleet-budget',
  'per-worker-budgets',
  'budget-and-breaker',
  'flow-control',
  'budget-and-limits',
] as const;

/** The strategies a scenario runs when it names none. */
export const DEFAULT_STRATEGIES: readonly StrategyKind[] = [
  'ceiling-only',
  'fleet-budget',
  'per-worker-budgets',
  'flow-control',
];
export type StrategyKind = (typeof STRATEGY_KINDS)[number];

const BudgetSettings = z.strictObject({
  ratio: z.number().gt(0, 'must be > 0 and <= 1').max(1, 'must be > 0 and <= 1').default(0.2),
  windowMs: duration().default(60_000),
  minAllowance: z.number().int('must be a whole number').min(0, 'must be >= 0').default(10),
  mode: z.enum(['enforce', 'shadow']).default('enforce'),
  onExhausted: z.enum(['dead-letter', 'defer']).default('dead-letter'),
});

/** Circuit breaker settings, as `CircuitBreaker` takes them (durations may be strings); unset fields take its defaults. */
const BreakerSettings = z.strictObject({
  failureRateThreshold: z.number().optional(),
  windowMs: duration().optional(),
  minimumVolume: z.number().optional(),
  consecutiveFailures: z.number().optional(),
  coolDownMs: duration().optional(),
  halfOpenProbes: z.number().optional(),
  successesToClose: z.number().optional(),
});

/**
 * Flow control's settings, with the worker's meaning and defaults (`FlowControlOptions`): the slow-start
 * ramp after a dependency's breaker closes (the admitted rate starts at `floorPerSecond` and doubles ten
 * times over `slowStartMs`, then is unlimited), an optional `maxRatePerSecond` that holds at all times
 * (first attempts too), how long a worker waits for its paced slot, how long a job is held while the
 * half-open breaker's probes are all in flight, and how often and how many parked jobs are released.
 */
const FlowControlSettings = z.strictObject({
  slowStartMs: duration().default(30_000),
  floorPerSecond: z.number().gt(0, 'must be > 0 (attempts per second)').default(1),
  maxRatePerSecond: z.number().gt(0, 'must be > 0 (attempts per second)').optional(),
  maxPaceWaitMs: duration().default(1_000),
  probeWaitMs: duration()
    .refine((ms) => ms >= 10, 'must be >= 10 ms')
    .default(1_000),
  releaseIntervalMs: duration()
    .refine((ms) => ms >= 10, 'must be >= 10 ms')
    .default(250),
  releaseBatch: z.number().int('must be a whole number').min(1, 'must be >= 1').default(100),
});

const StrategyEntry = z.union(
  [
    z.enum(STRATEGY_KINDS, { error: `must be one of ${STRATEGY_KINDS.join(', ')} (or { name, kind })` }),
    z.strictObject({
      name: name(),
      kind: z.enum(STRATEGY_KINDS, { error: `must be one of ${STRATEGY_KINDS.join(', ')}` }),
      /** Budget settings for this strategy only, over the scenario's `budget`. */
      budget: BudgetSettings.partial().optional(),
      /** Breaker settings for this strategy only, over the scenario's `breaker`. */
      breaker: BreakerSettings.optional(),
      /** Flow control settings for this strategy only, over the scenario's `flowControl`. */
      flowControl: FlowControlSettings.partial().optional(),
    }),
  ],
  { error: `must be one of ${STRATEGY_KINDS.join(', ')}, or { name, kind, budget, breaker }` },
);

const Phase = z
  .strictObject({
    from: duration(),
    until: duration(),
    state: z.enum(['up', 'down', 'degraded']),
    /** Share of calls that fail in this phase. Defaults: down 1, degraded 0.5, up the dependency's own. */
    errorRate: probability().optional(),
    /** Mean call latency in this phase (failures included); defaults to the dependency's own. */
    latency: duration().optional(),
  })
  .refine((p) => p.until > p.from, { message: 'must end after it starts (until > from)', path: ['until'] });

/**
 * A dependency that answers `429 Too Many Requests` with `Retry-After: retryAfterSeconds` to every call
 * beyond `perSecond` in one second of the clock (a fixed window: the calls it answers 429 do not count).
 */
const RateLimit = z.strictObject({
  perSecond: z
    .number()
    .int('must be a whole number of calls per second')
    .min(1, 'must be >= 1 (calls the dependency answers per second)'),
  retryAfterSeconds: z
    .number()
    .int('must be a whole number of seconds (Retry-After is sent in whole seconds)')
    .min(1, 'must be >= 1 (Retry-After in seconds)')
    .max(31_536_000, 'must be at most 365 days')
    .default(1),
});

/**
 * Fleet-wide limits on the calls to a dependency, as a worker's `limits` option takes them (enforced by the
 * `budget-and-limits` strategy): `maxInFlight` a whole number >= 1, `maxRatePerSecond` a finite number > 0.
 */
const Limits = z
  .strictObject({
    maxInFlight: z.number().optional(),
    maxRatePerSecond: z.number().optional(),
  })
  .superRefine((limit, ctx) => {
    try {
      checkDependencyLimit(limit, 'limits');
    } catch (error) {
      if (!isValidationError(error)) throw error;
      for (const issue of error.issues)
        ctx.addIssue({ code: 'custom', path: [issue.path], message: issue.rule });
    }
  });

const Dependency = z.strictObject({
  /** Mean latency of a call while up; each call draws uniformly from 0.5× to 1.5× the mean. */
  latency: duration().default(100),
  /** Share of calls that fail while up (background noise). */
  errorRate: probability().default(0),
  timeline: z.array(Phase).default([]),
  /** Answers 429 with Retry-After above a rate (unset: no rate limit). */
  rateLimit: RateLimit.optional(),
  /** The fleet's limits on calls to it, enforced by `budget-and-limits` (the other strategies ignore them). */
  limits: Limits.optional(),
});

/**
 * How `budget-and-limits` comes back after a Retry-After hold, as a worker's `limitsOptions`: the rate starts
 * at `floorPerSecond` after the first probe succeeds and doubles ten times over `slowStartMs`, up to the
 * limit.
 */
const LimitsOptions = z.strictObject({
  slowStartMs: duration().default(30_000),
  floorPerSecond: z.number().gt(0, 'must be > 0 (calls per second)').default(1),
});

const JobClass = z
  .strictObject({
    /** The dependency every attempt calls; defaults to the class's own name (a task with no mapping is its own dependency). */
    dependency: name().optional(),
    /** A preset to start from (`idempotent-internal`, `metered-api`, `email`, …); `policy` fields override it. */
    preset: z.string().optional(),
    /** The retry policy, exactly as `definePolicy` takes it (durations may be strings such as `2s`); with a preset, only what changes. */
    policy: z.record(z.string(), z.unknown()).default({}),
    /** Share of attempts that fail permanently whatever the dependency's state (a malformed document). */
    permanentErrorRate: probability().default(0),
    /** Whether jobs carry an idempotency key (lets `key-required` policies retry). */
    idempotencyKey: z.boolean().default(true),
  })
  .transform((jobClass, ctx) => {
    let base: object = {};
    if (jobClass.preset !== undefined) {
      try {
        base = getPreset(jobClass.preset);
      } catch {
        ctx.addIssue({
          code: 'custom',
          path: ['preset'],
          message: `is not a preset; use one of: ${Object.keys(presets).join(', ')}`,
        });
        return z.NEVER;
      }
    }
    // The merged policy is validated by definePolicy's own schema, so errors name policy.<field>.
    const policy = policySchema.safeParse({ ...base, ...jobClass.policy });
    if (!policy.success) {
      for (const issue of policy.error.issues)
        ctx.addIssue({ code: 'custom', path: ['policy', ...issue.path.map(String)], message: issue.message });
      return z.NEVER;
    }
    return { ...jobClass, policy: policy.data };
  });

const Arrival = z
  .strictObject({
    class: name(),
    /** Jobs already queued at `at`. */
    backlog: z.number().int('must be a whole number').min(0, 'must be >= 0').optional(),
    at: duration().default(0),
    /** New jobs per second (a Poisson process) between `from` and `until`. */
    rate: z.number().gt(0, 'must be > 0').optional(),
    from: duration().default(0),
    until: duration().optional(),
  })
  .superRefine((a, ctx) => {
    if ((a.backlog === undefined) === (a.rate === undefined))
      ctx.addIssue({ code: 'custom', message: 'give exactly one of backlog or rate', path: [] });
    if (a.rate !== undefined && a.until === undefined)
      ctx.addIssue({ code: 'custom', message: 'a rate needs an end: add until (e.g. 20m)', path: ['until'] });
    if (a.rate !== undefined && a.until !== undefined && a.until <= a.from)
      ctx.addIssue({ code: 'custom', message: 'must be after from', path: ['until'] });
  });

/** The most jobs one run may hold; the engine packs job numbers into 28 bits. */
export const MAX_JOBS = 50_000_000;

/**
 * The most timeline seconds one strategy's run may hold, summed over the dependencies: every dependency
 * keeps per-second series up to the last second the run reaches, and the horizon is the only bound on that
 * second, so `horizon` (in seconds) × dependencies must stay within this. 5 000 000 is a day for 57
 * dependencies, or 57 days for one, about 1 GB of series for one strategy at the limit.
 */
export const MAX_TIMELINE_SECONDS = 5_000_000;

/** The `horizon` issue of a scenario whose timelines could outgrow {@link MAX_TIMELINE_SECONDS}, if any. */
function timelineIssue(horizonMs: number, dependencies: number): string | undefined {
  const seconds = Math.ceil(horizonMs / 1_000) * Math.max(1, dependencies);
  if (seconds <= MAX_TIMELINE_SECONDS) return undefined;
  const most = Math.floor(MAX_TIMELINE_SECONDS / Math.max(1, dependencies));
  const plural = dependencies === 1 ? 'dependency' : 'dependencies';
  return `${formatDuration(horizonMs)} for ${dependencies} ${plural} is ${formatCount(seconds)} timeline seconds, more than the ${formatCount(MAX_TIMELINE_SECONDS)} a run may hold (each dependency keeps per-second series up to the horizon): set horizon to at most ${Math.floor(most / 3_600)}h (${formatDuration(most * 1_000)}), or split the dependencies over several scenarios`;
}

/**
 * The scenario file's schema (JSON or YAML). Durations accept `250ms`, `90s`, `15m`, `1h30m` or milliseconds.
 * Cross-field rules (known classes and dependencies, phases that do not overlap, a bounded job count) are
 * checked here too, so every error names the field it is about. `parseScenario` adds the checks that need
 * the budget and breaker themselves.
 *
 * @example
 * const result = ScenarioSchema.safeParse(yaml.parse(text));
 */
export const ScenarioSchema = z
  .strictObject({
    name: name().default('scenario'),
    description: z.string().optional(),
    seed: z.number().int('must be a whole number').default(1),
    /** The simulation stops here even if work is still pending (reported, never silently dropped). */
    horizon: duration().default(24 * 3_600_000),
    workers: z.strictObject({
      count: z
        .number()
        .int('must be a whole number')
        .min(1, 'must be >= 1: a fleet needs at least one worker'),
      concurrency: z.number().int('must be a whole number').min(1, 'must be >= 1').default(1),
    }),
    jobClasses: z.record(name(), JobClass),
    arrivals: z.array(Arrival).min(1, 'must list at least one arrival (a backlog or a rate)'),
    dependencies: z.record(name(), Dependency),
    budget: BudgetSettings.default({
      ratio: 0.2,
      windowMs: 60_000,
      minAllowance: 10,
      mode: 'enforce',
      onExhausted: 'dead-letter',
    }),
    /** The breaker of the `budget-and-breaker` and `flow-control` strategies; unset fields take CircuitBreaker's defaults. */
    breaker: BreakerSettings.default({}),
    /** How `budget-and-limits` ramps back after a Retry-After hold (default: 30 s from 1/s). */
    limitsOptions: LimitsOptions.optional(),
    /** Flow control's settings (the `flow-control` strategy). */
    flowControl: FlowControlSettings.default({
      slowStartMs: 30_000,
      floorPerSecond: 1,
      maxPaceWaitMs: 1_000,
      probeWaitMs: 1_000,
      releaseIntervalMs: 250,
      releaseBatch: 100,
    }),
    strategies: z
      .array(StrategyEntry)
      .min(1, 'must list at least one strategy')
      .default([...DEFAULT_STRATEGIES]),
  })
  .superRefine((s, ctx) => {
    const classes = Object.keys(s.jobClasses);
    const dependencies = Object.keys(s.dependencies);
    if (classes.length === 0)
      ctx.addIssue({ code: 'custom', message: 'must define at least one job class', path: ['jobClasses'] });
    if (s.workers.count * s.workers.concurrency > 1_000_000)
      ctx.addIssue({
        code: 'custom',
        message: 'count × concurrency must be <= 1 000 000',
        path: ['workers'],
      });
    for (const [className, jobClass] of Object.entries(s.jobClasses)) {
      const dependency = jobClass.dependency ?? className;
      if (!dependencies.includes(dependency))
        ctx.addIssue({
          code: 'custom',
          message: `names no dependency; define dependencies.${dependency} or use one of: ${dependencies.join(', ') || '(none)'}`,
          path: ['jobClasses', className, 'dependency'],
        });
    }
    s.arrivals.forEach((arrival, i) => {
      if (!classes.includes(arrival.class))
        ctx.addIssue({
          code: 'custom',
          message: `is not a job class; use one of: ${classes.join(', ') || '(none)'}`,
          path: ['arrivals', i, 'class'],
        });
    });
    for (const [dependencyName, dependency] of Object.entries(s.dependencies)) {
      const phases = [...dependency.timeline].sort((a, b) => a.from - b.from);
      for (let i = 1; i < phases.length; i++) {
        if ((phases[i] as { from: number }).from < (phases[i - 1] as { until: number }).until)
          ctx.addIssue({
            code: 'custom',
            message: 'phases overlap; each phase must start at or after the previous one ends',
            path: ['dependencies', dependencyName, 'timeline'],
          });
      }
    }
    const names = s.strategies.map((entry) => (typeof entry === 'string' ? entry : entry.name));
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i)
        ctx.addIssue({ code: 'custom', message: `"${n}" is listed twice`, path: ['strategies', i] });
    });
    const timeline = timelineIssue(s.horizon, dependencies.length);
    if (timeline) ctx.addIssue({ code: 'custom', message: timeline, path: ['horizon'] });
    if (expectedJobs(s.arrivals) > MAX_JOBS)
      ctx.addIssue({ code: 'custom', message: `add up to more than ${MAX_JOBS} jobs`, path: ['arrivals'] });
  });

/** A scenario as written (durations may be strings). */
export type ScenarioInput = z.input<typeof ScenarioSchema>;
/** A validated scenario: every duration in milliseconds, every default filled in. */
export type Scenario = z.output<typeof ScenarioSchema>;
export type BudgetSettings = z.output<typeof BudgetSettings>;
export type BreakerSettings = z.output<typeof BreakerSettings>;
export type FlowControlSettings = z.output<typeof FlowControlSettings>;
export type LimitsOptions = z.output<typeof LimitsOptions>;
export type RateLimitSpec = z.output<typeof RateLimit>;
export type ArrivalSpec = Scenario['arrivals'][number];
export type DependencySpec = Scenario['dependencies'][string];
export type PhaseSpec = DependencySpec['timeline'][number];
export type JobClassSpec = Scenario['jobClasses'][string];
export type StrategyEntry = Scenario['strategies'][number];

/** The number of jobs the arrivals produce on average (exact for backlogs, expected for rates). */
export function expectedJobs(arrivals: readonly ArrivalSpec[]): number {
  let total = 0;
  for (const a of arrivals) {
    if (a.backlog !== undefined) total += a.backlog;
    else if (a.rate !== undefined && a.until !== undefined) total += (a.rate * (a.until - a.from)) / 1_000;
  }
  return Math.round(total);
}
