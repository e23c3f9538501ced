import type { Classification, DeadLetterReason } from '../policy/types.js';

/**
 * The contracts of the backend-neutral job runtime: what a queue adapter (BullMQ on Redis or PostgreSQL,
 * the simulator) and a store (memory, Redis, PostgreSQL) agree on. Nothing here knows a client or a queue
 * library; every implementation passes the conformance suites beside these contracts.
 */

/** A value now or later: in-process stores answer synchronously, so the hot path allocates no promise. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * One job, as stores know it. A job id alone is not an identity: BullMQ ids are unique only while a job
 * exists, and a producer that uses its own ids with `removeOnFail` reuses them. The creation time (BullMQ's
 * `job.timestamp`) tells two jobs with one id apart, so state and records of a reused id never mix.
 *
 * @example
 * const ref: JobRef = { queue: 'index', jobId: 'doc-42', createdAt: 1_700_000_000_000 };
 */
export interface JobRef {
  queue: string;
  jobId: string;
  /** Epoch ms when the job was added (BullMQ's `job.timestamp`). */
  createdAt: number;
}

/**
 * stormguard's own count of a job's attempts, and what the next retry needs to know. Kept in stormguard's
 * store, never in the queue's own keys.
 *
 * @example
 * const state: AttemptState = { attempts: 2, deferrals: 1, starts: 3, previousDelayMs: 400, firstFailedAt: 1_700_000_000_000 };
 */
export interface AttemptState {
  /** Attempts charged so far (failed executions that used up one of the policy's `maxAttempts`). */
  attempts: number;
  /** Retries scheduled without charging an attempt (breaker open, budget deferral, parked). */
  deferrals: number;
  /**
   * Executions stormguard has accounted for (every settled attempt or deferral). The queue's own start
   * count minus this is how many times the job stalled (its worker died mid-job).
   */
  starts?: number;
  /** The previous retry's delay, for decorrelated jitter. */
  previousDelayMs?: number;
  /** When the job first failed (epoch ms). */
  firstFailedAt?: number;
  /**
   * Set when the job was dead-lettered, in the same atomic write that files the record: a job that comes
   * back after its worker crashed is never run again, only failed.
   */
  deadLettered?: DeadLetteredState;
}

/**
 * What a job's dead-lettering decided, kept in its {@link AttemptState}.
 *
 * @example
 * const dl: DeadLetteredState = { reason: 'max-attempts', detail: '3 of 3 attempts used', recordId: '17', at: 1_700_000_000_000 };
 */
export interface DeadLetteredState {
  reason: DeadLetterReason;
  detail: string;
  /** The record the store filed for it. */
  recordId: string;
  /** When it was dead-lettered (epoch ms). */
  at: number;
}

/**
 * What the dead-letter store holds for one job: enough to understand the failure and to replay the job
 * exactly as it was enqueued. Plain JSON.
 *
 * @example
 * const record: DeadLetterRecord = { queue: 'index', jobId: 'doc-42', createdAt: 1_700_000_000_000, name: 'reindex',
 *   data: { docId: 42 }, opts: {}, reason: 'max-attempts', detail: '5 of 5 attempts used', attemptsMade: 5,
 *   dependency: 'search', deadLetteredAt: 1_700_000_090_000, replays: 0,
 *   lastError: { name: 'Error', message: 'ETIMEDOUT', classification: { retryable: true, reason: 'network' } } };
 */
export interface DeadLetterRecord extends JobRef {
  /** The original job name. */
  name: string;
  /** The original job data (after the redaction hook, when one is set). */
  data: unknown;
  /** The original queue options of the job (plain JSON), so a replay enqueues it as it was. */
  opts: Record<string, unknown>;
  reason: DeadLetterReason;
  /** One line that says why, for people: "5 of 5 attempts used", "budget for search exhausted". */
  detail: string;
  lastError: { name: string; message: string; stack?: string; classification: Classification };
  attemptsMade: number;
  dependency: string;
  idempotencyKey?: string;
  firstFailedAt?: number;
  deadLetteredAt: number;
  /** How many times this job's lineage was replayed before. */
  replays: number;
  /** The record this job was replayed from, when it was (its lineage). */
  replayedFrom?: string;
}

