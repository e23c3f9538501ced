import { z } from 'zod';
import { parseWith } from '../common/validation.js';
import { DEAD_LETTER_REASONS } from '../policy/types.js';
import type {
  DeadLetterFilter,
  DeadLetterRecord,
  MalformedDeadLetter,
  StoredDeadLetter,
} from './contracts.js';

const time = z.number().finite().nonnegative();
const count = z.number().int().nonnegative();

const classification = z.object({ retryable: z.boolean(), reason: z.string() }).loose();

const AttemptEntrySchema = z
  .object({
    attempt: count,
    at: time,
    dependency: z.string(),
    error: z.object({ name: z.string(), message: z.string() }).loose(),
    classification,
    decision: z.enum(['retry', 'defer', 'dead-letter', 'fail']),
    cause: z.string(),
    delayMs: time.optional(),
  })
  .loose();

const RecordSchema = z.object({
  queue: z.string().min(1),
  jobId: z.string().min(1),
  createdAt: time,
  name: z.string(),
  data: z.unknown(),
  opts: z.record(z.string(), z.unknown()),
  reason: z.enum(DEAD_LETTER_REASONS),
  detail: z.string(),
  lastError: z
    .object({
      name: z.string(),
      message: z.string(),
      stack: z.string().optional(),
      classification,
    })
    .loose(),
  attemptsMade: count,
  dependency: z.string(),
  idempotencyKey: z.string().optional(),
  firstFailedAt: time.optional(),
  deadLetteredAt: time,
  replays: count,
  replayedFrom: z.string().optional(),
  traceLinks: z.array(z.string()).optional(),
  history: z.array(AttemptEntrySchema).optional(),
});

/**
 * Checks a record before it is filed: a store keeps only what it can list and replay. Throws a
 * `ValidationError` naming each field that is wrong.
 *
 * @example
 * assertDeadLetterRecord(record); // throws on { ...record, deadLetteredAt: 'yesterday' }
 */
export function assertDeadLetterRecord(record: unknown): asserts record is DeadLetterRecord {
  parseWith(RecordSchema, record, 'dead-letter record');
}

/**
 * Reads a stored record (its JSON text as the store holds it): the record with its id, or what makes it
 * unreadable. Never throws: one bad record must not keep anyone from the good ones.
 *
 * @example
 * readStoredRecord('7', '{"jobId":'); // { id: '7', malformed: true, problem: 'not JSON: …' }
 */
export function readStoredRecord(
  id: string,
  text: string | undefined | null,
): StoredDeadLetter | MalformedDeadLetter {
  if (text === undefined || text === null) return malformed(id, 'the record is missing (index entry only)');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return malformed(id, `not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  return readRecordValue(id, value);
}

/** Like {@link readStoredRecord}, for a store that keeps records as parsed JSON (memory, PostgreSQL jsonb). */
export function readRecordValue(id: string, value: unknown): StoredDeadLetter | MalformedDeadLetter {
  const result = RecordSchema.loose().safeParse(value);
  if (!result.success) {
    const problem = result.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.map(String).join('.') || 'record'}: ${issue.message}`)
      .join('; ');
    return malformed(id, problem);
  }
  const stored = { ...(value as DeadLetterRecord), id } as StoredDeadLetter & { replay?: unknown };
  delete stored.replay;
  return stored;
}

/**
 * True for the safe form of a record a store refused for good: its job's data was not kept (a marker
 * `{ stormguard: 'withheld', why }` stands in for it), so putting it back would run the job on the marker
 * instead of its data. Replay, manual and automatic, leaves such a record where it is and says why.
 *
 * @example
 * const entry = await store.get('index', '7');
 * if (entry && !isMalformedDeadLetter(entry) && isWithheldDeadLetter(entry)) console.log('re-enqueue it by hand');
 */
export function isWithheldDeadLetter(record: Pick<DeadLetterRecord, 'data'>): boolean {
  const data = record.data as { stormguard?: unknown } | null | undefined;
  return typeof data === 'object' && data !== null && data.stormguard === 'withheld';
}

/**
 * True for a record that did not read.
 *
 * @example
 * const entry = await store.get('index', '7');
 * if (entry && isMalformedDeadLetter(entry)) console.log(entry.problem);
 */
export function isMalformedDeadLetter(entry: object): entry is MalformedDeadLetter {
  return (entry as Partial<MalformedDeadLetter>).malformed === true;
}

function malformed(id: string, problem: string): MalformedDeadLetter {
  return { id, malformed: true, problem };
}

const FilterSchema = z.object({
  reason: z.enum(DEAD_LETTER_REASONS).optional(),
  dependency: z.string().min(1).optional(),
  name: z.string().min(1).optional(),
  since: time.optional(),
  before: time.optional(),
});

/**
 * Validates a filter, naming the field and the rule when it is wrong; returns only the fields that are set.
 *
 * @example
 * parseDeadLetterFilter({ reason: 'permanent', since: Date.now() - 3_600_000 });
 */
export function parseDeadLetterFilter(input: DeadLetterFilter = {}): DeadLetterFilter {
  const parsed = parseWith(FilterSchema, input, 'dead-letter filter');
  const filter: DeadLetterFilter = {};
  for (const [key, value] of Object.entries(parsed))
    if (value !== undefined) (filter as Record<string, unknown>)[key] = value;
  return filter;
}

/** The fields a store indexes a record by, as filed (`at` is its `deadLetteredAt`). */
export interface IndexedFields {
  reason: string;
  dependency: string;
  name: string;
  at: number;
}

/**
 * Whether a record's indexed fields match a filter (every field set must match).
 *
 * @example
 * matchesFilter({ reason: 'permanent', dependency: 'mail', name: 'welcome', at: 5 }, { reason: 'permanent' }); // true
 */
export function matchesFilter(fields: IndexedFields, filter: DeadLetterFilter): boolean {
  return (
    (filter.reason === undefined || fields.reason === filter.reason) &&
    (filter.dependency === undefined || fields.dependency === filter.dependency) &&
    (filter.name === undefined || fields.name === filter.name) &&
    (filter.since === undefined || fields.at >= filter.since) &&
    (filter.before === undefined || fields.at < filter.before)
  );
}
