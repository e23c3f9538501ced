/**
 * stormguard on BullMQ: the dead-letter queue, replay and the idempotency guard (and the worker wrapper).
 *
 * @example
 * import { deadLetterQueue, idempotencyGuard } from 'stormguard/bullmq';
 */

export {
  ATTEMPT_STATE_FIELD,
  type AttemptState,
  type DeadLetteredState,
  parseAttemptState,
} from './attempts.js';
export type { CallBreaker, CallContext } from './call-context.js';
export { DEAD_LETTER_REASONS, type DeadLetterFilter } from './dead-letter-filter.js';
export {
  deadLetterJobId,
  REPLAY_OPTION,
  type ReplayOrigin,
  replayJobId,
  replayJobOptions,
  replayOrigin,
} from './dead-letter-ids.js';
export {
  DeadLetterQueue,
  type DeadLetterQueueOptions,
  deadLetterQueue,
  type ListOptions,
} from './dead-letter-queue.js';
export {
  IdempotencyGuard,
  type IdempotencyGuardOptions,
  idempotencyGuard,
  type OnceResult,
} from './idempotency-guard.js';
export { MemoryIdempotencyStore } from './memory-idempotency-store.js';
export {
  type ReplayedJob,
  type ReplayOptions,
  type ReplayProgress,
  type ReplayReport,
  replayDeadLetters,
} from './replay.js';
export { type MoveResult, ReplayMover } from './replay-move.js';
export {
  type BudgetStateReader,
  type HealthGate,
  isBudgetDenying,
  Pacer,
  realSleep,
  type Sleep,
} from './replay-pacing.js';
export type * from './types.js';
export { createWorker, StormguardWorker } from './worker.js';
export { deadLetterRecordOf, describeError } from './worker-dead-letter.js';
export type { StormguardWorkerOptions, WorkerBreaker, WorkerBudget } from './worker-options.js';
export { resolveWorkerPolicy } from './worker-policy.js';
export type { DeadLetteredMarker, StormguardProcessor } from './worker-runner.js';
