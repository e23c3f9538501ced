/** The shapes the server's API answers with (see src/dashboard). */

import type { DeadLetterReason } from '../../policy/types.js';

export type { AuditEntry, AuditPage } from '../../audit/types.js';
export type { ListedBreaker } from '../../breaker/types.js';
export type {
  DeadLetterQueueSummary,
  MalformedDeadLetter,
  StoredDeadLetter,
} from '../../runtime/contracts.js';
export type { DeadLetterSearchResult } from '../../runtime/dead-letter-search.js';
export type { AttentionReason, DependencyStatus, QueueStatus } from '../../status/types.js';
export type { BudgetSample } from '../history.js';
export type { OverviewSnapshot } from '../overview.js';

/**
 * Every reason a dead letter can carry, as the reason filters offer them. The runtime's own list
 * (DEAD_LETTER_REASONS) is not imported because its module brings zod into the page; the check below
 * stops this list from missing one.
 */
export const REASONS = [
  'permanent',
  'max-attempts',
  'max-age',
  'budget-exhausted',
  'breaker-open',
  'retry-after-too-long',
  'no-idempotency-key',
] as const satisfies readonly DeadLetterReason[];
/** Fails to compile when the runtime files a reason this list does not offer. */
export const REASONS_ARE_COMPLETE: [Exclude<DeadLetterReason, (typeof REASONS)[number]>] extends [never]
  ? true
  : never = true;
export type { ReplayRun } from '../../runtime/replay-runs.js';
