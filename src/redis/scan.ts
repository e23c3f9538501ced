import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './scripts.js';

/**
 * Options of {@link scanKeys}.
 *
 * @example
 * const options: ScanOptions = { signal: AbortSignal.timeout(5_000) };
 */
export interface ScanOptions {
  /** Stops the scan between two steps when aborted (it then rejects with `signal.reason`). Default none. */
  signal?: AbortSignal;
}

/**
 * Keys SCAN examines per step. MATCH filters after the walk, so a step costs the server about this many key
 * visits whatever matches: large enough that a keyspace of a million keys takes a thousand round trips,
 * small enough that no step holds Redis up for long (well under a millisecond).
 */
export const SCAN_COUNT = 1_000;

/**
 * Every key matching `pattern` (a Redis glob over keys as stormguard names them, without the client's
 * ioredis `keyPrefix`), on every master of a cluster, deduplicated, with the `keyPrefix` stripped again.
 * SCAN walks the whole keyspace, so on a Redis holding many BullMQ jobs it takes many round trips: keep it
 * off hot paths, and pass a `signal` to stop a scan nobody waits for any more.
 *
 * @example
 * const keys = await scanKeys(redis, '{stormguard:d:*}:budget'); // ['{stormguard:d:search}:budget', ...]
 */
export async function scanKeys(
  redis: RedisClient,
  pattern: string,
  options: ScanOptions = {},
): Promise<string[]> {
  const { signal } = options;
  const nodes: Redis[] = isCluster(redis) ? redis.nodes('master') : [redis];
  // ioredis adds its keyPrefix to the keys of commands, but SCAN patterns and replies are raw. A Cluster
  // keeps it in its own options (its node connections never prefix anything).
  const clientPrefix = (redis.options.keyPrefix as string | undefined) ?? '';
  const match = escapeGlob(clientPrefix) + pattern;
  const keys = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      signal?.throwIfAborted();
      const [next, found] = await node.scan(cursor, 'MATCH', match, 'COUNT', SCAN_COUNT);
      cursor = next;
      for (const key of found) keys.add(key.slice(clientPrefix.length));
    } while (cursor !== '0');
  }
  return [...keys];
}

/**
 * `text` as a literal inside a Redis glob pattern (an ioredis `keyPrefix` or a prefix may hold `*`, `?`,
 * `[` or `\`).
 *
 * @example
 * escapeGlob('app[1]*'); // 'app\\[1\\]\\*'
 */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
