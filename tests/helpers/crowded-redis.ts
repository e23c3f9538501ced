import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { TestRedis } from './redis-server.js';

/**
 * A redis-server for one test file, holding `otherKeys` keys that are not stormguard's (BullMQ jobs, say)
 * so a SCAN has a keyspace to walk, and a count of the SCAN commands it has run.
 */
export interface CrowdedRedis {
  readonly redis: Redis;
  /** SCAN commands the server has run so far. */
  scans(): Promise<number>;
}

/** Starts the server before the file's tests, fills it, and stops it after them. */
export function crowdedRedis(otherKeys: number): CrowdedRedis {
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.connection);
    await redis.eval(
      "for i = 1, tonumber(ARGV[1]) do redis.call('SET', 'bull:orders:' .. i, 'x') end",
      0,
      otherKeys,
    );
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.close();
  });
  const started = () => {
    if (!redis) throw new Error('redis-server is not started yet (use it inside a test)');
    return redis;
  };
  return {
    get redis() {
      return started();
    },
    async scans() {
      const stats = await started().info('commandstats');
      return Number(/cmdstat_scan:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    },
  };
}
