import type { AuditEntry, AuditLog, AuditPage, AuditPageRequest, AuditWrite } from '../audit/types.js';
import { checkMaxEntries, normalizeAuditWrite, parseAuditPage } from '../audit/validate.js';
import type { Clock } from '../common/clock.js';
import { DEFAULT_PREFIX, globalKey } from '../common/keys.js';
import { assertPrefix } from '../common/names.js';
import { checkOptionNames, type OptionNames } from '../common/option-names.js';
import { type RedisConnection, redisClientOf } from './connection.js';
import { defineScript } from './scripts.js';

const SCRIPTS = {
  append: { command: 'stormguardAuditAppendV1', file: 'audit-append-2.lua', numberOfKeys: 2 },
  list: { command: 'stormguardAuditListV1', file: 'audit-list-2.lua', numberOfKeys: 2, readOnly: true },
} as const;

/**
 * Options of {@link RedisAuditLog}.
 *
 * @example
 * new RedisAuditLog({ redis, prefix: 'shop', maxEntries: 50_000 });
 */
export interface RedisAuditLogOptions {
  /**
   * Your ioredis client (a `Redis` or a `Cluster`), which the log never closes; or ioredis options
   * (`{ host, port }`) or a `redis://` URL, from which it opens a client of its own, closed by `close()`.
   */
  redis: RedisConnection;
  /** Key prefix, any 1-64 characters (encoded into keys). Default `stormguard`. */
  prefix?: string;
  /** The newest entries kept. Default 10 000. */
  maxEntries?: number;
  /** TEST ONLY: take time from this clock instead of the Redis server's `TIME`. Default unset. */
  clock?: Clock;
}

const OPTION_NAMES = {
  redis: true,
  prefix: true,
  maxEntries: true,
  clock: true,
} as const satisfies OptionNames<RedisAuditLogOptions>;

/**
 * The audit log on Redis (single node or Cluster): a capped list `{<prefix>:g}:audit`, newest first, with
 * its id counter `{<prefix>:g}:audit-seq` in the same slot. Appending is one script (LPUSH and LTRIM to
 * `maxEntries`), with time from the Redis server; a page is one read-only script.
 *
 * @example
 * import { Redis } from 'ioredis';
 * import { RedisAuditLog } from 'stormguard/redis';
 *
 * const audit = new RedisAuditLog({ redis: new Redis(process.env.REDIS_URL) });
 * await audit.append({ by: 'alice', action: 'breaker.force-open', target: 'search', reason: 'reindexing' });
 */
export class RedisAuditLog implements AuditLog {
  readonly #closeClient: () => Promise<void>;
  readonly #append: ReturnType<typeof defineScript>;
  readonly #list: ReturnType<typeof defineScript>;
  readonly #keys: [string, string];
  readonly #maxEntries: number;
  readonly #clock: Clock | undefined;

  constructor(options: RedisAuditLogOptions) {
    checkOptionNames('RedisAuditLog', options, OPTION_NAMES);
    const prefix = options.prefix ?? DEFAULT_PREFIX;
    assertPrefix(prefix);
    this.#maxEntries = checkMaxEntries(options.maxEntries);
    const { redis, close } = redisClientOf('RedisAuditLog', options.redis);
    this.#closeClient = close;
    this.#append = defineScript(redis, SCRIPTS.append);
    this.#list = defineScript(redis, SCRIPTS.list);
    this.#keys = [globalKey(prefix, 'audit'), globalKey(prefix, 'audit-seq')];
    this.#clock = options.clock;
  }

  /** Closes the client the log opened from options or a URL; a client you passed stays open. */
  async close(): Promise<void> {
    await this.#closeClient();
  }

  async append(write: AuditWrite): Promise<AuditEntry> {
    const entry = normalizeAuditWrite(write);
    const now = this.#clock ? String(this.#clock.now()) : '';
    const stored = await this.#append(this.#keys, [now, JSON.stringify(entry), this.#maxEntries]);
    return JSON.parse(String(stored)) as AuditEntry;
  }

  async list(page: AuditPageRequest): Promise<AuditPage> {
    const { limit, before } = parseAuditPage(page);
    const reply = (await this.#list(this.#keys, [limit, before === undefined ? '' : before])) as string[];
    const more = reply.pop() === '1';
    const entries = reply.map((json) => JSON.parse(json) as AuditEntry);
    const result: AuditPage = { entries };
    if (more && entries.length > 0) result.next = entries[entries.length - 1]!.id;
    return result;
  }
}
