/**
 * Critical writes (idempotency outcomes, dead-letter records) wait until a replica has them, so a failover
 * cannot lose them: on a Cluster by default, on a single Redis when asked.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueTag } from '../../src/common/keys.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import type { DurableWritesOption } from '../../src/redis/durable-writes.js';
import { redisIdempotencyGuard } from '../../src/redis/idempotency-guard.js';
import { RedisIdempotencyStore } from '../../src/redis/idempotency-store.js';
import { sampleDeadLetter } from '../../src/runtime/dead-letter-store.case.js';
import { TestRedisCluster } from '../helpers/redis-cluster.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let cluster: TestRedisCluster;
let redis: ReturnType<TestRedisCluster['client']>;
let n = 0;
const fresh = (what: string) => `${what}-${++n}`;

beforeAll(async () => {
  cluster = await TestRedisCluster.start({ replicas: 1 });
  redis = cluster.client();
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.close();
});

/** A READONLY connection to `node`, so a replica answers reads of its own slots. */
async function onNode<T>(node: TestRedis, read: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(node.connection);
  try {
    await client.call('READONLY');
    return await read(client);
  } finally {
    client.disconnect();
  }
}

/** Clients blocked on the node (a `WAIT` in progress shows here). */
const blockedClients = (node: TestRedis) =>
  onNode(node, async (client) => Number(/blocked_clients:(\d+)/.exec(await client.info('clients'))?.[1]));

/** Runs `write` with the key's replica frozen until the master shows the write blocked in WAIT. */
async function withFrozenReplica<T>(key: string, write: () => Promise<T>): Promise<T> {
  const master = await cluster.masterOf(key);
  const [replica] = await cluster.replicasOf(key);
  if (!replica) throw new Error(`no replica serves ${key}`);
  await cluster.pause(replica);
  try {
    const pending = write();
    pending.catch(() => undefined); // awaited below; a rejection must not go unhandled meanwhile
    await waitFor(
      async () => (await blockedClients(master)) >= 1,
      5_000,
      'the write to wait for its replica',
    );
    await cluster.resume(replica);
    return await pending;
  } finally {
    await cluster.resume(replica);
  }
}

async function frozenReplicaRejects(key: string, write: () => Promise<unknown>): Promise<unknown> {
  const [replica] = await cluster.replicasOf(key);
  if (!replica) throw new Error(`no replica serves ${key}`);
  await cluster.pause(replica);
  try {
    return await write().then(
      () => undefined,
      (error: unknown) => error,
    );
  } finally {
    await cluster.resume(replica);
  }
}

describe('idempotency outcomes on a Cluster', () => {
  const open = (durableWrites?: DurableWritesOption) =>
    new RedisIdempotencyStore(redis, { prefix: fresh('idem'), durableWrites });

  it('are on the replica when finish resolves: finish waits for its acknowledgement', async () => {
    const store = open({ timeoutMs: 10_000 });
    const key = store.keyOf('order-1');
    expect(await store.begin('order-1', 't1', 30_000)).toEqual({ state: 'run' });
    expect(await withFrozenReplica(key, () => store.finish('order-1', 't1', '"sent"', 60_000))).toBe(true);
    const [replica] = await cluster.replicasOf(key);
    expect(await onNode(replica!, (client) => client.exists(key))).toBe(1);
  });

  it('make finish reject when no replica acknowledged in time, naming the shortfall', async () => {
    const store = open({ timeoutMs: 200 });
    const key = store.keyOf('order-2');
    await store.begin('order-2', 't1', 30_000);
    const error = await frozenReplicaRejects(key, () => store.finish('order-2', 't1', '"sent"', 60_000));
    expect((error as Error).message).toMatch(/reached 0 of 1 replica\(s\) within 200ms/);
  });

  it('never wait when durableWrites is false', async () => {
    const store = open(false);
    const key = store.keyOf('order-3');
    await store.begin('order-3', 't1', 30_000);
    expect(
      await frozenReplicaRejects(key, () => store.finish('order-3', 't1', '"sent"', 60_000)),
    ).toBeUndefined();
  });
});

describe('the idempotency guard on a Cluster', () => {
  /** WAIT commands the node has run so far. */
  const waits = (node: TestRedis) =>
    onNode(node, async (client) =>
      Number(/cmdstat_wait:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0),
    );

  it.each([
    [undefined, 1],
    [false, 0],
  ] as const)('with durableWrites %j sends %i WAIT with the outcome', async (durableWrites, expected) => {
    const prefix = fresh('guard');
    const guard = redisIdempotencyGuard({
      redis,
      prefix,
      ...(durableWrites === undefined ? {} : { durableWrites }),
    });
    const key = new RedisIdempotencyStore(redis, { prefix }).keyOf('mail-1');
    const master = await cluster.masterOf(key);
    const before = await waits(master);
    expect(await guard.once('mail-1', () => 'sent')).toBe('sent');
    expect((await waits(master)) - before).toBe(expected);
  });
});

describe('dead-letter records on a Cluster', () => {
  const open = (durableWrites?: DurableWritesOption) =>
    new RedisDeadLetterStore({ redis, prefix: fresh('dlq'), durableWrites });

  it('are on the replica when file resolves: filing waits for its acknowledgement', async () => {
    const store = open({ timeoutMs: 10_000 });
    await store.registerQueue('mail');
    const recordsKey = `${queueTag(store.prefix, 'mail')}:dl:rec`;
    const filed = await withFrozenReplica(recordsKey, () =>
      store.file(sampleDeadLetter('job-1', { queue: 'mail' }), { attempts: 5, deferrals: 0 }, 60_000),
    );
    expect(filed.created).toBe(true);
    const [replica] = await cluster.replicasOf(recordsKey);
    expect(await onNode(replica!, (client) => client.hexists(recordsKey, filed.id))).toBe(1);
  });

  it('make filing reject when no replica acknowledged in time; filing again gives the same record', async () => {
    const store = open({ timeoutMs: 200 });
    await store.registerQueue('mail');
    const recordsKey = `${queueTag(store.prefix, 'mail')}:dl:rec`;
    const record = sampleDeadLetter('job-2', { queue: 'mail' });
    const error = await frozenReplicaRejects(recordsKey, () =>
      store.file(record, { attempts: 5, deferrals: 0 }, 60_000),
    );
    expect((error as Error).message).toMatch(/reached 0 of 1 replica\(s\) within 200ms/);
    await waitFor(() => cluster.healthy(), 10_000, 'the replica to catch up');
    const again = await store.file(record, { attempts: 5, deferrals: 0 }, 60_000);
    expect(again.created).toBe(false);
    expect(await store.count('mail')).toBe(1);
  });
});

describe('durable writes on a single Redis', () => {
  it('are off by default, and on when asked (then a Redis without replicas refuses to confirm)', async () => {
    const server = await TestRedis.start();
    const single = new Redis(server.connection);
    try {
      const plain = new RedisIdempotencyStore(single, { prefix: fresh('single') });
      await plain.begin('k', 't', 30_000);
      expect(await plain.finish('k', 't', '1', 60_000)).toBe(true);
      const durable = new RedisIdempotencyStore(single, {
        prefix: fresh('single'),
        durableWrites: { timeoutMs: 50 },
      });
      await durable.begin('k', 't', 30_000);
      await expect(durable.finish('k', 't', '1', 60_000)).rejects.toThrow(
        /reached 0 of 1 replica\(s\) within 50ms, so a failover could lose it/,
      );
    } finally {
      single.disconnect();
      await server.close();
    }
  });
});
