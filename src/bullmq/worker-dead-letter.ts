import type { Job } from 'bullmq';
import type { Classification, DeadLetterReason } from '../policy/types.js';
import type { DeadLetteredState } from './attempts.js';
import { replayOrigin } from './dead-letter-ids.js';
import type { DeadLetterRecord } from './types.js';

/** What a worker knows when a job leaves the retry path, besides the job. */
export interface DeadLetterFacts {
  queue: string;
  reason: DeadLetterReason;
  detail: string;
  error: unknown;
  classification: Classification;
  attemptsMade: number;
  dependency: string;
  idempotencyKey: string | undefined;
  firstFailedAt: number;
  nowMs: number;
}

/**
 * The full dead-letter record of a job : the original name, data, options and id (a replayed
 * job is filed under the id it was first enqueued with, its replays counted), the reason, the last error
 * and its classification, attempts made, the dependency and the timestamps. Plain JSON.
 *
 * @example
 * const record = deadLetterRecordOf(job, { queue: 'index', reason: 'max-attempts', detail: '5 of 5 attempts used',
 *   error, classification, attemptsMade: 5, dependency: 'search', idempotencyKey: undefined,
 *   firstFailedAt, nowMs: clock.now() });
 */
export function deadLetterRecordOf(job: Job, facts: DeadLetterFacts): DeadLetterRecord {
  return deadLetterRecordFrom(job, facts.queue, deadLetteredStateOf(facts), facts.firstFailedAt);
}

/**
 * What the job's attempt state keeps of a dead-lettering: enough for {@link deadLetterRecordFrom} to
 * rebuild the very record from the job alone, when a worker crashed before filing it.
 */
export function deadLetteredStateOf(facts: DeadLetterFacts): DeadLetteredState {
  const state: DeadLetteredState = {
    reason: facts.reason,
    detail: facts.detail,
    lastError: { ...describeError(facts.error), classification: facts.classification },
    attemptsMade: facts.attemptsMade,
    dependency: facts.dependency,
    at: facts.nowMs,
  };
  if (facts.idempotencyKey !== undefined) state.idempotencyKey = facts.idempotencyKey;
  return state;
}

/** The dead-letter record of `job` from what its attempt state kept of the dead-lettering. */
export function deadLetterRecordFrom(
  job: Job,
  queue: string,
  deadLettered: DeadLetteredState,
  firstFailedAt: number,
): DeadLetterRecord {
  const origin = replayOrigin(job);
  const record: DeadLetterRecord = {
    jobId: origin.originalJobId,
    queue,
    name: job.name,
    data: job.data,
    opts: plainJson(job.opts) as Record<string, unknown>,
    reason: deadLettered.reason,
    detail: deadLettered.detail,
    lastError: deadLettered.lastError,
    attemptsMade: deadLettered.attemptsMade,
    dependency: deadLettered.dependency,
    createdAt: job.timestamp,
    firstFailedAt,
    deadLetteredAt: deadLettered.at,
    replays: origin.replays,
  };
  if (deadLettered.idempotencyKey !== undefined) record.idempotencyKey = deadLettered.idempotencyKey;
  return record;
}

/**
 * An error's class name, message and stack, whatever was thrown (a string, a plain object, `undefined`).
 *
 * @example
 * describeError(new TypeError('x')); // { name: 'TypeError', message: 'x', stack: '…' }
 * describeError('boom'); // { name: 'string', message: 'boom' }
 */
export function describeError(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error) {
    const described: { name: string; message: string; stack?: string } = {
      name: error.name || error.constructor?.name || 'Error',
      message: error.message,
    };
    if (typeof error.stack === 'string') described.stack = error.stack;
    return described;
  }
  if (typeof error === 'object' && error !== null) {
    const { name, message } = error as { name?: unknown; message?: unknown };
    return {
      name: typeof name === 'string' ? name : (error.constructor?.name ?? 'Object'),
      message: typeof message === 'string' ? message : safeJson(error),
    };
  }
  return { name: typeof error, message: String(error) };
}

function plainJson(value: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(value ?? {}));
  } catch {
    return {};
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
