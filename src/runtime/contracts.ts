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
   * True when `decide` granted the next run (a charged retry): it runs without asking the budget again.
   * Absent after a deferral: the next run asks the breaker and the budget first (flow control's admission).
   */
  granted?: true;
  /** The queue's count of stalled-job recoveries when this state was written, when above 0. */
  stalls?: number;
  /**
   * Set when the job was dead-lettered, in the same atomic write that files the record: a job that comes
   * back after its worker crashed is never run again, only failed.
   */
  deadLettered?: DeadLetteredState;
  /**
   * The trace contexts of the job's earlier attempts (W3C `traceparent` strings), kept for a tracer so
   * later attempts link to them; absent unless one is attached. The runtime never reads them otherwise.
   */
  traceLinks?: string[];
  /**
   * The job's last 16 failed attempts, oldest first, each with its decision and delay; copied into the
   * dead-letter record when the job is filed. Absent in state written before it was kept.
   */
  history?: AttemptEntry[];
}

/**
 * One failed execution of a job and what came of it, as its attempt history and its dead-letter record
 * keep it. Plain JSON.
 *
 * @example
 * const entry: AttemptEntry = {
 *   attempt: 2, at: 1_700_000_030_000, dependency: 'search',
 *   error: { name: 'Error', message: 'connect ETIMEDOUT' },
 *   classification: { retryable: true, reason: 'ETIMEDOUT' },
 *   decision: 'retry', cause: 'backoff', delayMs: 4_000,
 * };
 */
