import { CircuitBreaker } from '../breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../breaker/memory-store.js';
import { DEFAULT_BREAKER_OPTIONS } from '../breaker/options.js';
import type { Clock } from '../common/clock.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';
import { isValidationError, ValidationError } from '../errors/validation-error.js';
import type { DependencyLimit } from '../runtime/limits/store.js';
import type { LimitSettings } from './engine/limits.js';
import type { SimBudget, StrategyRuntime } from './engine/runtime.js';
import { SampledBudget } from './sampled-budget.js';
import {
  type BreakerSettings,
  type BudgetSettings,
  type FlowControlSettings,
  type Scenario,
  STRATEGY_KINDS,
  type StrategyKind,
} from './scenario/schema.js';

/** A strategy ready to run: its name, what it puts in front of retries, and its budget settings. */
export interface ResolvedStrategy {
  /** As in the scenario and `--strategies` (`fleet-budget`, or a custom name). */
  name: string;
  kind: StrategyKind;
  /** For people: `ceiling + fleet budget`. */
  label: string;
  budget: BudgetSettings;
  breaker: BreakerSettings;
  /** Flow control's settings (used by `flow-control` only). */
  flowControl: FlowControlSettings;
}

const LABELS: Record<StrategyKind, string> = {
  'ceiling-only': 'ceiling only',
  'fleet-budget': 'ceiling + fleet budget',
  'per-worker-budgets': 'ceiling + per-worker budgets',
  'budget-and-breaker': 'ceiling + budget + breaker',
  'flow-control': 'flow control',
  'budget-and-limits': 'ceiling + budget + limits',
};

/**
 * What a `flow-control` strategy changes in the scenario's settings unless its own entry says otherwise:
 * a budget denial defers the job (flow control holds work back, it does not dead-letter it), and the
 * breaker runs one probe per half-open period.
 */
function flowControlDefaults(
  budget: BudgetSettings,
  breaker: BreakerSettings,
  own: { budget?: Partial<BudgetSettings>; breaker?: BreakerSettings } = {},
): { budget: BudgetSettings; breaker: BreakerSettings } {
  return {
    budget: { ...budget, onExhausted: own.budget?.onExhausted ?? 'defer' },
    breaker: { ...breaker, halfOpenProbes: own.breaker?.halfOpenProbes ?? breaker.halfOpenProbes ?? 1 },
  };
}

/**
 * The scenario's strategies with their budget settings resolved, optionally narrowed to `only` (the CLI's
 * `--strategies a,b`). Throws {@link InvalidInputError} for a name the scenario does not define.
 *
 * @example
 * resolveStrategies(scenario, ['ceiling-only', 'fleet-budget']).map((s) => s.label);
 */
export function resolveStrategies(scenario: Scenario, only?: readonly string[]): ResolvedStrategy[] {
  const all = scenario.strategies.map((entry): ResolvedStrategy => {
    if (typeof entry === 'string') return builtIn(entry, scenario);
    const budget = { ...scenario.budget, ...entry.budget };
    const breaker = { ...scenario.breaker, ...entry.breaker };
    return {
      name: entry.name,
      kind: entry.kind,
      label: entry.name,
      ...(entry.kind === 'flow-control' ? flowControlDefaults(budget, breaker, entry) : { budget, breaker }),
      flowControl: { ...scenario.flowControl, ...entry.flowControl },
    };
  });
  if (!only || only.length === 0) return all;
  return only.map((name) => {
    const kind = STRATEGY_KINDS.find((k) => k === name);
    const found = all.find((s) => s.name === name) ?? (kind ? builtIn(kind, scenario) : undefined);
    if (!found)
      throw new InvalidInputError(
        `--strategies: "${name}" is not a strategy of this scenario; use one of: ${[...new Set([...all.map((s) => s.name), ...STRATEGY_KINDS])].join(', ')}`,
      );
    return found;
  });
}

function builtIn(kind: StrategyKind, scenario: Scenario): ResolvedStrategy {
  const { budget, breaker, flowControl } = scenario;
  return {
    name: kind,
    kind,
    label: LABELS[kind],
    ...(kind === 'flow-control' ? flowControlDefaults(budget, breaker) : { budget, breaker }),
    flowControl,
  };
}

/**
 * Builds the strategy's gates on `clock`: stormguard's own `RetryBudget` over a `MemoryBudgetStore`
 * (`SampledBudget`, which the engine reads synchronously), one shared by every worker (`fleet-budget`) or
 * one per worker (`per-worker-budgets`, which is how a budget kept in worker memory behaves), or none (`ceiling-only`); `budget-and-breaker` adds one fleet-wide
 * `CircuitBreaker` on a `MemoryBreakerStore`, `flow-control` adds flow control's settings to those two, and
 * `budget-and-limits` adds the dependencies' `limits` (from `scenario`) to the fleet budget.
 *
 * @example
 * const runtime = createRuntime(strategy, scenario.workers.count, new FakeClock(0), scenario);
 */
