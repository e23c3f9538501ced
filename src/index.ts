/**
 * stormguard: retry policies, fleet-wide retry budgets and circuit breakers that keep a fleet of job
 * workers from turning one dependency's outage into a retry storm. This entry point is the pure core:
 * it imports no Redis, BullMQ or prom-client. See `stormguard/redis`, `stormguard/bullmq`,
 * `stormguard/prometheus`, `stormguard/sim` and `stormguard/testing`.
 *
 * A hand-written list: every value here is documented on a page of docs/ (docs/api.md says where). What
 * only a store or an adapter needs is in `stormguard/store-kit`; what nothing outside needs stays internal.
 */

// The audit log (docs/console.md).
export { MemoryAuditLog, type MemoryAuditLogOptions } from './audit/memory-audit-log.js';
export type { AuditEntry, AuditLog, AuditPage, AuditPageRequest, AuditWrite } from './audit/types.js';
// The circuit breaker (docs/breaker.md).
export {
  type BreakerOptions,
  type BreakerOverrideResult,
  CircuitBreaker,
  type CircuitBreakerOptions,
  type ExecuteOptions,
  MemoryBreakerStore,
  type MemoryBreakerStoreOptions,
  overrideBreaker,
} from './breaker/index.js';
export type {
  BreakerAdmission,
  BreakerBatch,
  BreakerEvents,
  BreakerListing,
  BreakerOverride,
  BreakerOverrideOp,
  BreakerOverrideRequest,
  BreakerRecordResult,
  BreakerSnapshot,
  BreakerStateName,
  BreakerStore,
  BreakerTransition,
  BreakerTransitionReason,
  ListedBreaker,
} from './breaker/types.js';
// The retry budget (docs/budget.md).
export {
  type BudgetFallback,
  type BudgetMode,
  type BudgetStore,
  chargeAll,
  type DependencyMap,
  defineDependencyMap,
  dependenciesFor,
  dependencyFor,
  type ListOptions,
  type MaybePromise,
  MemoryBudgetStore,
  type MultiSpendResult,
  RetryBudget,
  type RetryBudgetOptions,
  type StoreRead,
  type StoreSettings,
  type StoreSpend,
  StoreTimeoutError,
  type StoreWrite,
} from './budget/index.js';
export type { BudgetEvents, BudgetSnapshot, SpendResult } from './budget/types.js';
// Time, randomness, events, durations.
export { type Clock, FakeClock, systemClock } from './common/clock.js';
export { formatDuration, parseDuration } from './common/duration.js';
export { type Disposable, EventBus, type Listener } from './common/events.js';
export { type RandomSource, seededRandom, systemRandom } from './common/random.js';
// Errors, one class and one guard each (docs/api.md, "Errors").
export {
  BrokenCircuitError,
  ClaimLostError,
  CorruptBudgetStateError,
  InvalidInputError,
  isBrokenCircuitError,
  isClaimLostError,
  isCorruptBudgetStateError,
  isInvalidInputError,
  isPermanentError,
  isRedactionFailedError,
  isTransientError,
  isUnstorableValueError,
  isValidationError,
  PermanentError,
  RedactionFailedError,
  TransientError,
  UnstorableValueError,
  ValidationError,
  type ValidationIssue,
} from './errors/index.js';

