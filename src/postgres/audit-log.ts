import type { AuditEntry, AuditLog, AuditPage, AuditPageRequest, AuditWrite } from '../audit/types.js';
import { checkMaxEntries, normalizeAuditWrite, parseAuditPage } from '../audit/validate.js';
import type { Clock } from '../common/clock.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';

/**
 * Options of {@link PostgresAuditLog}.
 *
 * @example
 * new PostgresAuditLog({ connection: pool, schema: 'shop', maxEntries: 50_000 });
 */
export interface PostgresAuditLogOptions extends PostgresStoreOptions {
  /** The newest entries kept per prefix. Default 10 000. */
  maxEntries?: number;
  /** TEST ONLY: take time from this clock instead of the server's `clock_timestamp()`. Default unset. */
  timeOverride?: Clock;
}

const OPTION_NAMES = {
  maxEntries: true,
  timeOverride: true,
  connection: true,
  schema: true,
  prefix: true,
  migrate: true,
} as const satisfies OptionNames<PostgresAuditLogOptions>;

/**
 * The audit log on PostgreSQL: table `audit_log` (`sql/006-audit-log.sql`), bounded per prefix. Appending
 * is one statement (the id, the row and the trim past `maxEntries`), with the server's time; a page is one
 * indexed query.
 *
 * @example
 * import { PostgresAuditLog } from 'stormguard/postgres';
 *
 * const audit = new PostgresAuditLog({ connection: process.env.DATABASE_URL! });
 * await audit.append({ by: 'alice', action: 'breaker.reset', target: 'search', reason: 'recovered' });
 */
export class PostgresAuditLog implements AuditLog {
  readonly #db: PostgresDatabase;
  readonly #maxEntries: number;
  readonly #timeOverride: Clock | undefined;

  constructor(options: PostgresAuditLogOptions) {
    checkOptionNames('PostgresAuditLog', options, OPTION_NAMES);
    this.#db = new PostgresDatabase(options, 'PostgreSQL audit log');
    this.#maxEntries = checkMaxEntries(options.maxEntries);
    this.#timeOverride = options.timeOverride;
  }

  async append(write: AuditWrite): Promise<AuditEntry> {
    const entry = normalizeAuditWrite(write);
    const q = this.#db.q;
    const [row] = await this.#db.query<{ id: string; at_ms: string }>(
      `WITH s AS (
         INSERT INTO ${q}.audit_seq AS t (prefix, seq) VALUES ($1, 1)
         ON CONFLICT (prefix) DO UPDATE SET seq = t.seq + 1 RETURNING seq
       ), ins AS (
         INSERT INTO ${q}.audit_log (prefix, id, at_ms, entry)
         SELECT $1, s.seq, ${q}.now_ms($2), $3::jsonb FROM s RETURNING id, at_ms
       ), trimmed AS (
         DELETE FROM ${q}.audit_log a USING s WHERE a.prefix = $1 AND a.id <= s.seq - $4
       )
       SELECT id, at_ms FROM ins`,
      [this.#db.prefix, this.#timeOverride?.now() ?? null, JSON.stringify(entry), this.#maxEntries],
    );
    return { id: String(row!.id), atMs: Number(row!.at_ms), ...entry };
  }

  async list(page: AuditPageRequest): Promise<AuditPage> {
    const { limit, before } = parseAuditPage(page);
    const rows = await this.#db.query<{ id: string; at_ms: string; entry: Omit<AuditEntry, 'id' | 'atMs'> }>(
      `SELECT id, at_ms, entry FROM ${this.#db.q}.audit_log
        WHERE prefix = $1 AND ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [this.#db.prefix, before ?? null, limit + 1],
    );
    const entries = rows
      .slice(0, limit)
      .map((row) => ({ id: String(row.id), atMs: Number(row.at_ms), ...row.entry }) as AuditEntry);
    const result: AuditPage = { entries };
    if (rows.length > limit) result.next = entries[entries.length - 1]!.id;
    return result;
  }

  /** Ends the pool when the log opened it from a connection string; leaves your pool alone. */
  close(): Promise<void> {
    return this.#db.close();
  }
}
