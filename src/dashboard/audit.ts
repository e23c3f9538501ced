/**
 * One entry of the console's audit log: who did what to what, when, why, and how it ended.
 *
 * @example
 * const entry: AuditEntry = { atMs: Date.now(), actor: 'anonymous', action: 'breaker.force-open', target: 'search', reason: 'incident 42' };
 */
export interface AuditEntry {
  atMs: number;
  actor: string;
  action: string;
  target: string;
  reason?: string;
  detail?: string;
}

/**
 * Where the console records its actions, and reads them back newest first.
 *
 * @example
 * await log.append({ atMs: Date.now(), actor: 'ops@example.com', action: 'dead-letter.delete', target: 'index/17' });
 */
export interface ConsoleAuditLog {
  append(entry: AuditEntry): Promise<void>;
  list(limit: number): Promise<AuditEntry[]>;
}