/**
 * A record as the store returns it: with the id the store gave it. Ids are unique per queue and never
 * reused, whatever job ids producers reuse.
 */
export interface StoredDeadLetter extends DeadLetterRecord {
  id: string;
  /** Set while a replay has claimed the record (an interrupted replay leaves it; running again finishes it). */
  replay?: ReplayClaim;
}

/** A record a replay has taken: the queue job id it is (or was being) re-added under. */
export interface ReplayClaim {
  /** Deterministic per record: re-adding it after an interruption is a no-op in the queue. */
  jobId: string;
  claimedAt: number;
}

/** A stored record that does not read as a {@link DeadLetterRecord}: listed as such, skipped by replay. */
export interface MalformedDeadLetter {
  id: string;
  problem: string;
}

/**
 * Which records a listing, count, replay or purge covers. Every filter is served from an index.
 *
 * @example
 * const filter: DeadLetterFilter = { reason: 'budget-exhausted', dependency: 'search', since: Date.now() - 3_600_000 };
 */
export interface DeadLetterFilter {
  reason?: DeadLetterReason;
  dependency?: string;
  name?: string;
  /** Dead-lettered at or after (epoch ms). */
  since?: number;
  /** Dead-lettered before (epoch ms). */
  before?: number;
}

/** A page request: records oldest first unless `newestFirst`. */
export interface DeadLetterPageRequest extends DeadLetterFilter {
  limit: number;
  /** Opaque, from the previous page's `next`. */
  cursor?: string;
  newestFirst?: boolean;
}

export interface DeadLetterPage {
  records: StoredDeadLetter[];
  malformed: MalformedDeadLetter[];
  /** Where the next page starts; absent on the last page. */
  next?: string;
}

/** How long and how many records a queue keeps. The oldest go first, and are counted. */
export interface RetentionLimits {
  maxAgeMs?: number;
  maxCount?: number;
}

/** A queue registered in the dead-letter store. */
export interface DeadLetterQueueSummary {
  queue: string;
  count: number;
  /** Records evicted by retention so far. */
  evicted: number;
  registeredAt: number;
}

/**
 * Where a job's {@link AttemptState} lives between attempts. Only failed jobs have one; it expires on its
 * own after `ttlMs`, and goes when the job completes.
 */
export interface AttemptStateStore {
  readAttempts(job: JobRef): MaybePromise<AttemptState | undefined>;
  writeAttempts(job: JobRef, state: AttemptState, ttlMs: number): MaybePromise<void>;
  clearAttempts(job: JobRef): MaybePromise<void>;
}

/**
 * stormguard's dead-letter store: one list per queue, indexed by reason, dependency, job name and time,
 * bounded by retention. Implementations: memory, Redis (all of a queue's keys in one hash slot), PostgreSQL.
 * Every implementation passes `dead-letter-store.case.ts`.
 */
export interface DeadLetterStore extends AttemptStateStore {
  /** Makes the queue known to tools (CLI, console) without scanning the queue's own keys. Idempotent. */
  registerQueue(queue: string, retention?: RetentionLimits): MaybePromise<void>;
  /** Every registered queue, sorted by name. Never writes. */
  queues(): MaybePromise<DeadLetterQueueSummary[]>;
  /**
   * Files the record and marks the job's attempt state dead-lettered, atomically. Idempotent per
   * {@link JobRef}: filing the same job again returns the first record's id with `created: false`; a
   * reused job id (another `createdAt`) gets a record of its own.
   */
  file(
    record: DeadLetterRecord,
    finalState: AttemptState,
    ttlMs: number,
  ): MaybePromise<{ id: string; created: boolean }>;
  get(queue: string, id: string): MaybePromise<StoredDeadLetter | MalformedDeadLetter | undefined>;
  list(queue: string, page: DeadLetterPageRequest): MaybePromise<DeadLetterPage>;
  count(queue: string, filter?: DeadLetterFilter): MaybePromise<number>;
  /** Claims a record for replay (or returns the claim an interrupted replay left). */
  claimReplay(queue: string, id: string, jobId: string): MaybePromise<ReplayClaim | undefined>;
  /** Removes a replayed record once its job is in the queue. */
  completeReplay(queue: string, id: string): MaybePromise<boolean>;
  remove(queue: string, id: string): MaybePromise<boolean>;
  close?(): MaybePromise<void>;
}
