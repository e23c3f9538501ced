import type { AuditLog } from '../audit/types.js';
import type { Clock } from '../common/clock.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { UnstorableValueError } from '../errors/unstorable-value-error.js';
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
  ReplayClaim,
  RetentionLimits,
  StoredDeadLetter,
} from '../runtime/contracts.js';
import { decodeCursor, encodeCursor } from '../runtime/dead-letter-cursor.js';
import {
  assertDeadLetterRecord,
  isMalformedDeadLetter,
  parseDeadLetterFilter,
  readStoredRecord,
} from '../runtime/dead-letter-record.js';
import {
  assertRetention,
  auditEvictions,
  finalStateOf,
  MAX_EVICTIONS_PER_FILING,
} from '../runtime/dead-letter-store-rules.js';
import { type DeadLetterRedaction, redactRecord } from '../runtime/redaction.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';

/**
 * Options of {@link PostgresDeadLetterStore}.
 *
 * @example
 * new PostgresDeadLetterStore({ connection: process.env.DATABASE_URL!, schema: 'shop' });
 */
export interface PostgresDeadLetterStoreOptions extends PostgresStoreOptions {
  /**
   * Applied to every record before it is stored (see {@link DeadLetterRedaction}): set it once here, and
   * nothing downstream (the CLI, the console, replays, the audit log) ever sees the raw values. Default
   * none.
   */
  redact?: DeadLetterRedaction;
  /**
   * TEST ONLY: use this clock's time instead of the server's `clock_timestamp()`. In production leave it
   * unset: the database server is the fleet's one clock. Default unset.
   */
  timeOverride?: Clock;
  /**
   * Where each filing that evicts records writes one entry (`dead-letters.evict`: how many, by reason and
   * by limit), e.g. a `PostgresAuditLog` on the same database. Default none.
   */
  audit?: AuditLog;
}

/** The record id's stand-in in the attempt state's JSON (split there, the database writes the id between). */
const ID_MARK = '"recordId":"\\u0000"';

interface RecordRow {
  id: string;
  dead_lettered_at: number;
  record: string;
  claim_job_id: string | null;
  claimed_at_ms: string | null;
}

const OPTION_NAMES = {
  redact: true,
  timeOverride: true,
  audit: true,
  connection: true,
  schema: true,
  prefix: true,
  migrate: true,
} as const satisfies OptionNames<PostgresDeadLetterStoreOptions>;

/**
 * The dead-letter store in PostgreSQL (`sql/004-dead-letters.sql`), for fleets on BullMQ 6's PostgreSQL
 * backend that run no Redis. Same contract as the memory and Redis stores (the same conformance suite):
 * filing is one function call that writes the record and the job's attempt state in one transaction and
 * applies retention; every other operation is one statement. Listings use the index of the filter's
 * field (reason, dependency or name, then time), so their cost follows the page, not the queue. Counts
 * without a time range sum the queue's tallies per (reason, dependency, name), which triggers keep as
 * records come and go (`sql/013-dead-letter-tallies.sql`); with one, they walk the filter's index over it.
 * Time is the server's `clock_timestamp()`.
 *
 * Defaults: schema `stormguard`, prefix `stormguard`, migrations on first use.
 *
 * @example
 * import pg from 'pg';
 * import { PostgresDeadLetterStore } from 'stormguard/postgres';
 *
 * const store = new PostgresDeadLetterStore({ connection: new pg.Pool() });
 * await store.registerQueue('index', { maxAgeMs: 30 * 86_400_000 });
 */
export class PostgresDeadLetterStore implements DeadLetterStore {
  readonly #db: PostgresDatabase;
  readonly #timeOverride: Clock | undefined;
  readonly #redact: DeadLetterRedaction | undefined;
  /** The store's redaction hook: the worker redacts the errors it hands its queue with it too. */
  get redaction(): DeadLetterRedaction | undefined {
    return this.#redact;
  }
  readonly #audit: AuditLog | undefined;

  constructor(options: PostgresDeadLetterStoreOptions) {
    checkOptionNames('PostgresDeadLetterStore', options, OPTION_NAMES);
    this.#db = new PostgresDatabase(options, 'PostgreSQL dead-letter store');
    this.#timeOverride = options.timeOverride;
    this.#redact = options.redact;
    this.#audit = options.audit;
  }

