/**
 * Every store conformance suite on a real three-master Redis Cluster, through an ioredis `Cluster` client,
 * exactly as the single-node suites run them. A multi-key operation whose keys span two slots fails here
 * with CROSSSLOT, so these suites are the check that every script call stays in one slot. The prefixes
 * carry the characters a prefix may hold that matter to a cluster (`{`, `}`, `:`), so no prefix can break
 * a store's hash tags.
 */
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { breakerStoreCases } from '../../src/breaker/store.case.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { describeBudgetStore } from '../../src/budget/store.case.js';
import { dependencyTag, globalKey, queueTag } from '../../src/common/keys.js';
import { idempotencyStoreCases } from '../../src/idempotency/store.case.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { RedisIdempotencyStore } from '../../src/redis/idempotency-store.js';
import { RedisReplayRunStore } from '../../src/redis/replay-run-store.js';
import { describeDeadLetterStore } from '../../src/runtime/dead-letter-store.case.js';
import { flowStoreCases } from '../../src/runtime/flow-control/store.case.js';
import { describeReplayRunStore } from '../../src/runtime/replay-run-store.case.js';
import { describeNameAgreement } from '../helpers/name-agreement.js';
import { TestRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/redis-server.js';

let cluster: TestRedisCluster;
let redis: Cluster;
let prefixes = 0;
/** A fresh prefix per store, with braces and a colon in it. */
const freshPrefix = () => `{sg}:c-${process.pid}-${prefixes++}`;

beforeAll(async () => {
  cluster = await TestRedisCluster.start({ replicas: 1 });
  redis = cluster.client();
});

afterAll(async () => {
  redis?.disconnect();
  await cluster?.close();
});

describeBudgetStore(
  'RedisBudgetStore on a Cluster',
  (clock) => new RedisBudgetStore({ redis, prefix: freshPrefix(), clock }),
  { propertyRuns: 2 },
);

breakerStoreCases('RedisBreakerStore on a Cluster', async (clock, connections) => {
  const prefix = freshPrefix();
  const clients = Array.from({ length: connections }, () => cluster.client());
  const stores = clients.map(
    (client) => new RedisBreakerStore({ redis: client, prefix, timeOverride: clock }),
  );
  return {
    stores,
    close: async () => {
      for (const client of clients) client.disconnect();
    },
  };
});

idempotencyStoreCases('RedisIdempotencyStore on a Cluster', async () => {
  const store = new RedisIdempotencyStore(redis, { prefix: freshPrefix() });
  return {
    store,
    // Redis expires keys on its own clock: wait until the key is gone rather than for a fixed time.
    elapse: (key, ms) =>
      waitFor(async () => (await redis.exists(store.keyOf(key))) === 0, ms + 2_000, `${key} to expire`),
    close: async () => {},
  };
});

flowStoreCases('RedisFlowStore on a Cluster', async (clock, connections) => {
  const prefix = freshPrefix();
  const clients = Array.from({ length: connections }, () => cluster.client());
  return {
    stores: clients.map((client) => new RedisFlowStore({ redis: client, prefix, clock })),
    close: async () => {
      for (const client of clients) client.disconnect();
    },
  };
});

describeReplayRunStore('RedisReplayRunStore on a Cluster', async (count) => {
  const prefix = freshPrefix();
  const clients = Array.from({ length: count }, () => cluster.client());
  return {
    stores: clients.map((client) => new RedisReplayRunStore({ redis: client, prefix })),
    close: async () => {
      for (const client of clients) client.disconnect();
    },
  };
});

describeDeadLetterStore('RedisDeadLetterStore on a Cluster', async (clock) => {
  const store = new RedisDeadLetterStore({ redis, prefix: freshPrefix(), clock });
  return {
    store,
    damage: async (queue, id) => {
      await redis.hset(`${queueTag(store.prefix, queue)}:dl:rec`, id, '{"jobId":42}');
    },
    close: async () => {},
  };
});

describe('stores on a Cluster', () => {
  /** Enough dependencies that every master serves some. */
  const names = Array.from({ length: 12 }, (_, i) => `dep-${i}`);

  async function mastersServing(keys: readonly string[]): Promise<number> {
    const ports = new Set<number>();
    for (const key of keys) ports.add((await cluster.masterOf(key)).port);
    return ports.size;
  }

  it('spreads dependencies over the masters and lists budgets from every one of them', async () => {
    const store = new RedisBudgetStore({ redis, prefix: freshPrefix() });
    const budget = new RetryBudget({ store });
    for (const name of names) await budget.trySpend(name);
    expect(await mastersServing(names.map((name) => `${dependencyTag(store.prefix, name)}:budget`))).toBe(3);
    expect(await store.dependencies()).toEqual([...names].sort());
    await budget.close();
  });

  it('lists breakers from every master', async () => {
    const prefix = freshPrefix();
    const store = new RedisBreakerStore({ redis, prefix });
    const options = resolveBreakerOptions({ consecutiveFailures: 1 });
    for (const name of names) await store.record(name, 'failure', options);
    expect(await mastersServing(names.map((name) => store.keyOf(name)))).toBe(3);
    const listed = await store.list();
    expect(listed.map((b) => [b.dependency, b.state])).toEqual([...names].sort().map((n) => [n, 'open']));
  });

  it('finds budgets and breakers written before the registry existed on every master, then lists from the registry', async () => {
    const prefix = freshPrefix();
    const budgets = new RedisBudgetStore({ redis, prefix });
    const breakers = new RedisBreakerStore({ redis, prefix });
    const budget = new RetryBudget({ store: budgets });
    for (const name of names) {
      await budget.trySpend(name);
      await breakers.record(name, 'failure', resolveBreakerOptions({}));
    }
    await budget.close();
    // State as a version without the registry left it: the registries and their marks removed.
    for (const kind of ['budget', 'breaker'])
      for (const key of [`${kind}-dependencies`, `${kind}-dependencies-scanned`])
        await redis.del(globalKey(prefix, key));

    const later = {
      budgets: new RedisBudgetStore({ redis, prefix }),
      breakers: new RedisBreakerStore({ redis, prefix }),
    };
    expect(await later.budgets.dependencies()).toEqual([...names].sort());
    expect((await later.breakers.list()).map((b) => b.dependency)).toEqual([...names].sort());
    expect(await redis.zcard(globalKey(prefix, 'budget-dependencies'))).toBe(names.length);
    expect(await redis.zcard(globalKey(prefix, 'breaker-dependencies'))).toBe(names.length);
  });

  it.each([
    ['a keyPrefix', { keyPrefix: 'app[1]*:' }],
    ['a keyPrefix in redisOptions', { redisOptions: { keyPrefix: 'app[1]*:' } }],
  ])('lists budgets and breakers behind %s', async (_, options) => {
    const prefixed = cluster.client(options);
    try {
      const prefix = freshPrefix();
      const budgets = new RedisBudgetStore({ redis: prefixed, prefix });
      const breakers = new RedisBreakerStore({ redis: prefixed, prefix });
      const budget = new RetryBudget({ store: budgets });
      for (const name of names) {
        await budget.trySpend(name);
        await breakers.record(name, 'success', resolveBreakerOptions({}));
      }
      expect(await budgets.dependencies()).toEqual([...names].sort());
      expect((await breakers.list()).map((b) => b.dependency)).toEqual([...names].sort());
      expect(await redis.exists(`app[1]*:${dependencyTag(prefix, names[0]!)}:budget`)).toBe(1);
      await budget.close();
    } finally {
      prefixed.disconnect();
    }
  });
});

describeNameAgreement(
  'a Redis Cluster',
  async () => {
    const prefix = freshPrefix();
    return {
      budget: new RedisBudgetStore({ redis, prefix }),
      breaker: new RedisBreakerStore({ redis, prefix }),
      flow: new RedisFlowStore({ redis, prefix }),
    };
  },
  30,
);
