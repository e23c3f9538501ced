/**
 * The attributes stormguard's spans carry. OpenTelemetry's semantic conventions where one exists
 * (`messaging.*`, `error.type`), `stormguard.*` for what only stormguard knows. docs/opentelemetry.md
 * explains each one.
 *
 * @example
 * span.attributes[ATTR.decision]; // 'retry'
 */
export const ATTR = {
  messagingSystem: 'messaging.system',
  messagingDestination: 'messaging.destination.name',
  messagingMessageId: 'messaging.message.id',
  errorType: 'error.type',
  task: 'stormguard.task',
  dependency: 'stormguard.dependency',
  attempt: 'stormguard.attempt',
  replays: 'stormguard.replays',
  replayedFrom: 'stormguard.replayed_from',
  decision: 'stormguard.decision',
  classificationReason: 'stormguard.classification.reason',
  classificationFamily: 'stormguard.classification.family',
  retryable: 'stormguard.classification.retryable',
  retryDelayMs: 'stormguard.retry.delay_ms',
  retryCause: 'stormguard.retry.cause',
  retryNumber: 'stormguard.retry.number',
  deadLetterReason: 'stormguard.dead_letter.reason',
  deadLetterRecordId: 'stormguard.dead_letter.record_id',
  budgetGranted: 'stormguard.budget.granted',
  budgetAllowance: 'stormguard.budget.allowance',
  budgetSpent: 'stormguard.budget.spent',
  budgetDenied: 'stormguard.budget.denied',
  degraded: 'stormguard.budget.degraded',
  breakerState: 'stormguard.breaker.state',
  link: 'stormguard.link',
} as const;

/**
 * What `stormguard.decision` says: what stormguard did with the attempt. `defer` is a reschedule that uses
 * up no attempt (open breaker, budget deferral); `bookkeeping-retry` a job run again later because a store
 * refused to record its attempt.
 *
 * @example
 * const d: DecisionAttribute = 'dead-letter';
 */
export type DecisionAttribute =
  | 'completed'
  | 'retry'
  | 'defer'
  | 'dead-letter'
  | 'fail'
  | 'pass-through'
  | 'bookkeeping-retry';

/**
 * What `stormguard.link` says on a span link: `earlier-attempt` (the same job's attempt before this one)
 * or `replayed-from` (an attempt of the job this one was replayed from).
 *
 * @example
 * span.links.filter((l) => l.attributes?.[ATTR.link] === 'replayed-from');
 */
export type LinkAttribute = 'earlier-attempt' | 'replayed-from';
