import type { DeadLetterReason, Decision } from '../policy/types.js';
import type { AttemptState, DeadLetterRecord, JobRef } from './contracts.js';

/**
 * What settling a failed attempt needs to know about the job, besides its attempt state: who it is, what
 * to file if it leaves the retry path, and how many times its queue has started it.
 *
 * @example
 * const job: SettleJob = { ref: { queue: 'index', jobId: '42', createdAt: 1_700_000_000_000 }, name: 'reindex',
 *   data: { docId: 42 }, opts: {}, starts: 1, dependency: 'search', replays: 0,
 *   lastError: { name: 'Error', message: 'connect ETIMEDOUT' } };
 */
export interface SettleJob {
  ref: JobRef;
  name: string;
  data: unknown;
  /** The job's queue options as plain JSON (what a replay enqueues it with). */
  opts: Record<string, unknown>;
  /** Executions the queue has started, this one included (BullMQ's `attemptsStarted`). */
  starts: number;
  /** The dependency the failure is charged to. */
  dependency: string;
  idempotencyKey?: string;
  /** The error that failed the attempt, as a record keeps it (the classification comes from the decision). */
  lastError: { name: string; message: string; stack?: string };
  /** How many replays the job's lineage went through (0 for a job never replayed). */
  replays: number;
  /** The dead-letter record this job was replayed from. */
  replayedFrom?: string;
  /** Stalled-job recoveries the queue counted for the job (BullMQ's `stalledCounter`). Default 0. */
  stalls?: number;
}

/**
 * The one thing to do after a failed attempt.
 *
 * - `retry`: run again at `dueAtMs`; the failed attempt used up one of the policy's attempts.
 * - `defer`: run again at `dueAtMs` without charging an attempt (open breaker, budget deferral).
 * - `dead-letter`: file `record` (with the final state, atomically) and end the job.
 * - `fail`: end the job as failed; nothing can hold a dead letter.
 *
 * @example
 * const action: SettleAction = { type: 'retry', delayMs: 200, dueAtMs: 10_200, retry: 1, cause: 'backoff' };
 */
export type SettleAction =
  | {
      type: 'retry';
      delayMs: number;
      /** When the retry is due: the settling time plus the delay, on the one clock that decided it. */
      dueAtMs: number;
      /** n of "retry n". */
      retry: number;
      cause: 'backoff' | 'retry-after' | 'breaker-open' | 'budget-deferred';
    }
  | {
      type: 'defer';
      delayMs: number;
      dueAtMs: number;
      retry: number;
      cause: 'backoff' | 'retry-after' | 'breaker-open' | 'budget-deferred';
    }
  | { type: 'dead-letter'; record: DeadLetterRecord }
  | { type: 'fail'; reason: DeadLetterReason; detail: string; message: string };

/**
 * The job's next attempt state and the one action that goes with it.
 *
 * @example
 * const { state, action } = settle(previous, decision, clock.now(), job);
 */
export interface Settlement {
  state: AttemptState;
  action: SettleAction;
}

/**
 * Settles a failed attempt: from the job's attempt state, the decision `decide` made, the time and the job's
 * facts, the next attempt state and exactly one action. Pure: no I/O, no clock, no randomness (the decision
 * already holds the drawn delay), so every queue adapter and the simulator settle the same way.
 *
 * The failed attempt counts as attempt `state.attempts + 1`. A retry charges it and marks the next run
 * `granted` (decide asked the budget for it: it runs without asking again); a breaker refusal (nothing
 * reached the dependency) keeps the grant the held-back run had, a first run's included; any other deferral gives it back
 * (`deferrals` counts it instead) and keeps the previous delay, so decorrelated jitter continues from the
 * last real retry. A terminal decision charges it too: the record says how many attempts were made.
 * `starts` becomes the queue's start count, so every start is accounted for; `firstFailedAt` is kept from
 * the first failure. A dead-letter's final state carries no `deadLettered` mark: the store adds it, with the
 * id it gives the record, in the same atomic write that files the record.
 *
 * @example
 * const { state, action } = settle(
 *   { attempts: 0, deferrals: 0 },
 *   { action: 'retry', delayMs: 200, retry: 1, chargesAttempt: true, cause: 'backoff', classification },
 *   10_000,
 *   job,
 * );
 * // state: { attempts: 1, deferrals: 0, starts: 1, previousDelayMs: 200, firstFailedAt: 10_000, granted: true }
 * // action: { type: 'retry', delayMs: 200, dueAtMs: 10_200, retry: 1, cause: 'backoff' }
 */
