/**
 * One entry of the audit log: who did what to what, when and why. Plain JSON.
 *
 * @example
 * // { id: '17', atMs: 1764682200000, by: 'alice', action: 'breaker.force-open', target: 'search',
 * //   reason: 'search cluster reindexing' }
 */
export interface AuditEntry {
  /** Assigned by the store: increasing, never reused. */
  id: string;
  /** Store time (epoch ms): the Redis or PostgreSQL server's clock. */
  atMs: number;
  /** The identity of the request, or `anonymous` when there is none. */
  by: string;
  /** What was done, `<area>.<verb>`: `breaker.force-open`, `breaker.force-closed`, `breaker.reset`, `replay.start`, … */
  action: string;
  /** What it was done to: a dependency for a breaker, a queue (or `queue/record-id`) for dead letters. */
  target: string;
  /** Why, in the operator's words, when they gave one. */
  reason?: string;
  /** Plain-JSON details of the action (counts, filters, the state it changed from). */
  detail?: Record<string, unknown>;
}

/**
 * What a caller writes; the store adds the id and the time.
 *
 * @example
 * await audit.append({ by: 'alice', action: 'breaker.force-open', target: 'search', reason: 'reindexing' });
 */
export interface AuditWrite {
  /** Default `anonymous`. */
  by?: string;
  action: string;
  target: string;
  reason?: string;
  detail?: Record<string, unknown>;
}

/**
 * A page request: newest first, `limit` entries (1-1 000) from the cursor of the previous page.
 *
 * @example
 * const first = await audit.list({ limit: 50 });
 * const older = first.next ? await audit.list({ limit: 50, cursor: first.next }) : undefined;
 */
export interface AuditPageRequest {
  limit: number;
  /** Opaque, from the previous page's `next`. */
  cursor?: string;
}

/** One page of the audit log, newest first. */
export interface AuditPage {
  entries: AuditEntry[];
  /** Where the next (older) page starts; absent on the last page. */
  next?: string;
}

/**
 * Where the audit log lives: bounded (the oldest entries go past `maxEntries`, default 10 000), next to the
 * other stores (memory, Redis, PostgreSQL), with time from the store's server. Every implementation passes
 * `src/audit/audit-log.case.ts`.
 *
 * @example
 * const audit: AuditLog = new MemoryAuditLog();
 * await audit.append({ by: 'alice', action: 'breaker.reset', target: 'search', reason: 'recovered' });
 * const { entries } = await audit.list({ limit: 20 });
 */
export interface AuditLog {
  /** Appends one entry and returns it as stored. Rejects an entry that is not valid, naming the field. */
  append(entry: AuditWrite): Promise<AuditEntry>;
  /** A page of entries, newest first. */
  list(page: AuditPageRequest): Promise<AuditPage>;
}
