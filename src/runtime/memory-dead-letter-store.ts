import type { AuditLog } from '../audit/types.js';
import { type Clock, systemClock } from '../common/clock.js';
import type {
  AttemptState,
  DeadLetterEvictions,
  DeadLetterFiling,
  DeadLetterFilter,
  DeadLetterPage,
  DeadLetterPageRequest,
  DeadLetterQueueSummary,
  DeadLetterRecord,
  DeadLetterStore,
  JobRef,
  MalformedDeadLetter,
  MaybePromise,
  ReplayClaim,
  RetentionLimits,
  StoredDeadLetter,
} from './contracts.js';
import { comparePositions, decodeCursor, encodeCursor, type ListPosition } from './dead-letter-cursor.js';
import {
  assertDeadLetterRecord,
  isMalformedDeadLetter,
  matchesFilter,
  parseDeadLetterFilter,
  readStoredRecord,
} from './dead-letter-record.js';
import {
  assertRetention,
  auditEvictions,
  EvictionTally,
  finalStateOf,
  MAX_EVICTIONS_PER_FILING,
} from './dead-letter-store-rules.js';
import { type DeadLetterRedaction, redactRecord } from './redaction.js';

/** One record as the memory store keeps it: the indexed fields, the record's JSON text, a replay claim. */
interface Entry extends ListPosition {
  id: string;
  reason: string;
  dependency: string;
  name: string;
  text: string;
  claim?: ReplayClaim;
}

interface QueueState {
  registeredAt: number;
  retention: RetentionLimits;
  evicted: number;
  seq: number;
  /** Sorted by (at, seq): the time index. */
  entries: Entry[];
  byId: Map<string, Entry>;
  attempts: Map<string, { state: AttemptState; expiresAt: number }>;
}

/**
 * Options of {@link MemoryDeadLetterStore}.
 *
 * @example
 * const options: MemoryDeadLetterStoreOptions = { clock: new FakeClock(0) };
 */
export interface MemoryDeadLetterStoreOptions {
  /**
   * Applied to every record before it is stored (see {@link DeadLetterRedaction}): set it once here, and
   * nothing downstream (the CLI, the console, replays, the audit log) ever sees the raw values. Default
   * none.
   */
  redact?: DeadLetterRedaction;
  /** Store time (claims, retention, expiry, registration). Default: the system clock. */
  clock?: Clock;
  /**
   * Where each filing that evicts records writes one entry (`dead-letters.evict`: how many, by reason and
   * by limit). Default none.
   */
  audit?: AuditLog;
}

/**
 * The dead-letter store in one process's memory: for tests, the simulator and single-process tools. It
 * keeps records as JSON text, as the other stores do, so what a caller gets back is always a copy. Same
 * contract as the Redis and PostgreSQL stores (it passes the same conformance suite); listing scans the
 * queue's records, which is fine at the sizes one process holds.
 *
 * @example
 * const store = new MemoryDeadLetterStore({ clock: new FakeClock(0) });
 * await store.registerQueue('index', { maxCount: 10_000 });
 * const { id } = await store.file(record, { attempts: 5, deferrals: 0 }, 86_400_000);
 */
export class MemoryDeadLetterStore implements DeadLetterStore {
  readonly #clock: Clock;
  readonly #redact: DeadLetterRedaction | undefined;
  /** The store's redaction hook: the worker redacts the errors it hands its queue with it too. */
  get redaction(): DeadLetterRedaction | undefined {
    return this.#redact;
  }
  readonly #audit: AuditLog | undefined;
  readonly #queues = new Map<string, QueueState>();

  constructor(options: MemoryDeadLetterStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#redact = options.redact;
    this.#audit = options.audit;
  }

  registerQueue(queue: string, retention?: RetentionLimits): void {
    if (retention !== undefined) assertRetention(retention);
    const state = this.#open(queue);
    if (retention !== undefined) state.retention = { ...retention };
  }

