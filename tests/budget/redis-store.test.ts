import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { describeBudgetStore } from '../../src/budget/store.case.js';
import { isInvalidInputError } from '../../src/errors/invalid-input-error.js';
import { budgetKey } from '../../src/redis/budget-keys.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { budgetStatus } from '../../src/status/budget.js';
import { TestRedis } from '../helpers/redis-server.js';

let server: TestRedis;
let redis: Redis;
let prefixes = 0;
/** A fresh prefix per store: tests never see each other's keys. */
const freshPrefix = () => `sgtest-${process.pid}-${prefixes++}`;

beforeAll(async () => {
  server = await TestRedis.start();
  redis = new Redis(server.connection);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

describeBudgetStore(
  'RedisBudgetStore',
  (clock) => new RedisBudgetStore({ redis, prefix: freshPrefix(), clock }),
  { propertyRuns: 2, windowPropertyRuns: 25 },
);

/** Writes state of the current format at KEYS[1] whose first slot's spend is ARGV[1] ('nan' for NaN). */
const WITH_COUNT = `
local r = { -1 }
for k = 0, 10 do r[2 + 4 * k], r[3 + 4 * k], r[4 + 4 * k], r[5 + 4 * k] = -1, 0, 0, 0 end
if ARGV[1] == 'nan' then r[4] = 0 / 0 else r[4] = tonumber(ARGV[1]) end
redis.call('SET', KEYS[1], cmsgpack.pack({ f = 2, g = { 6000, 10, 200000, 10, 0 }, r = r }))
`;

describe('RedisBudgetStore on the Redis server clock', () => {
  it('grants exactly 200 of 2 000 concurrent requests from 4 connections after 1 000 successes', async () => {
    const prefix = freshPrefix();
    const clients = Array.from({ length: 4 }, () => new Redis(server.connection));
    const budgets = clients.map(
      (client) =>
        new RetryBudget({
          store: new RedisBudgetStore({ redis: client, prefix }),
          ratio: 0.2,
          // 2 000 calls queue behind each other on a busy machine: this case is about exactness, not latency.
          timeoutMs: 10_000,
        }),
    );
    try {
      for (let i = 0; i < 1_000; i++) budgets[i % 4]!.recordSuccess('search');
      await Promise.all(budgets.map((b) => b.flush()));
      const results = await Promise.all(
        Array.from({ length: 2_000 }, (_, i) => budgets[i % 4]!.trySpend('search')),
      );
      expect(results.filter((r) => r.granted)).toHaveLength(200);
      // Concurrent requests share script calls, yet each result reads as if decided alone.
      const spentSeen = results.filter((r) => r.granted).map((r) => r.spent);
      expect(new Set(spentSeen).size).toBe(200);
      expect(Math.max(...spentSeen)).toBe(200);
      const deniedSeen = results.filter((r) => !r.granted).map((r) => r.denied);
      expect(new Set(deniedSeen).size).toBe(1_800);
      expect(results.every((r) => !r.degraded)).toBe(true);
      expect(await budgets[0]!.state('search')).toMatchObject({
        allowance: 200,
        spent: 200,
        denied: 1_800,
        successes: 1_000,
      });
    } finally {
      await Promise.all(budgets.map((b) => b.close()));
      for (const client of clients) client.disconnect();
    }
  });

  it('keeps every key of a dependency in one hash slot and lets it expire on its own', async () => {
    const prefix = freshPrefix();
    const budget = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix }), windowMs: 2_000 });
    budget.recordSuccess('search', 5);
    await budget.trySpend('search');
    // The dependency's state, and the registry that lists it (the prefix's global slot, never expiring).
    expect((await redis.keys(`*${prefix}*`)).sort()).toEqual([
      `{${prefix}:d:search}:budget`,
      `{${prefix}:g}:budget-dependencies`,
    ]);
    const keys = await redis.keys(`*${prefix}:d:*`);
    const ttl = await redis.pttl(keys[0]!);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(4_000);
    await budget.close();
  });

  it('reads a budget with the settings its writers stored (what the CLI sees)', async () => {
    const prefix = freshPrefix();
    const writer = new RetryBudget({
      store: new RedisBudgetStore({ redis, prefix }),
      ratio: 0.5,
      minAllowance: 3,
    });
    writer.recordSuccess('mail', 40);
    await writer.trySpend('mail');
    const read = await new RedisBudgetStore({ redis, prefix }).read('mail');
    expect(read).toMatchObject({ allowance: 20, spent: 1, successes: 40 });
    expect(read?.window).toMatchObject({ ratioPpm: 500_000, minAllowance: 3, windowMs: 60_000, buckets: 10 });
    expect(await new RedisBudgetStore({ redis, prefix }).dependencies()).toEqual(['mail']);
    await writer.close();
  });

  it('keeps shop + eu:search apart from shop:eu + search, and lists names with any characters', async () => {
    const base = freshPrefix();
    const shop = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix: base }) });
    const shopEu = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix: `${base}:eu` }) });
    shop.recordSuccess('eu:search', 1_000);
    expect((await shop.trySpend('eu:search')).allowance).toBe(200);
    expect(await shopEu.trySpend('search')).toMatchObject({ allowance: 10, spent: 1, successes: 0 });
    const odd = ['send email', 'a{b}', 'line\nbreak', '100%', 'eu:search'];
    for (const name of odd) await shop.trySpend(name);
    expect(await new RedisBudgetStore({ redis, prefix: base }).dependencies()).toEqual([...odd].sort());
    expect(await new RedisBudgetStore({ redis, prefix: `${base}:eu` }).dependencies()).toEqual(['search']);
    await shop.close();
    await shopEu.close();
  });

  it.each<[string, (key: string) => Promise<unknown>]>([
    ['a string that is not MessagePack', (key) => redis.set(key, 'hello')],
    ['a hash', (key) => redis.hset(key, 'spent', '3')],
    // The first format: a MessagePack array [1, bucketMs, buckets, ratioPpm, minAllowance, ...].
    [
      'state of the first format',
      (key) => redis.set(key, Buffer.from([0x95, 0x01, 0xcd, 0x17, 0x70, 0x0a, 0x0a, 0x0a])),
    ],
    ['well-formed state with a negative count', (key) => redis.eval(WITH_COUNT, 1, key, '-5')],
    ['well-formed state with a count that is not a number', (key) => redis.eval(WITH_COUNT, 1, key, 'nan')],
  ])('one key holding %s affects only its own dependency, reported once', async (_, corrupt) => {
    const prefix = freshPrefix();
    const logged: string[] = [];
    const store = new RedisBudgetStore({ redis, prefix });
    const budget = new RetryBudget({ store, log: (m) => logged.push(m) });
    const events: string[] = [];
    budget.events.on('degraded', () => events.push('degraded'));
    budget.events.on('reset', (e) => events.push(`reset ${e.dependency}`));
    budget.recordSuccess('good', 1_000);
    expect((await budget.trySpend('good')).allowance).toBe(200);
    await corrupt(budgetKey(prefix, 'bad'));
    // Reading reports it and degrades nothing; listing shows it beside the healthy ones.
    expect(await budget.state('bad')).toMatchObject({ allowance: 10, spent: 0, degraded: false });
    const rows = await budgetStatus(store);
    expect(rows.map((r) => [r.dependency, r.unreadable === undefined])).toEqual([
      ['bad', false],
      ['good', true],
    ]);
    // The first decision replaces it with fresh counts; the healthy dependency never notices.
    expect(await budget.trySpend('bad')).toMatchObject({ granted: true, spent: 1, degraded: false });
    expect(await budget.trySpend('bad')).toMatchObject({ granted: true, spent: 2, degraded: false });
    expect(await budget.trySpend('good')).toMatchObject({ allowance: 200, spent: 2, degraded: false });
    expect(events).toEqual(['reset bad']);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(
      /retry budget state of "bad" could not be read \((not MessagePack|the key holds a hash, not a string|not budget state of format 2|malformed counts)\); it starts afresh, other dependencies are unaffected/,
    );
    expect(budget.degraded).toBe(false);
    await budget.close();
  });

  it('lists dependencies behind an ioredis keyPrefix', async () => {
    // Glob characters in the client's prefix are matched literally.
    const prefixed = new Redis({ ...server.connection, keyPrefix: 'app[1]*:' });
    try {
      const store = new RedisBudgetStore({ redis: prefixed, prefix: freshPrefix() });
      const budget = new RetryBudget({ store });
      await budget.trySpend('search');
      expect(await store.dependencies()).toEqual(['search']);
      expect(await store.read('search')).toMatchObject({ spent: 1 });
    } finally {
      prefixed.disconnect();
    }
  });

  it('holds two workers with different settings to the settings stored first, on the server clock', async () => {
    const prefix = freshPrefix();
    const logged: string[] = [];
    const sixty = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix }), log: false });
    const thirty = new RetryBudget({
      store: new RedisBudgetStore({ redis, prefix }),
      windowMs: 30_000,
      buckets: 20,
      ratio: 0.5,
      minAllowance: 3,
      log: (m) => logged.push(m),
    });
    sixty.recordSuccess('search', 1_000);
    expect((await sixty.trySpend('search')).allowance).toBe(200);
    // Old code started the counts afresh for the other geometry: allowance 3, spent 1.
    expect(await thirty.trySpend('search')).toMatchObject({
      allowance: 200,
      spent: 2,
      successes: 1_000,
      windowMs: 60_000,
    });
    thirty.recordSuccess('search', 1_000);
    await thirty.flush();
    expect(await sixty.state('search')).toMatchObject({ allowance: 400, spent: 2, successes: 2_000 });
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(
      /"search" follows the settings stored for it \(windowMs 60000, ratio 0.2, minAllowance 10, buckets 10, settingsVersion 0\), not this worker's \(windowMs 30000/,
    );
    expect(logged[0]).toMatch(/raise settingsVersion above 0/);
    await sixty.close();
    await thirty.close();
  });

  it.each(['', 'x'.repeat(65)])('rejects the prefix %j', (prefix) => {
    let error: unknown;
    try {
      new RedisBudgetStore({ redis, prefix });
    } catch (e) {
      error = e;
    }
    expect(isInvalidInputError(error)).toBe(true);
    expect((error as Error).message).toMatch(/prefix .*: must (not be empty|be at most 64 characters)/);
  });
});
