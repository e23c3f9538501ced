/**
 * A Redis Cluster without replicas: durable writes, on by default on a Cluster, have nothing to wait for.
 * The stores find that out at their first write and say so once, and no write waits for a replica (before,
 * every filing waited its full second and was refused with "reached 0 of 1 replica(s)").
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisIdempotencyStore } from '../../src/redis/idempotency-store.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { TestRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/redis-server.js';

let cluster: TestRedisCluster;
let redis: ReturnType<TestRedisCluster['client']>;

beforeAll(async () => {
  cluster = await TestRedisCluster.start({ replicas: 0 });
  redis = cluster.client();
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.close();
});

/** WAIT commands run so far, summed over every node. */
async function waits(): Promise<number> {
  let total = 0;
  for (const node of cluster.nodes) {
    const client = new Redis(node.connection);
    try {
      total += Number(/cmdstat_wait:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);
    } finally {
      client.disconnect();
    }
  }
  return total;
}

describe('durable writes by default on a Cluster without replicas', () => {
  it('file and finish without waiting for a replica, and say so once', async () => {
    expect((await cluster.topology()).filter((node) => node.role === 'replica')).toEqual([]);
    const warnings: string[] = [];
    const listen = (warning: Error) => {
      if (warning.name === 'StormguardWarning') warnings.push(warning.message);
    };
    process.on('warning', listen);
    try {
      const before = await waits();
      const store = new RedisDeadLetterStore({ redis, prefix: 'noreplica' });
      await store.registerQueue('mail');
      for (let i = 0; i < 5; i++) {
        const filed = await store.file(
          sampleDeadLetter(`job-${i}`, { queue: 'mail' }),
          { attempts: 5, deferrals: 0 },
          60_000,
        );
        expect(filed.created).toBe(true);
      }
      expect(await store.count('mail')).toBe(5);
      const outcomes = new RedisIdempotencyStore(redis, { prefix: 'noreplica' });
      expect(await outcomes.begin('order-1', 't1', 30_000)).toEqual({ state: 'run' });
      expect(await outcomes.finish('order-1', 't1', '"sent"', 60_000)).toBe(true);
      expect(await waits()).toBe(before);
      await waitFor(() => warnings.length > 0, 2_000, 'the warning');
      expect(warnings).toEqual([
        'durableWrites: no master of this Redis Cluster has a replica, so there is nothing a failover could lose a write to and nothing to wait for: dead-letter records and idempotency outcomes are written without WAIT. Add replicas for durable writes, or set durableWrites: false on the stores to say that none are wanted.',
      ]);
    } finally {
      process.off('warning', listen);
    }
  });

  it('asked for explicitly, are still refused without a replica to reach', async () => {
    const store = new RedisDeadLetterStore({ redis, prefix: 'explicit', durableWrites: { timeoutMs: 50 } });
    await store.registerQueue('mail');
    await expect(
      store.file(sampleDeadLetter('job-x', { queue: 'mail' }), { attempts: 5, deferrals: 0 }, 60_000),
    ).rejects.toThrow(/reached 0 of 1 replica\(s\) within 50ms/);
  });
});
