/**
 * `stormguard/sim`: the retry-storm simulator. Runs strategies (a per-job ceiling alone, a fleet-wide budget,
 * per-worker budgets) side by side over the same arrivals and the same outage, on a virtual clock, through
 * stormguard's real `decide` and `RetryBudget`.
 *
 * @example
 * import { defaultScenario, formatSummary, simulate } from 'stormguard/sim';
 * process.stdout.write(formatSummary(await simulate(defaultScenario())));
 */
export type { UnhealthyPeriod } from './engine/dependency-model.js';
export { formatRetryChart, type RetryChartOptions } from './format/chart.js';
export { formatSummary } from './format/summary.js';
export { renderReport } from './report/html.js';
export {
  type DependencyTimeline,
  type RequestCounts,
  type SimulationResult,
  type SimulationSummary,
  type StrategyResult,
  summarize,
} from './results.js';
export { DEFAULT_SCENARIO, defaultScenario } from './scenario/default.js';
export { exampleScenarioText } from './scenario/example.js';
export { loadScenarioFile, parseScenario, parseScenarioText } from './scenario/load.js';
export {
  type Scenario,
  type ScenarioInput,
  ScenarioSchema,
  STRATEGY_KINDS,
  type StrategyKind,
} from './scenario/schema.js';
export { type SimulateOptions, type SimulationProgress, simulate } from './simulate.js';
export { type ResolvedStrategy, resolveStrategies } from './strategies.js';
