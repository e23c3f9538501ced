/** The fleet-status read model (re-exported by the package root). */

export { attentionOf, needsAttention } from './attention.js';
export { type BudgetStatus, type BudgetStatusSource, budgetStatus, budgetStatusOf } from './budget.js';
export { flowStatusOf } from './flow.js';
export { breakersOf, budgetsOf, readFleetStatus } from './read-fleet-status.js';
export type {
  AttentionReason,
  DeadLetterStatusSource,
  DependencyDeadLetters,
  DependencyStatus,
  FleetStatus,
  FleetStatusOptions,
  FleetStatusSources,
  FlowStatusScope,
  FlowStatusSource,
  ParkedJobsStatus,
  PausedWorkerStatus,
  QueueStatus,
  StatusSourceError,
} from './types.js';
