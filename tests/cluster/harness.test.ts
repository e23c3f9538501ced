import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestRedisCluster } from '../helpers/redis-cluster.js';

describe('TestRedisCluster', () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await TestRedisCluster.start({ replicas: 1 });
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('forms three masters sharing every slot, each with one replica', async () => {
    const nodes = await cluster.topology();
    const masters = nodes.filter((node) => node.role === 'master');
    const replicas = nodes.filter((node) => node.role === 'replica');
    expect(masters).toHaveLength(3);
    expect(masters.every((node) => node.slots > 0)).toBe(true);
    expect(masters.reduce((sum, node) => sum + node.slots, 0)).toBe(16_384);
    expect(replicas.map((node) => node.masterId).sort()).toEqual(masters.map((node) => node.id).sort());
  });

  it('serves keys on every master through a Cluster client', async () => {
    const redis = cluster.client();
    try {
      const keys = Array.from({ length: 30 }, (_, i) => `harness-${i}`);
      for (const key of keys) await redis.set(key, key);
      const owners = new Set<number>();
      for (const key of keys) owners.add((await cluster.masterOf(key)).port);
      expect(owners.size).toBe(3);
      expect(await Promise.all(keys.map((key) => redis.get(key)))).toEqual(keys);
    } finally {
      redis.disconnect();
    }
  });

  it('refuses connections on every port once closed', async () => {
    const other = await TestRedisCluster.start();
    const ports = other.nodes.map((node) => node.port);
    await other.close();
    for (const port of ports) {
      const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
      probe.on('error', () => undefined); // the refusal is what connect() rejects with
      await expect(probe.connect()).rejects.toThrow();
      probe.disconnect();
    }
  });
});
