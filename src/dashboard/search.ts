import type { DeadLetterFilter, DeadLetterStore, StoredDeadLetter } from '../runtime/contracts.js';

/** One chunk of a text search: what matched among the records scanned, and where to go on. */
export interface SearchChunk {
  matches: StoredDeadLetter[];
  /** Records looked at in this chunk. */
  scanned: number;
  /** Records the filter selects in all (what "searched N of M" counts against). */
  total: number;
  /** Where the next chunk starts; absent once every record was searched. */
  next?: string;
}

/** Records read per store page while searching. */
const PAGE = 500;

/**
 * Searches the records a filter selects for `text` in their id, job id, name and error message
 * (case-insensitive), newest first. Redis has no text index, so this is a bounded scan: at most `budget`
 * records per call, and a cursor to go on. Stops after the page where `limit` records have matched.
 *
 * @example
 * const chunk = await searchDeadLetters(store, 'index', 'ETIMEDOUT', {}, { budget: 10_000, limit: 50 });
 * console.log(`searched ${chunk.scanned} of ${chunk.total}`);
 */
export async function searchDeadLetters(
  store: DeadLetterStore,
  queue: string,
  text: string,
  filter: DeadLetterFilter,
  options: { budget: number; limit: number; cursor?: string },
): Promise<SearchChunk> {
  const needle = text.toLowerCase();
  const chunk: SearchChunk = { matches: [], scanned: 0, total: await store.count(queue, filter) };
  let cursor = options.cursor;
  for (;;) {
    const page = await store.list(queue, {
      ...filter,
      newestFirst: true,
      limit: Math.min(PAGE, options.budget - chunk.scanned),
      ...(cursor ? { cursor } : {}),
    });
    chunk.scanned += page.records.length + page.malformed.length;
    // Every match of a page is kept (a cursor cannot point inside one), so a chunk may pass `limit`.
    for (const record of page.records) if (matches(record, needle)) chunk.matches.push(record);
    cursor = page.next;
    if (!cursor) break;
    if (chunk.scanned >= options.budget || chunk.matches.length >= options.limit) {
      chunk.next = cursor;
      break;
    }
  }
  return chunk;
}

function matches(record: StoredDeadLetter, needle: string): boolean {
  return [record.id, record.jobId, record.name, record.lastError.message].some((field) =>
    field.toLowerCase().includes(needle),
  );
}
