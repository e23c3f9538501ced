/** The shapes the server's API answers with (see src/dashboard). */

export type { AuditEntry, AuditPage } from '../../audit/types.js';
export type { ListedBreaker } from '../../breaker/types.js';
export type {
  DeadLetterQueueSummary,
  MalformedDeadLetter,
  StoredDeadLetter,
} from '../../runtime/contracts.js';
export type { AttentionReason, DependencyStatus, QueueStatus } from '../../status/types.js';
export type { BudgetSample } from '../history.js';
export type { OverviewSnapshot } from '../overview.js';
export type { SearchChunk } from '../search.js';

export const REASONS = ['permanent', 'max-attempts', 'max-age', 'budget-exhausted', 'breaker-open'] as const;
export type { ReplayRun } from '../replay-runs.js';
