/** The retry budget's public surface (re-exported by the package root). */

export { StoreTimeoutError } from '../common/timeout.js';
export {
  chargeAll,
  type DependencyMap,
  defineDependencyMap,
  dependenciesFor,
  dependencyFor,
  type MultiSpendResult,
} from './dependency-map.js';
export { MemoryBudgetStore } from './memory-store.js';
export type { BudgetFallback, RetryBudgetOptions } from './options.js';
export { RetryBudget } from './retry-budget.js';
export type {
  BudgetMode,
  BudgetStore,
  ListOptions,
  MaybePromise,
  StoreRead,
  StoreSettings,
  StoreSpend,
  StoreWrite,
} from './store.js';
