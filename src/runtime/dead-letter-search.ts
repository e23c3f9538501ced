import { InvalidInputError } from '../errors/invalid-input-error.js';
import type { DeadLetterFilter, DeadLetterStore, StoredDeadLetter } from './contracts.js';

/**
 * A text search over one queue's dead letters: a bounded scan, resumable with a cursor.
 *
 * @example
 * const search: DeadLetterSearch = { text: 'ETIMEDOUT', dependency: 'search', limit: 50, scanLimit: 10_000 };
 */
export interface DeadLetterSearch extends DeadLetterFilter {
  /** Matched, case-insensitively, as a substring of the record id, the job id, the job name and the last error's class and message. */
  text: string;
  /** Matches returned at most. Default 50 (1-1 000). */
  limit?: number;
  /** Records scanned at most by this call. Default 10 000 (1-100 000). */
  scanLimit?: number;
  /** Opaque: the previous result's `next`. */
  cursor?: string;
  newestFirst?: boolean;
}

/**
 * One step of a search: the matches found, how far the scan got ("searched `scanned` of `total`") and
 * where to go on.
 *
 * @example
 * const r = await searchDeadLetters(store, 'index', { text: 'timeout' });
 * console.log(`${r.records.length} found, searched ${r.scanned} of ${r.total}${r.next ? ', more…' : ''}`);
 */
export interface DeadLetterSearchResult {
  records: StoredDeadLetter[];
  /** Records scanned so far, over every call of this search (the cursor carries the count). */
  scanned: number;
  /** Records the filter covers (the scan's whole extent; malformed ones too when there is no filter). */
  total: number;
  /** Where the next call goes on; absent when the scan reached the end. */
  next?: string;
}

const PAGE = 500;

/**
 * Text search over a queue's dead letters, in every store: the stores index reason, dependency, name and
 * time but hold no text index (Redis has none), so the search walks the filter's index in time order, a
 * page at a time, and stops after `scanLimit` records or `limit` matches, whichever comes first. Its work
 * is bounded per call whatever the queue's size; `next` goes on from where it stopped. Filters narrow the
 * walk through their index first. Malformed records are scanned and never match.
 *
 * @example
 * import { searchDeadLetters } from 'stormguard';
 *
 * let result = await searchDeadLetters(store, 'index', { text: 'ECONNRESET', reason: 'max-attempts' });
 * while (result.next && result.records.length === 0)
 *   result = await searchDeadLetters(store, 'index', { text: 'ECONNRESET', reason: 'max-attempts', cursor: result.next });
 */
export async function searchDeadLetters(
  store: Pick<DeadLetterStore, 'list' | 'count'>,
  queue: string,
  search: DeadLetterSearch,
): Promise<DeadLetterSearchResult> {
  const { text, limit = 50, scanLimit = 10_000, cursor, newestFirst, ...filter } = search;
  const needle = typeof text === 'string' ? text.trim().toLowerCase() : '';
  if (needle === '' || needle.length > 200)
    throw new InvalidInputError('text: search for 1-200 characters of an id, a job name or an error message');
  wholeIn('limit', limit, 1, 1_000);
  wholeIn('scanLimit', scanLimit, 1, 100_000);
  const start = readCursor(cursor);
  let position = start.position;
  let scanned = start.scanned;
  let scannedHere = 0;
  const records: StoredDeadLetter[] = [];
  let more = true;
  while (more && scannedHere < scanLimit && records.length < limit) {
    const page = await store.list(queue, {
      ...filter,
      limit: Math.min(PAGE, scanLimit - scannedHere),
      ...(position === undefined ? {} : { cursor: position }),
      ...(newestFirst ? { newestFirst } : {}),
    });
    // Matches are taken in order until `limit`; the scan position is the last record looked at.
    const pageSize = page.records.length + page.malformed.length;
    for (const record of page.records) {
      if (records.length >= limit) break;
      if (matches(record, needle)) records.push(record);
    }
    const taken =
      records.length >= limit ? cutAfter(page.records, records[records.length - 1]!, pageSize) : pageSize;
    if (taken < pageSize) {
      // Stopped inside the page: go on right after the last match next time.
      scanned += taken;
      scannedHere += taken;
      position = positionAfter(records[records.length - 1]!);
      more = true;
      break;
    }
    scanned += pageSize;
    scannedHere += pageSize;
    more = page.next !== undefined;
    if (page.next !== undefined) position = page.next;
  }
  const result: DeadLetterSearchResult = {
    records,
    scanned,
    total: await store.count(queue, filter),
  };
  if (more && position !== undefined) result.next = `${scanned}~${position}`;
  return result;
}

/** How many entries of the page were looked at when the last match was taken (malformed ones in between included). */
function cutAfter(records: StoredDeadLetter[], last: StoredDeadLetter, pageSize: number): number {
  const index = records.indexOf(last);
  // Malformed entries interleave by position; counting only well-formed ones up to the match is close
  // enough for a progress figure, and the cursor below is exact.
  return Math.min(pageSize, index + 1);
}

/** The listing cursor right after `record` (every store orders by deadLetteredAt, then numeric id). */
function positionAfter(record: StoredDeadLetter): string {
  return `${record.deadLetteredAt}_${record.id}`;
}

function matches(record: StoredDeadLetter, needle: string): boolean {
  return [record.id, record.jobId, record.name, record.lastError.name, record.lastError.message].some(
    (field) => String(field).toLowerCase().includes(needle),
  );
}

function readCursor(cursor: string | undefined): { scanned: number; position?: string } {
  if (cursor === undefined) return { scanned: 0 };
  const match = /^(\d+)~(.+)$/.exec(cursor);
  if (!match)
    throw new InvalidInputError(
      `cursor: "${cursor}" is not a search cursor; pass the \`next\` of the previous result as it is`,
    );
  return { scanned: Number(match[1]), position: match[2]! };
}

function wholeIn(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new InvalidInputError(
      `${name}: ${JSON.stringify(value)} must be a whole number from ${min} to ${max}`,
    );
}