  get #q(): string {
    return this.#db.q;
  }

  #now(): number | null {
    return this.#timeOverride?.now() ?? null;
  }

  async registerQueue(queue: string, retention?: RetentionLimits): Promise<void> {
    if (retention !== undefined) assertRetention(retention);
    await this.#db.query(`SELECT ${this.#q}.dead_letter_register($1, $2, $3, $4, $5, $6)`, [
      this.#db.prefix,
      queue,
      retention !== undefined,
      retention?.maxAgeMs ?? null,
      retention?.maxCount ?? null,
      this.#now(),
    ]);
  }

  async queues(): Promise<DeadLetterQueueSummary[]> {
    const rows = await this.#db.query<QueueRow>(
      `SELECT * FROM ${this.#q}.dead_letter_queues WHERE prefix = $1`,
      [this.#db.prefix],
    );
    return rows.map(summaryOf).sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
  }

  async queue(queue: string): Promise<DeadLetterQueueSummary | undefined> {
    const [row] = await this.#db.query<QueueRow>(
      `SELECT * FROM ${this.#q}.dead_letter_queues WHERE prefix = $1 AND queue = $2`,
      [this.#db.prefix, queue],
    );
    return row ? summaryOf(row) : undefined;
  }

  file(record: DeadLetterRecord, finalState: AttemptState, ttlMs: number): Promise<DeadLetterFiling> {
    return this.#file(record, finalState, ttlMs).catch((error: unknown) => {
      throw unstorableOr(error);
    });
  }

  async #file(record: DeadLetterRecord, finalState: AttemptState, ttlMs: number): Promise<DeadLetterFiling> {
    record = redactRecord(record, this.#redact);
    assertDeadLetterRecord(record);
    const json = JSON.stringify(finalStateOf(record, finalState, '\u0000'));
    const at = json.indexOf(ID_MARK);
    const [row] = await this.#db.query<{
      result: { created: boolean; id: string; evicted?: DeadLetterEvictions };
    }>(
      `SELECT ${this.#q}.dead_letter_file($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) AS result`,
      [
        this.#db.prefix,
        record.queue,
        record.jobId,
        record.createdAt,
        record.reason,
        record.dependency,
        record.name,
        record.deadLetteredAt,
        JSON.stringify(record),
        `${json.slice(0, at)}"recordId":"`,
        `"${json.slice(at + ID_MARK.length)}`,
        Math.max(1, Math.ceil(ttlMs)),
        MAX_EVICTIONS_PER_FILING,
        this.#now(),
      ],
    );
    const filing: DeadLetterFiling = { id: String(row?.result.id), created: row?.result.created === true };
    const evicted = row?.result.evicted;
    if (!evicted) return filing;
    return this.#audit
      ? auditEvictions(this.#audit, record.queue, { ...filing, evicted })
      : { ...filing, evicted };
  }

  async get(queue: string, id: string): Promise<StoredDeadLetter | MalformedDeadLetter | undefined> {
    if (!/^\d{1,18}$/.test(id)) return undefined;
    const [row] = await this.#db.query<RecordRow>(
      `SELECT id, dead_lettered_at, record, claim_job_id, claimed_at_ms FROM ${this.#q}.dead_letters
       WHERE prefix = $1 AND queue = $2 AND id = $3`,
      [this.#db.prefix, queue, id],
    );
    return row ? entryOf(row) : undefined;
  }

  async list(queue: string, page: DeadLetterPageRequest): Promise<DeadLetterPage> {
    const { limit, cursor, newestFirst = false, ...rest } = page;
    const filter = parseDeadLetterFilter(rest);
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const { where, values } = this.#where(queue, filter);
    if (after) {
      values.push(after.at, after.seq);
      where.push(
        `(dead_lettered_at, id) ${newestFirst ? '<' : '>'} ($${values.length - 1}, $${values.length})`,
      );
    }
    const take = Math.max(0, limit);
    values.push(take + 1);
    const direction = newestFirst ? 'DESC' : 'ASC';
    const rows = await this.#db.query<RecordRow>(
      `SELECT id, dead_lettered_at, record, claim_job_id, claimed_at_ms FROM ${this.#q}.dead_letters
       WHERE ${where.join(' AND ')} ORDER BY dead_lettered_at ${direction}, id ${direction} LIMIT $${values.length}`,
      values,
    );
    const out: DeadLetterPage = { records: [], malformed: [] };
    for (const row of rows.slice(0, take)) {
      const entry = entryOf(row);
      if (isMalformedDeadLetter(entry)) out.malformed.push(entry);
      else out.records.push(entry);
    }
    const last = rows[take - 1];
    if (rows.length > take && last)
      out.next = encodeCursor({ at: last.dead_lettered_at, seq: Number(last.id) });
    return out;
  }

  async count(queue: string, filter: DeadLetterFilter = {}): Promise<number> {
    const parsed = parseDeadLetterFilter(filter);
    const { where, values } = this.#where(queue, parsed);
    // Without a time range, the tallies (013-dead-letter-tallies.sql) hold the answer in a few rows;
    // with one, the filter's index is walked over that range.
    const from =
      parsed.since === undefined && parsed.before === undefined
        ? `coalesce(sum(records), 0) AS n FROM ${this.#q}.dead_letter_tallies`
        : `count(*) AS n FROM ${this.#q}.dead_letters`;
    const [row] = await this.#db.query<{ n: string }>(`SELECT ${from} WHERE ${where.join(' AND ')}`, values);
    return Number(row?.n ?? 0);
  }

  async claimReplay(queue: string, id: string, jobId: string): Promise<ReplayClaim | undefined> {
    if (!/^\d{1,18}$/.test(id)) return undefined;
    const [row] = await this.#db.query<{ result: ReplayClaim | null }>(
      `SELECT ${this.#q}.dead_letter_claim($1, $2, $3, $4, $5) AS result`,
      [this.#db.prefix, queue, id, jobId, this.#now()],
    );
    const claim = row?.result;
    return claim ? { jobId: claim.jobId, claimedAt: Number(claim.claimedAt) } : undefined;
  }

  completeReplay(queue: string, id: string): Promise<boolean> {
    return this.remove(queue, id);
  }

  async remove(queue: string, id: string): Promise<boolean> {
    if (!/^\d{1,18}$/.test(id)) return false;
    const [row] = await this.#db.query<{ removed: boolean }>(
      `SELECT ${this.#q}.dead_letter_remove($1, $2, $3) AS removed`,
      [this.#db.prefix, queue, id],
    );
    return row?.removed === true;
  }

  readAttempts(job: JobRef): Promise<AttemptState | undefined> {
    return this.#readAttempts(job).catch((error: unknown) => {
      throw unstorableOr(error);
    });
  }

  async #readAttempts(job: JobRef): Promise<AttemptState | undefined> {
    const [row] = await this.#db.query<{ state: string }>(
      `SELECT state FROM ${this.#q}.attempt_states
       WHERE prefix = $1 AND queue = $2 AND job_id = $3 AND created_at = $4 AND expires_at_ms > ${this.#q}.now_ms($5)`,
      [this.#db.prefix, job.queue, job.jobId, job.createdAt, this.#now()],
    );
    if (!row) return undefined;
    try {
      return JSON.parse(row.state) as AttemptState;
    } catch {
      return undefined;
    }
  }

  writeAttempts(job: JobRef, state: AttemptState, ttlMs: number): Promise<void> {
    return this.#writeAttempts(job, state, ttlMs).catch((error: unknown) => {
      throw unstorableOr(error);
    });
  }

  async #writeAttempts(job: JobRef, state: AttemptState, ttlMs: number): Promise<void> {
    await this.#db.query(`SELECT ${this.#q}.attempts_write($1, $2, $3, $4, $5, $6, $7)`, [
      this.#db.prefix,
      job.queue,
      job.jobId,
      job.createdAt,
      JSON.stringify(state),
      Math.max(1, Math.ceil(ttlMs)),
      this.#now(),
    ]);
  }

  async clearAttempts(job: JobRef): Promise<void> {
    await this.#db.query(
      `DELETE FROM ${this.#q}.attempt_states WHERE prefix = $1 AND queue = $2 AND job_id = $3 AND created_at = $4`,
      [this.#db.prefix, job.queue, job.jobId, job.createdAt],
    );
  }

  /** Ends the pool when the store opened it from a connection string; leaves your pool alone. */
  close(): Promise<void> {
    return this.#db.close();
  }

  /** The WHERE clause of a filter: only the fields it sets, so the planner picks that field's index. */
  #where(queue: string, filter: DeadLetterFilter): { where: string[]; values: unknown[] } {
    const values: unknown[] = [this.#db.prefix, queue];
    const where = ['prefix = $1', 'queue = $2'];
    const add = (sql: string, value: unknown) => {
      values.push(value);
      where.push(`${sql} $${values.length}`);
    };
    if (filter.reason !== undefined) add('reason =', filter.reason);
    if (filter.dependency !== undefined) add('dependency =', filter.dependency);
    if (filter.name !== undefined) add('name =', filter.name);
    if (filter.since !== undefined) add('dead_lettered_at >=', filter.since);
    if (filter.before !== undefined) add('dead_lettered_at <', filter.before);
    return { where, values };
  }
}

