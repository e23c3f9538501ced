/**
 * stormguard on BullMQ: the worker wrapper, the dead-letter queue and replay.
 *
 * @example
 * import { createWorker, deadLetterQueue } from 'stormguard/bullmq';
 */

export { describeError } from '../common/error-text.js';
export type { CallBreaker, CallContext, CallOptions } from '../runtime/call-context.js';
export type {
  AttemptState,
  AttemptStateStore,
  DeadLetteredState,
  DeadLetterRecord,
  JobRef,
} from '../runtime/contracts.js';
export type { JobLabels } from '../runtime/events.js';
export {
  AUTO_REPLAY_BY,
  type AutoReplayOptions,
  type AutoReplayReason,
} from '../runtime/replay/auto-replay.js';
export { DEAD_LETTER_REASONS, type DeadLetterFilter } from '../runtime/replay/dead-letter-filter.js';
export {
  type ReplayedJob,
  type ReplayOptions,
  type ReplayProgress,
  type ReplayReport,
  type ReplayTarget,
  replayDeadLetters,
} from '../runtime/replay/replay.js';
export {
  type BudgetStateReader,
  type HealthGate,
  isBudgetDenying,
  Pacer,
  realSleep,
  type Sleep,
} from '../runtime/replay/replay-pacing.js';
export type { PutBackOptions, ReplayQueue } from '../runtime/replay/replay-queue.js';
export { ReplayRunner, type ReplayRunnerOptions } from '../runtime/replay/replay-runner.js';
export {
  type CreateReplayRunOptions,
  cancelReplayRun,
  createReplayRun,
  isReplayRunHeld,
  isReplayRunOpen,
  listReplayRuns,
  previewReplay,
  type RunReplayOptions,
  runReplay,
  type StartReplayRunOptions,
  startReplayRun,
} from '../runtime/replay/replay-runs.js';
export { resolveWorkerPolicy } from '../runtime/resolve-policy.js';
export type { WorkerEvents } from '../runtime/worker-events.js';
export { type BullMQReplayJobs, bullmqReplayQueue } from './bullmq-replay-queue.js';
export {
  REPLAY_OPTION,
  type ReplayOrigin,
  replayJobCandidate,
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
  type LegacyMovePreview,
  type LegacyMoveReport,
  moveLegacyDeadLetters,
  previewLegacyMove,
} from './legacy-dead-letters.js';
export {
  createWorker,
  type DeadLetteredMarker,
  type StormguardProcessor,
  StormguardWorker,
} from './worker.js';
export type {
  QueueBackendFactory,
  StormguardWorkerOptions,
  WorkerBreaker,
  WorkerBudget,
  WorkerConnection,
} from './worker-options.js';