export function settle(state: AttemptState, decision: Decision, nowMs: number, job: SettleJob): Settlement {
  const firstFailedAt = state.firstFailedAt ?? nowMs;
  const attemptsMade = state.attempts + 1;
  if (decision.action === 'retry') {
    // Plain literals, no spreads: the simulator settles hundreds of thousands of attempts a run.
    const { delayMs, retry, cause } = decision;
    const dueAtMs = nowMs + delayMs;
    if (decision.chargesAttempt)
      return {
        // Granted only when decide asked the budget: a retry the open breaker held back asks at its next run.
        state: nextState(
          attemptsMade,
          state.deferrals,
          job.starts,
          delayMs,
          firstFailedAt,
          job.stalls,
          cause !== 'breaker-open',
        ),
        action: { type: 'retry', delayMs, dueAtMs, retry, cause },
      };
    // A breaker refusal reached nothing: the run it held back keeps the grant it had (a first run needs
    // none). Any other deferral gives back an attempt that did reach the dependency: the next run asks.
    const keepsGrant =
      cause === 'breaker-open' &&
      (state.granted === true ||
        (state.attempts === 0 && state.deferrals === 0 && state.firstFailedAt === undefined));
    return {
      state: nextState(
        state.attempts,
        state.deferrals + 1,
        job.starts,
        state.previousDelayMs,
        firstFailedAt,
        job.stalls,
        keepsGrant,
      ),
      action: { type: 'defer', delayMs, dueAtMs, retry, cause },
    };
  }
  const final = nextState(
    attemptsMade,
    state.deferrals,
    job.starts,
    state.previousDelayMs,
    firstFailedAt,
    job.stalls,
    false,
  );
  const { reason, detail, classification } = decision;
  const { lastError } = job;
  if (decision.action === 'fail')
    return {
      state: final,
      action: {
        type: 'fail',
        reason,
        detail,
        message: `${reason}: ${detail}; last error: ${lastError.message}`,
      },
    };
  const { ref } = job;
  const record: DeadLetterRecord = {
    queue: ref.queue,
    jobId: ref.jobId,
    createdAt: ref.createdAt,
    name: job.name,
    data: job.data,
    opts: job.opts,
    reason,
    detail,
    lastError:
      lastError.stack === undefined
        ? { name: lastError.name, message: lastError.message, classification }
        : { name: lastError.name, message: lastError.message, stack: lastError.stack, classification },
    attemptsMade,
    dependency: job.dependency,
    firstFailedAt,
    deadLetteredAt: nowMs,
    replays: job.replays,
  };
  if (job.idempotencyKey !== undefined) record.idempotencyKey = job.idempotencyKey;
  if (job.replayedFrom !== undefined) record.replayedFrom = job.replayedFrom;
  return { state: final, action: { type: 'dead-letter', record } };
}

function nextState(
  attempts: number,
  deferrals: number,
  starts: number,
  previousDelayMs: number | undefined,
  firstFailedAt: number,
  stalls: number | undefined,
  granted: boolean,
): AttemptState {
  const state: AttemptState =
    previousDelayMs === undefined
      ? { attempts, deferrals, starts, firstFailedAt }
      : { attempts, deferrals, starts, previousDelayMs, firstFailedAt };
  if (granted) state.granted = true;
  if (stalls !== undefined && stalls > 0) state.stalls = stalls;
  return state;
}