export interface AttemptEntry {
  /** Which execution of the job it was: the queue's start count (BullMQ's `attemptsStarted`), from 1. */
  attempt: number;
  /** When the attempt was settled (epoch ms, the worker's clock). */
  at: number;
  /** The dependency the failure was charged to. */
  dependency: string;
  /** The error, its message cut at 1 000 characters (in a record: after the redaction hook). */
  error: { name: string; message: string };
  classification: Classification;
  /**
   * What came of it: `retry` (runs again, one attempt used), `defer` (runs again, no attempt used: an open
   * breaker, a budget deferral), `dead-letter` or `fail` (the job ends).
   */
  decision: 'retry' | 'defer' | 'dead-letter' | 'fail';
  /** Why: a retry's or deferral's cause (`backoff`, `retry-after`, `breaker-open`, `budget-deferred`), else the dead-letter reason. */
  cause: string;
  /** The wait before the next run, for `retry` and `defer`. */
  delayMs?: number;
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
  /** The trace contexts of the job's attempts (see {@link AttemptState.traceLinks}): a replay links to them. */
  traceLinks?: string[];
  /**
   * Every attempt with its decision and delay (the last 16, oldest first; `attemptsMade` counts them all),
   * each error message through the store's redaction hook as `lastError` is. Absent in records filed
   * before it was kept, and for a job that never failed in a worker that keeps it.
   */
  history?: AttemptEntry[];
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

/**
 * A record a replay has taken: the queue job id it is (or was being) re-added under.
 *
 * @example
 * const claim: ReplayClaim = { jobId: 'doc-42-r1.17', claimedAt: 1_700_000_100_000 };
 */
export interface ReplayClaim {
  /** Deterministic per record: re-adding it after an interruption is a no-op in the queue. */
  jobId: string;
  claimedAt: number;
}

/**
 * A stored record that does not read as a {@link DeadLetterRecord} (written by hand or by another
 * version): listed as such, skipped by replay with its `problem`, removable by purge. Never a crash.
 *
 * @example
 * const bad: MalformedDeadLetter = { id: '17', malformed: true, problem: 'deadLetteredAt: expected a number' };
 */
export interface MalformedDeadLetter {
  id: string;
  malformed: true;
  /** What does not read, for people. */
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

/**
 * A page request: records oldest first unless `newestFirst`.
 *
 * @example
 * const first = await store.list('index', { reason: 'permanent', limit: 50 });
 * const second = first.next ? await store.list('index', { reason: 'permanent', limit: 50, cursor: first.next }) : undefined;
 */
export interface DeadLetterPageRequest extends DeadLetterFilter {
  limit: number;
  /** Opaque, from the previous page's `next`. */
  cursor?: string;
  newestFirst?: boolean;
}

/** One page of a listing. */
export interface DeadLetterPage {
  records: StoredDeadLetter[];
  malformed: MalformedDeadLetter[];
  /** Where the next page starts; absent on the last page. */
  next?: string;
}

/**
 * How long and how many records a queue keeps. The oldest (by `deadLetteredAt`) go first, when a record
 * is filed, and are counted in {@link DeadLetterQueueSummary.evicted}. Unset: kept until replayed or purged.
 *
 * @example
 * const retention: RetentionLimits = { maxAgeMs: 30 * 86_400_000, maxCount: 100_000 };
 */
export interface RetentionLimits {
  maxAgeMs?: number;
  maxCount?: number;
}

/**
 * A queue registered in the dead-letter store.
 *
 * @example
 * const summary: DeadLetterQueueSummary = { queue: 'index', count: 12, evicted: 0, registeredAt: 1_700_000_000_000, retention: { maxCount: 100_000 } };
 */
export interface DeadLetterQueueSummary {
  queue: string;
  /** Records held now. */
  count: number;
  /** Records evicted by retention so far. */
  evicted: number;
  /** When the queue was first registered (epoch ms, store time). */
  registeredAt: number;
  retention: RetentionLimits;
}

/**
 * What one filing's retention evicted: how many records, by their dead-letter reason and by the limit that
 * evicted them (a record past both counts under `maxAgeMs`). Plain JSON.
 *
 * @example
 * const evicted: DeadLetterEvictions = { count: 3, reasons: { 'budget-exhausted': 2, permanent: 1 }, limits: { maxAgeMs: 1, maxCount: 2 } };
 */
export interface DeadLetterEvictions {
  count: number;
  reasons: Partial<Record<DeadLetterReason, number>>;
  limits: { maxAgeMs?: number; maxCount?: number };
  /** Set when the store's audit log could not record the eviction (the filing stands). */
  auditError?: string;
}

/**
 * What {@link DeadLetterStore.file} did: the record's id, whether this call filed it, and what retention
 * evicted to make room (absent when nothing was evicted; a store written before it was reported leaves it
 * out too).
 *
 * @example
 * const filing: DeadLetterFiling = { id: '17', created: true, evicted: { count: 1, reasons: { permanent: 1 }, limits: { maxCount: 1 } } };
 */
export interface DeadLetterFiling {
  id: string;
  created: boolean;
  evicted?: DeadLetterEvictions;
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
  /**
   * Makes the queue known to tools (CLI, console) without scanning the queue's own keys, and sets its
   * retention (the last registration's limits apply; none given keeps the current ones). Idempotent.
   */
  registerQueue(queue: string, retention?: RetentionLimits): MaybePromise<void>;
  /** Every registered queue, sorted by name. Never writes. */
  queues(): MaybePromise<DeadLetterQueueSummary[]>;
  /** One registered queue, or `undefined` when it was never registered. Never writes. */
  queue(queue: string): MaybePromise<DeadLetterQueueSummary | undefined>;
  /**
   * Files the record and writes the job's final attempt state, atomically (one script, one statement):
   * either both are stored or neither is. The store sets `finalState.deadLettered` from the record
   * (`reason`, `detail`, `at` = `deadLetteredAt`) and the id it assigned, replacing whatever the caller put
   * there, and keeps the state for `ttlMs` like {@link AttemptStateStore.writeAttempts}.
   *
   * Idempotent per {@link JobRef} while that state lives: filing the same job (same `jobId` and
   * `createdAt`) again returns the first record's id with `created: false`, even once that record was
   * replayed or purged. A reused job id (another `createdAt`) gets a record of its own and never touches
   * an earlier one. A record that is not a {@link DeadLetterRecord} is refused with an error naming the field.
   * Filing applies the queue's retention: the oldest records beyond it are evicted (and counted), never
   * the record being filed, however old its `deadLetteredAt` (the next filing drops it); what this filing
   * evicted comes back in `evicted`.
   */
  file(record: DeadLetterRecord, finalState: AttemptState, ttlMs: number): MaybePromise<DeadLetterFiling>;
  /** One record by its id; a record that does not read is returned as {@link MalformedDeadLetter}. */
  get(queue: string, id: string): MaybePromise<StoredDeadLetter | MalformedDeadLetter | undefined>;
  /**
   * A page of the queue's records matching the filter, in dead-letter time order (ties by id). Served from
   * the filter's index: the work of one call depends on the page, not on the queue's size. A page may
   * hold fewer than `limit` entries and still have a `next` (one call bounds its work); read until `next`
   * is absent. Malformed records come in `malformed`, in their place in the order; never throws on them.
   */
  list(queue: string, page: DeadLetterPageRequest): MaybePromise<DeadLetterPage>;
  /** How many records match (malformed ones included when no filter is given). */
  count(queue: string, filter?: DeadLetterFilter): MaybePromise<number>;
  /**
   * Claims a record for replay under `jobId` (the queue job id it is re-added as), or returns the claim an
   * earlier, interrupted replay left, whatever `jobId` says now. `undefined` when the record is gone.
   */
  claimReplay(queue: string, id: string, jobId: string): MaybePromise<ReplayClaim | undefined>;
  /** Removes a replayed record once its job is in the queue; false when it was gone already. */
  completeReplay(queue: string, id: string): MaybePromise<boolean>;
  /** Removes a record for good (purge); false when it was gone already. Malformed records too. */
  remove(queue: string, id: string): MaybePromise<boolean>;
  close?(): MaybePromise<void>;
  /**
   * The redaction hook records go through before they are stored, when the store has one: the job runtime
   * redacts with it every error it hands the queue, its logs and its events, as it redacts `lastError`.
   */
  readonly redaction?: DeadLetterRedaction | undefined;
}

/**
 * A dead-letter store's redaction hook: given a copy of the record about to be filed, returns the record
 * to store instead (synchronously). It may change `data`, `opts`, `lastError` and `detail`; the fields
 * that identify, index and replay the record (queue, jobId, createdAt, name, reason, dependency,
 * attemptsMade, timestamps, replays, replayedFrom, idempotencyKey) are kept as they were. Each error of
 * the record's attempt `history` goes through the hook too, as the `lastError` of a copy of the record,
 * so a hook written for `lastError` covers every attempt's message without knowing the history.
 *
 * @example
 * const redact: DeadLetterRedaction = (record) => ({
 *   ...record,
 *   data: { ...(record.data as object), cardNumber: '[redacted]' },
 *   lastError: { ...record.lastError, stack: undefined },
 * });
 * const store = new RedisDeadLetterStore({ redis, redact });
 */
export type DeadLetterRedaction = (record: DeadLetterRecord) => DeadLetterRecord;
