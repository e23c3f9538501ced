/** The shapes the server's API answers with (see src/dashboard). */

import { DEAD_LETTER_REASONS } from '../../policy/types.js';

export type { AuditEntry, AuditPage } from '../../audit/types.js';
export type { ListedBreaker } from '../../breaker/types.js';
export type {
  DeadLetterQueueSummary,
  MalformedDeadLetter,
  StoredDeadLetter,
} from '../../runtime/contracts.js';
export type { DeadLetterSearchResult } from '../../runtime/dead-letter-search.js';
export type {
  AttentionReason,
  DependencyLimitStatus,
  DependencyStatus,
  QueueStatus,
} from '../../status/types.js';
export type { BudgetSample } from '../history.js';
export type { OverviewSnapshot } from '../overview.js';

/** Every reason a dead letter can carry, as the reason filters offer them (policy/types.ts loads nothing). */
export const REASONS = DEAD_LETTER_REASONS;
export type { ReplayRun } from '../../runtime/replay-runs.js';
