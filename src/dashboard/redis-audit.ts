import { globalKey } from '../common/keys.js';
import type { RedisClient } from '../redis/scripts.js';
import type { AuditEntry, ConsoleAuditLog } from './audit.js';

/** How many entries the log keeps; older ones are dropped as new ones come. */
export const AUDIT_LIMIT = 10_000;

/**
 * The audit log in Redis: one capped list, `{<prefix>:g}:console-audit`, newest first, bounded to
 * {@link AUDIT_LIMIT} entries (one LPUSH and LTRIM in a MULTI).
 *
 * @example
 * const log = redisAuditLog(redis, 'stormguard');
 */
export function redisAuditLog(redis: RedisClient, prefix: string): ConsoleAuditLog {
  const key = globalKey(prefix, 'console-audit');
  return {
    async append(entry) {
      await redis
        .multi()
        .lpush(key, JSON.stringify(entry))
        .ltrim(key, 0, AUDIT_LIMIT - 1)
        .exec();
    },
    async list(limit) {
      const texts = await redis.lrange(key, 0, Math.max(0, limit - 1));
      const entries: AuditEntry[] = [];
      for (const text of texts) {
        try {
          entries.push(JSON.parse(text) as AuditEntry);
        } catch {
          entries.push({
            atMs: 0,
            actor: '?',
            action: 'unreadable entry',
            target: '',
            detail: text.slice(0, 200),
          });
        }
      }
      return entries;
    },
  };
}

/**
 * An audit log in this process only (lost on restart), for backends without a shared one.
 *
 * @example
 * const log = memoryAuditLog();
 */
export function memoryAuditLog(): ConsoleAuditLog {
  const entries: AuditEntry[] = [];
  return {
    async append(entry) {
      entries.unshift(entry);
      entries.length = Math.min(entries.length, AUDIT_LIMIT);
    },
    async list(limit) {
      return entries.slice(0, limit);
    },
  };
}