export function createRuntime(
  strategy: ResolvedStrategy,
  workers: number,
  clock: Clock,
  scenario: Scenario,
): StrategyRuntime {
  switch (strategy.kind) {
    case 'ceiling-only':
      return { budgetOf: () => undefined, budgets: [], budgetCount: 0 };
    case 'fleet-budget':
      return sharedBudget(createBudget(strategy, clock));
    case 'per-worker-budgets':
      return budgetPerWorker(workers, () => createBudget(strategy, clock, true));
    case 'budget-and-breaker':
      return { ...sharedBudget(createBudget(strategy, clock)), breaker: createBreaker(strategy, clock) };
    case 'flow-control': {
      const breaker = createBreaker(strategy, clock);
      const {
        slowStartMs,
        floorPerSecond,
        maxRatePerSecond,
        probeWaitMs,
        maxPaceWaitMs,
        releaseIntervalMs,
        releaseBatch,
      } = strategy.flowControl;
      return {
        ...sharedBudget(createBudget(strategy, clock)),
        breaker,
        flow: {
          slowStartMs,
          floorPerSecond,
          ...(maxRatePerSecond === undefined ? {} : { maxRatePerSecond }),
          probeWaitMs,
          maxPaceWaitMs,
          releaseIntervalMs,
          releaseBatch,
          halfOpenProbes: strategy.breaker.halfOpenProbes ?? DEFAULT_BREAKER_OPTIONS.halfOpenProbes,
        },
      };
    }
    case 'budget-and-limits':
      return { ...sharedBudget(createBudget(strategy, clock)), limits: limitSettings(scenario) };
  }
}

/**
 * The `budget-and-limits` strategy's limits: each dependency's `limits` in the scenario, the ramp of its
 * `limitsOptions` (a worker's defaults: 30 s from 1/s), and one probe after a hold (there is no breaker).
 */
function limitSettings(scenario: Scenario): LimitSettings {
  const limits: Record<string, DependencyLimit> = {};
  for (const [name, dependency] of Object.entries(scenario.dependencies))
    if (dependency.limits !== undefined) limits[name] = dependency.limits;
  return {
    limits,
    slowStartMs: scenario.limitsOptions?.slowStartMs ?? 30_000,
    floorPerSecond: scenario.limitsOptions?.floorPerSecond ?? 1,
    probes: 1,
  };
}

/** The most workers whose table of budgets is filled up front (beyond it, a sparse array). */
const PREFILLED_LIMIT = 1 << 22;

/** One budget every worker consults. */
function sharedBudget(budget: SimBudget): StrategyRuntime {
  return {
    budgetOf: () => budget,
    budgets: [budget],
    budgetCount: 1,
    budgetWindowMs: budget.windowMs,
  };
}

/**
 * One budget per worker, each built on its worker's first call: a fleet of a million workers running ten
 * jobs builds ten. `unused` stands for the others when the engine sums them.
 */
function budgetPerWorker(workers: number, create: () => SimBudget): StrategyRuntime {
  // Indexed by worker, filled up front so V8 keeps it a flat array (written out of order, it would not).
  const built: (SimBudget | undefined)[] =
    workers <= PREFILLED_LIMIT ? new Array<SimBudget | undefined>(workers).fill(undefined) : [];
  const budgets: SimBudget[] = [];
  const unused = create();
  return {
    budgetOf: (worker) => {
      let budget = built[worker];
      if (!budget) {
        budget = create();
        built[worker] = budget;
        budgets.push(budget);
      }
      return budget;
    },
    budgets,
    budgetCount: workers,
    budgetWindowMs: unused.windowMs,
    unused,
  };
}

/**
 * One budget on a store of its own (per worker, one that applies successes when they are read: see
 * `DeferredSuccessStore`). Budget settings the budget refuses are reported against the scenario's
 * field (`budget.windowMs`), so the error points at the file.
 */
function createBudget(strategy: ResolvedStrategy, clock: Clock, deferSuccesses = false): SimBudget {
  const { ratio, windowMs, minAllowance, mode, onExhausted } = strategy.budget;
  try {
    return new SampledBudget({ ratio, windowMs, minAllowance, mode, onExhausted }, clock, deferSuccesses);
  } catch (error) {
    if (!isValidationError(error)) throw error;
    throw new ValidationError(
      `scenario (strategy "${strategy.name}")`,
      error.issues.map((issue) => ({ ...issue, path: `budget.${issue.path}` })),
    );
  }
}

/** The fleet's breaker (one, shared) on a memory store; settings it refuses are reported against `breaker.<field>`. */
function createBreaker(strategy: ResolvedStrategy, clock: Clock): CircuitBreaker {
  const settings = Object.fromEntries(Object.entries(strategy.breaker).filter(([, v]) => v !== undefined));
  try {
    return new CircuitBreaker({ ...settings, clock, store: new MemoryBreakerStore({ clock }) });
  } catch (error) {
    if (!isValidationError(error)) throw error;
    throw new ValidationError(
      `scenario (strategy "${strategy.name}")`,
      error.issues.map((issue) => ({ ...issue, path: `breaker.${issue.path}` })),
    );
  }
}
