import type { RedisClient } from 'bullmq';
import type { Classification, DeadLetterReason } from '../policy/types.js';
import { DEAD_LETTER_REASONS } from './dead-letter-filter.js';
import type { DeadLetterRecord } from './types.js';

/**
 * stormguard's own count of a job's attempts, and what the next retry needs to know. BullMQ's counters do
 * not fit: `attemptsMade` does not move when a job is rescheduled with `moveToDelayed` (stormguard's retry
 * path), and `attemptsStarted` also counts breaker and budget deferrals and stalled restarts, which must
 * not use up an attempt.
 *
 * @example
 * const state: AttemptState = { attempts: 2, deferrals: 1, previousDelayMs: 400, firstFailedAt: 1_700_000_000_000 };
 */
export interface AttemptState {
  /** Attempts charged so far (failed executions that used up one of the policy's `maxAttempts`). */
  attempts: number;
  /** Retries scheduled without charging an attempt (breaker open, budget deferral). */
  deferrals: number;
  /** The previous retry's delay, for decorrelated jitter. */
  previousDelayMs?: number;
  /** When the job first failed (epoch ms). */
  firstFailedAt?: number;
  /**
   * Set when the job was dead-lettered: written before the record is filed, so a worker that crashes
   * before the BullMQ job fails leaves a job that is never run again, only filed again.
   */
  deadLettered?: DeadLetteredState;
}

/**
 * What a job's dead-lettering decided, kept in its {@link AttemptState} so that the dead-letter record can
 * be rebuilt from the job and this alone.
 *
 * @example
 * const dl: DeadLetteredState = { reason: 'max-attempts', detail: '3 of 3 attempts used', attemptsMade: 3,
 *   dependency: 'search', at: 1_700_000_000_000,
 *   lastError: { name: 'Error', message: 'timeout', classification: { retryable: true, reason: 'timeout' } } };
 */
export interface DeadLetteredState {
  reason: DeadLetterReason;
  detail: string;
  lastError: DeadLetterRecord['lastError'];
  attemptsMade: number;
  dependency: string;
  idempotencyKey?: string;
  /** When it was dead-lettered (epoch ms): the record's `deadLetteredAt`. */
  at: number;
}

/**
 * The field of the BullMQ job hash that holds the {@link AttemptState}. Kept in the job's own hash rather
 * than in its `data` so the producer's data stays exactly as written (a replay enqueues it unchanged), and
 * so it lives and dies with the job: it survives delays, stalls and worker restarts, and goes when BullMQ
 * removes the job.
 *
 * @example
 * const raw = await redis.hget(queue.toKey(jobId), ATTEMPT_STATE_FIELD);
 * parseAttemptState(raw).attempts; // attempts charged so far
 */
export const ATTEMPT_STATE_FIELD = 'stormguard';

/** The state of a job that has never failed. */
export const FRESH_ATTEMPT_STATE: Readonly<AttemptState> = Object.freeze({ attempts: 0, deferrals: 0 });

/**
 * Reads an {@link AttemptState} from its stored form. Anything unreadable counts as a fresh job: losing a
 * count can cost at most one extra attempt, while refusing to run the job would lose it.
 *
 * @example
 * parseAttemptState('{"attempts":2,"deferrals":0,"previousDelayMs":400}').attempts; // 2
 * parseAttemptState(undefined); // { attempts: 0, deferrals: 0 }
 */
export function parseAttemptState(raw: string | undefined | null): AttemptState {
  if (!raw) return { ...FRESH_ATTEMPT_STATE };
  try {
    const parsed = JSON.parse(raw) as Record<string, unknown>;
    const state: AttemptState = {
      attempts: countOrZero(parsed.attempts),
      deferrals: countOrZero(parsed.deferrals),
    };
    if (isTime(parsed.previousDelayMs)) state.previousDelayMs = parsed.previousDelayMs;
    if (isTime(parsed.firstFailedAt)) state.firstFailedAt = parsed.firstFailedAt;
    const deadLettered = parseDeadLettered(parsed.deadLettered);
    if (deadLettered) state.deadLettered = deadLettered;
    return state;
  } catch {
    return { ...FRESH_ATTEMPT_STATE };
  }
}

/**
 * The stored form of an {@link AttemptState} (compact JSON).
 *
 * @example
 * serializeAttemptState({ attempts: 1, deferrals: 0 }); // '{"attempts":1,"deferrals":0}'
 */
export function serializeAttemptState(state: AttemptState): string {
  return JSON.stringify(state);
}

/** Where a job's hash lives: the worker's `toKey(jobId)` and its Redis client. */
export interface JobHashLocation {
  client: Promise<RedisClient>;
  key: string;
}

/**
 * Loads a job's {@link AttemptState} from its hash: one `HGET`. Only the failure path calls it, and only
 * when the state did not arrive with the job (see `StormguardWorker`).
 */
export async function readAttemptState(location: JobHashLocation): Promise<AttemptState> {
  const client = await location.client;
  return parseAttemptState(await client.hget(location.key, ATTEMPT_STATE_FIELD));
}

/**
 * Stores a job's {@link AttemptState} in its hash: one `HSET`, written before the job is rescheduled, so a
 * crash in between can over-count an attempt (one fewer retry) but never under-count one.
 */
export async function writeAttemptState(location: JobHashLocation, state: AttemptState): Promise<void> {
  const client = await location.client;
  await client.hset(location.key, { [ATTEMPT_STATE_FIELD]: serializeAttemptState(state) });
}

/**
 * A stored {@link DeadLetteredState}. A valid reason is all it takes to count as dead-lettered (running the
 * job again is the one thing the mark exists to prevent); details that do not read are filled in plainly.
 */
function parseDeadLettered(value: unknown): DeadLetteredState | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const stored = value as Record<string, unknown>;
  const reason = DEAD_LETTER_REASONS.find((known) => known === stored.reason);
  if (reason === undefined) return undefined;
  const state: DeadLetteredState = {
    reason,
    detail: typeof stored.detail === 'string' ? stored.detail : 'dead-lettered by an earlier attempt',
    lastError: parseLastError(stored.lastError),
    attemptsMade: countOrZero(stored.attemptsMade),
    dependency: typeof stored.dependency === 'string' ? stored.dependency : '',
    at: isTime(stored.at) ? stored.at : 0,
  };
  if (typeof stored.idempotencyKey === 'string') state.idempotencyKey = stored.idempotencyKey;
  return state;
}

function parseLastError(value: unknown): DeadLetterRecord['lastError'] {
  const stored = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const classification = stored.classification as Partial<Classification> | undefined;
  const lastError: DeadLetterRecord['lastError'] = {
    name: typeof stored.name === 'string' ? stored.name : 'Error',
    message: typeof stored.message === 'string' ? stored.message : 'unknown',
    classification:
      classification &&
      typeof classification.retryable === 'boolean' &&
      typeof classification.reason === 'string'
        ? (classification as Classification)
        : { retryable: false, reason: 'unknown' },
  };
  if (typeof stored.stack === 'string') lastError.stack = stored.stack;
  return lastError;
}

function countOrZero(value: unknown): number {
  return Number.isInteger(value) && (value as number) >= 0 ? (value as number) : 0;
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