// The idempotency guard (docs/idempotency.md).
export {
  type GuardedWork,
  IdempotencyGuard,
  type IdempotencyGuardEvents,
  type IdempotencyGuardOptions,
  idempotencyGuard,
  type OnceResult,
} from './idempotency/guard.js';
export { MemoryIdempotencyStore } from './idempotency/memory-store.js';
export type { IdempotencyClaim, IdempotencyStore } from './idempotency/store.js';
// Policies, delays, classification, decisions (docs/api.md).
export {
  type AdmissionRefusal,
  type AttemptContext,
  applyJitter,
  type BackoffInput,
  backoffDelay,
  builtInClassifier,
  causeChain,
  classify,
  classifyHttp,
  classifyMarked,
  classifyMysql,
  classifyNetwork,
  classifyPostgres,
  classifyRedis,
  composeClassifiers,
  type DurationInput,
  decide,
  decideRefusedAdmission,
  decideSync,
  definePolicy,
  getPreset,
  httpStatusOf,
  type JitterInput,
  jitterBounds,
  PERMANENT_MYSQL_ERRNOS,
  PERMANENT_SQLSTATE_CLASSES,
  type PlanOptions,
  type PolicyInput,
  type PresetName,
  parseRetryAfter,
  planForWindow,
  presets,
  type RetryDelayOptions,
  type RetryEvent,
  type RetryOptions,
  readRetryAfter,
  retry,
  retryDelay,
  retryDelayBounds,
  type SampledRetry,
  type SampledSchedule,
  type Spread,
  type SyncDecideContext,
  sampleSchedule,
  TRANSIENT_MYSQL_ERRNOS,
  TRANSIENT_NETWORK_CODES,
  TRANSIENT_REDIS_REPLIES,
  TRANSIENT_SQLSTATES,
  TRANSIENT_UNDICI_CODES,
  throughCauses,
  type WindowPlan,
  worstCaseSpanMs,
} from './policy/index.js';
export {
  type Backoff,
  type BreakerGate,
  type BreakerVerdict,
  type BudgetGate,
  type BudgetVerdict,
  type Classification,
  type Classifier,
  type ClassifyContext,
  DEAD_LETTER_REASONS,
  type DeadLetterReason,
  type DecideContext,
  type Decision,
  type Idempotency,
  type JitterKind,
  type RetryAfterRule,
  type RetryFamily,
  type RetryPolicy,
} from './policy/types.js';
// Jobs, dead letters and replay (docs/workers.md, docs/dead-letters.md).
export type {
  AttemptEntry,
  AttemptState,
  AttemptStateStore,
  DeadLetterEvictions,
  DeadLetteredState,
  DeadLetterFiling,
  DeadLetterFilter,
  DeadLetterPage,
  DeadLetterPageRequest,
  DeadLetterQueueSummary,
  DeadLetterRecord,
  DeadLetterRedaction,
  DeadLetterStore,
  JobRef,
  MalformedDeadLetter,
  ReplayClaim,
  RetentionLimits,
  StoredDeadLetter,
} from './runtime/contracts.js';
export { isMalformedDeadLetter, isWithheldDeadLetter } from './runtime/dead-letter-record.js';
export {
  type DeadLetterSearch,
  type DeadLetterSearchResult,
  searchDeadLetters,
} from './runtime/dead-letter-search.js';
export type { JobEvents, JobLabels } from './runtime/events.js';
// Flow control (docs/flow-control.md).
export {
  type FlowControlOptions,
  type FlowSnapshot,
  type FlowStore,
  MemoryFlowStore,
  type PausedWorkerEntry,
} from './runtime/flow-control/index.js';
// Jobs again: instrumentation, the job handle, worker options, settling an attempt (docs/workers.md).
export type {
  AttemptOutcome,
  AttemptStart,
  AttemptTrace,
  JobInstrumentation,
} from './runtime/instrumentation.js';
export type { JobHandle } from './runtime/job-handle.js';
export type { RuntimeBreaker, RuntimeBudget, RuntimeGuard } from './runtime/job-runtime.js';
// Limits (docs/limits.md).
export {
  type LimitAnswer,
  LimitController,
  type LimitControllerSettings,
  type LimitHoldAction,
  type LimitSlot,
} from './runtime/limits/controller.js';
export type { LimitDependencyStatus, LimitEvents, LimitRefusal } from './runtime/limits/events.js';
export { isLimitHeldError, LimitHeldError } from './runtime/limits/limit-held-error.js';
export type { DependencyLimitOptions, LimitsByDependency, LimitsOptions } from './runtime/limits/options.js';
export {
  MemoryDeadLetterStore,
  type MemoryDeadLetterStoreOptions,
} from './runtime/memory-dead-letter-store.js';
export { type BookkeepingBackoff, decodeStoredName, type JobNote } from './runtime/pending-outcome.js';
export {
  MemoryReplayRunStore,
  REPLAY_RUNS_KEPT,
  type ReplayPreview,
  type ReplayRun,
  type ReplayRunStore,
} from './runtime/replay-runs.js';
export type { JobEventSink, RunOutcome } from './runtime/run-outcome.js';
export { type SettleAction, type SettleJob, type Settlement, settle } from './runtime/settle.js';
export type { WorkerEvents } from './runtime/worker-events.js';

// The fleet-status read model (docs/console.md).
export {
  type AttentionReason,
  type BudgetStatus,
  type BudgetStatusSource,
  breakersOf,
  budgetStatus,
  budgetStatusOf,
  budgetsOf,
  changeLimits,
  type DeadLetterStatusSource,
  type DependencyDeadLetters,
  type DependencyFlowStatus,
  type DependencyLimitStatus,
  type DependencyStatus,
  type Fleet,
  type FleetStatus,
  type FleetStatusOptions,
  type FleetStatusSources,
  type FleetStores,
  type FlowControlStatus,
  type FlowMarkStatus,
  type FlowStatusScope,
  type FlowStatusSource,
  fleetStatusSources,
  flowStatusOf,
  LIMIT_ACTIONS,
  type LimitAction,
  type LimitChangeRequest,
  type LimitChangeResult,
  type LimitStatusSource,
  type MemoryFleetOptions,
  memoryFleet,
  needsAttention,
  type ParkedJobsStatus,
  type PausedWorkerStatus,
  type QueueStatus,
  readFleetStatus,
  type StatusSourceError,
} from './status/index.js';