interface QueueRow {
  queue: string;
  registered_at_ms: string;
  max_age_ms: string | null;
  max_count: string | null;
  records: string;
  evicted: string;
}

function summaryOf(row: QueueRow): DeadLetterQueueSummary {
  const retention: RetentionLimits = {};
  if (row.max_age_ms !== null) retention.maxAgeMs = Number(row.max_age_ms);
  if (row.max_count !== null) retention.maxCount = Number(row.max_count);
  return {
    queue: row.queue,
    count: Number(row.records),
    evicted: Number(row.evicted),
    registeredAt: Number(row.registered_at_ms),
    retention,
  };
}

function entryOf(row: RecordRow): StoredDeadLetter | MalformedDeadLetter {
  const entry = readStoredRecord(String(row.id), row.record);
  if (row.claim_job_id !== null && !isMalformedDeadLetter(entry))
    entry.replay = { jobId: row.claim_job_id, claimedAt: Number(row.claimed_at_ms) };
  return entry;
}

/**
 * A PostgreSQL refusal no retry fixes, as the typed error the job runtime files a safe form for: a data
 * exception (SQLSTATE class 22: U+0000 in `text`, `\u0000` in `jsonb`, a value out of range) or a program
 * limit (54000: an index row or a value too large). Anything else (a connection lost, a timeout, a
 * deadlock) is returned as it is: transient.
 */
function unstorableOr(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !(code.startsWith('22') || code === '54000')) return error;
  return new UnstorableValueError(
    `PostgreSQL refused a value of the record (SQLSTATE ${code}: ${(error as Error).message})`,
    'the PostgreSQL dead-letter store',
    { cause: error },
  );
}
