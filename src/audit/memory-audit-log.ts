import { type Clock, systemClock } from '../common/clock.js';
import type { AuditEntry, AuditLog, AuditPage, AuditPageRequest, AuditWrite } from './types.js';
import { checkMaxEntries, normalizeAuditWrite, parseAuditPage } from './validate.js';

/**
 * Options of {@link MemoryAuditLog}.
 *
 * @example
 * new MemoryAuditLog({ maxEntries: 1_000, clock: new FakeClock(0) });
 */
export interface MemoryAuditLogOptions {
  /** The newest entries kept. Default 10 000. */
  maxEntries?: number;
  /** Store time. Default: the system clock. */
  clock?: Clock;
}

/**
 * The audit log in one process's memory: for tests, the simulator and a console over memory stores.
 *
 * @example
 * const audit = new MemoryAuditLog();
 * await audit.append({ by: 'alice', action: 'breaker.force-open', target: 'search', reason: 'reindexing' });
 */
export class MemoryAuditLog implements AuditLog {
  readonly #entries: string[] = []; // JSON, oldest first: what a caller gets back is always a copy
  readonly #maxEntries: number;
  readonly #clock: Clock;
  #seq = 0;

  constructor(options: MemoryAuditLogOptions = {}) {
    this.#maxEntries = checkMaxEntries(options.maxEntries);
    this.#clock = options.clock ?? systemClock;
  }

  async append(write: AuditWrite): Promise<AuditEntry> {
    const entry: AuditEntry = {
      id: String(++this.#seq),
      atMs: this.#clock.now(),
      ...normalizeAuditWrite(write),
    };
    this.#entries.push(JSON.stringify(entry));
    if (this.#entries.length > this.#maxEntries)
      this.#entries.splice(0, this.#entries.length - this.#maxEntries);
    return entry;
  }

  async list(page: AuditPageRequest): Promise<AuditPage> {
    const { limit, before } = parseAuditPage(page);
    // Ids are contiguous: the entry with id n sits at index n - firstId.
    const firstId = this.#seq - this.#entries.length + 1;
    const end = Math.min(this.#entries.length, (before ?? this.#seq + 1) - firstId);
    const start = Math.max(0, end - limit);
    const entries = this.#entries
      .slice(start, Math.max(start, end))
      .reverse()
      .map((json) => JSON.parse(json) as AuditEntry);
    const result: AuditPage = { entries };
    if (start > 0 && entries.length > 0) result.next = entries[entries.length - 1]!.id;
    return result;
  }
}
