/**
 * stormguard: retry policies, fleet-wide retry budgets and circuit breakers that keep a fleet of job
 * workers from turning one dependency's outage into a retry storm. This entry point is the pure core:
 * it imports no Redis, BullMQ or prom-client. See `stormguard/redis`, `stormguard/bullmq`,
 * `stormguard/prometheus`, `stormguard/sim` and `stormguard/testing`.
 */

export { MemoryAuditLog, type MemoryAuditLogOptions } from './audit/memory-audit-log.js';
export type { AuditEntry, AuditLog, AuditPage, AuditPageRequest, AuditWrite } from './audit/types.js';
export { DEFAULT_AUDIT_ENTRIES } from './audit/validate.js';
export * from './breaker/index.js';
export * from './budget/index.js';
export type * from './budget/types.js';
export { type Clock, FakeClock, systemClock } from './common/clock.js';
export { formatDuration, parseDuration } from './common/duration.js';
export { type Disposable, EventBus, type Listener } from './common/events.js';
export { type RandomSource, seededRandom, systemRandom } from './common/random.js';
export * from './errors/index.js';
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
export * from './policy/index.js';
export type * from './policy/types.js';
export { DEAD_LETTER_REASONS } from './policy/types.js';
export { ATTEMPT_HISTORY_LIMIT } from './runtime/attempt-history.js';
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
export * from './runtime/flow-control/index.js';
export {
  type AttemptOutcome,
  type AttemptStart,
  type AttemptTrace,
  type JobInstrumentation,
  keepTraceLinks,
  MAX_TRACE_LINKS,
} from './runtime/instrumentation.js';
export { type JobHandle, mayHaveAttemptState } from './runtime/job-handle.js';
export {
  JobRuntime,
  type JobRuntimeSettings,
  type RuntimeBreaker,
  type RuntimeBudget,
  type RuntimeGuard,
} from './runtime/job-runtime.js';
export {
  MemoryDeadLetterStore,
  type MemoryDeadLetterStoreOptions,
} from './runtime/memory-dead-letter-store.js';
export {
  type BookkeepingBackoff,
  DEFAULT_BOOKKEEPING_BACKOFF,
  decodeStoredName,
  encodeStoredName,
  type JobNote,
  type PendingOutcome,
  type PendingWrite,
} from './runtime/pending-outcome.js';
export { type DeadLetterRedaction, redactRecord } from './runtime/redaction.js';
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
export * from './status/index.js';