  queues(): DeadLetterQueueSummary[] {
    return [...this.#queues.keys()].sort().map((queue) => this.queue(queue) as DeadLetterQueueSummary);
  }

  queue(queue: string): DeadLetterQueueSummary | undefined {
    const state = this.#queues.get(queue);
    if (!state) return undefined;
    return {
      queue,
      count: state.entries.length,
      evicted: state.evicted,
      registeredAt: state.registeredAt,
      retention: { ...state.retention },
    };
  }

  file(record: DeadLetterRecord, finalState: AttemptState, ttlMs: number): MaybePromise<DeadLetterFiling> {
    record = redactRecord(record, this.#redact);
    assertDeadLetterRecord(record);
    const state = this.#open(record.queue);
    const known = this.#liveAttempts(state, record)?.deadLettered?.recordId;
    if (known !== undefined) return { id: known, created: false };
    state.seq += 1;
    const entry: Entry = {
      id: String(state.seq),
      seq: state.seq,
      at: record.deadLetteredAt,
      reason: record.reason,
      dependency: record.dependency,
      name: record.name,
      text: JSON.stringify(record),
    };
    state.entries.splice(insertionIndex(state.entries, entry), 0, entry);
    state.byId.set(entry.id, entry);
    this.writeAttempts(record, finalStateOf(record, finalState, entry.id), ttlMs);
    const evicted = this.#applyRetention(state, entry);
    if (!evicted) return { id: entry.id, created: true };
    const filing = { id: entry.id, created: true, evicted };
    return this.#audit ? auditEvictions(this.#audit, record.queue, filing) : filing;
  }

  get(queue: string, id: string): StoredDeadLetter | MalformedDeadLetter | undefined {
    const entry = this.#queues.get(queue)?.byId.get(id);
    return entry ? read(entry) : undefined;
  }

  list(queue: string, page: DeadLetterPageRequest): DeadLetterPage {
    const { limit, cursor, newestFirst = false, ...rest } = page;
    const filter = parseDeadLetterFilter(rest);
    const entries = this.#queues.get(queue)?.entries ?? [];
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const out: DeadLetterPage = { records: [], malformed: [] };
    const ordered = newestFirst ? [...entries].reverse() : entries;
    let taken = 0;
    let last: Entry | undefined;
    for (const entry of ordered) {
      if (after && (newestFirst ? comparePositions(entry, after) >= 0 : comparePositions(entry, after) <= 0))
        continue;
      if (!matchesFilter(entry, filter)) continue;
      if (taken === limit) {
        if (last) out.next = encodeCursor(last);
        break;
      }
      const stored = read(entry);
      if (isMalformedDeadLetter(stored)) out.malformed.push(stored);
      else out.records.push(stored);
      taken += 1;
      last = entry;
    }
    return out;
  }

  count(queue: string, filter: DeadLetterFilter = {}): number {
    const parsed = parseDeadLetterFilter(filter);
    const entries = this.#queues.get(queue)?.entries ?? [];
    return entries.filter((e) => matchesFilter(e, parsed)).length;
  }

  claimReplay(queue: string, id: string, jobId: string): ReplayClaim | undefined {
    const entry = this.#queues.get(queue)?.byId.get(id);
    if (!entry) return undefined;
    entry.claim ??= { jobId, claimedAt: this.#clock.now() };
    return { ...entry.claim };
  }

  completeReplay(queue: string, id: string): boolean {
    return this.remove(queue, id);
  }

  remove(queue: string, id: string): boolean {
    const state = this.#queues.get(queue);
    const entry = state?.byId.get(id);
    if (!state || !entry) return false;
    state.byId.delete(id);
    state.entries.splice(state.entries.indexOf(entry), 1);
    return true;
  }

  readAttempts(job: JobRef): AttemptState | undefined {
    const state = this.#queues.get(job.queue);
    const stored = state && this.#liveAttempts(state, job);
    return stored ? structuredClone(stored) : undefined;
  }

  writeAttempts(job: JobRef, state: AttemptState, ttlMs: number): void {
    this.#open(job.queue).attempts.set(refKey(job), {
      state: structuredClone(state),
      expiresAt: this.#clock.now() + ttlMs,
    });
  }

  clearAttempts(job: JobRef): void {
    this.#queues.get(job.queue)?.attempts.delete(refKey(job));
  }

  /**
   * TEST ONLY: overwrites a record's stored text, as a hand edit or another version would, so tests can
   * check that malformed records are listed as such and never crash anything.
   */
  overwriteRecordText(queue: string, id: string, text: string): void {
    const entry = this.#queues.get(queue)?.byId.get(id);
    if (entry) entry.text = text;
  }

  #liveAttempts(state: QueueState, job: JobRef): AttemptState | undefined {
    const key = refKey(job);
    const stored = state.attempts.get(key);
    if (!stored) return undefined;
    if (stored.expiresAt <= this.#clock.now()) {
      state.attempts.delete(key);
      return undefined;
    }
    return stored.state;
  }

  #open(queue: string): QueueState {
    let state = this.#queues.get(queue);
    if (!state) {
      state = {
        registeredAt: this.#clock.now(),
        retention: {},
        evicted: 0,
        seq: 0,
        entries: [],
        byId: new Map(),
        attempts: new Map(),
      };
      this.#queues.set(queue, state);
    }
    return state;
  }

  /**
   * Evicts the oldest records beyond the queue's count and age limits, counting them; never `filed`, the
   * record this filing wrote (the next filing drops it when it is past the limits).
   */
  #applyRetention(state: QueueState, filed: Entry): DeadLetterEvictions | undefined {
    const { maxCount, maxAgeMs } = state.retention;
    const oldestKept = maxAgeMs === undefined ? undefined : this.#clock.now() - maxAgeMs;
    const tally = new EvictionTally();
    while (tally.count < MAX_EVICTIONS_PER_FILING) {
      const at = state.entries[0] === filed ? 1 : 0;
      const oldest = state.entries[at];
      if (!oldest) break;
      const tooOld = oldestKept !== undefined && oldest.at < oldestKept;
      const tooMany = maxCount !== undefined && state.entries.length > maxCount;
      if (!tooMany && !tooOld) break;
      state.entries.splice(at, 1);
      state.byId.delete(oldest.id);
      state.evicted += 1;
      tally.add(oldest.reason, tooOld ? 'maxAgeMs' : 'maxCount');
    }
    return tally.report();
  }
}

function read(entry: Entry): StoredDeadLetter | MalformedDeadLetter {
  const record = readStoredRecord(entry.id, entry.text);
  if (entry.claim && !isMalformedDeadLetter(record)) record.replay = { ...entry.claim };
  return record;
}

function refKey(job: JobRef): string {
  return `${job.jobId}\u0000${job.createdAt}`;
}

/** Where `entry` goes in the sorted entries: usually at the end, as records are filed in time order. */
function insertionIndex(entries: readonly Entry[], entry: Entry): number {
  let lo = 0;
  let hi = entries.length;
  const last = entries[hi - 1];
  if (!last || comparePositions(last, entry) < 0) return hi;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (comparePositions(entries[mid] as Entry, entry) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
