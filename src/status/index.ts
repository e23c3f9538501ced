/** The fleet-status read model and the Fleet contract (re-exported by the package root). */

export { attentionOf, needsAttention } from './attention.js';
export { type BudgetStatus, type BudgetStatusSource, budgetStatus, budgetStatusOf } from './budget.js';
export { type Fleet, type FleetStores, fleetStatusSources } from './fleet.js';
export { flowStatusOf } from './flow.js';
export {
  changeLimits,
  LIMIT_ACTIONS,
  type LimitAction,
  type LimitChangeRequest,
  type LimitChangeResult,
} from './limit-actions.js';
export { type MemoryFleetOptions, memoryFleet } from './memory-fleet.js';
export { breakersOf, budgetsOf, readFleetStatus } from './read-fleet-status.js';
export type {
  AttentionReason,
  DeadLetterStatusSource,
  DependencyDeadLetters,
  DependencyFlowStatus,
  DependencyLimitStatus,
  DependencyStatus,
  FleetStatus,
  FleetStatusOptions,
  FleetStatusSources,
  FlowControlStatus,
  FlowMarkStatus,
  FlowStatusScope,
  FlowStatusSource,
  LimitStatusSource,
  ParkedJobsStatus,
  PausedWorkerStatus,
  QueueStatus,
  StatusSourceError,
} from './types.js';
