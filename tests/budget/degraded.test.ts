import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import type { BudgetEvents, SpendResult } from '../../src/budget/types.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let server: TestRedis;

beforeAll(async () => {
  server = await TestRedis.start();
});

afterAll(async () => {
  await server?.close();
});

/** Fails (instead of hanging the suite) when `work` has not settled within `ms`: a liveness bound. */
function settlesWithin<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    work,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} hung for ${ms}ms`)), ms).unref(),
    ),
  ]);
}

describe('RetryBudget when Redis goes away', () => {
  it('degrades to the local floor without throwing or hanging, and recovers when Redis is back', async () => {
    // ioredis defaults: commands queue while it reconnects; the budget's own timeout bounds every call.
    const redis = new Redis(server.connection);
    redis.on('error', () => {}); // connection errors are expected here; the budget reports them as events
    const logged: string[] = [];
    const budget = new RetryBudget({
      store: new RedisBudgetStore({ redis, prefix: 'degraded' }),
      minAllowance: 3,
      timeoutMs: 250,
      probeIntervalMs: 100,
      log: (message) => logged.push(message),
    });
    const events: string[] = [];
    const degraded: BudgetEvents['degraded'][] = [];
    budget.events.on('degraded', (e) => {
      events.push('degraded');
      degraded.push(e);
    });
    budget.events.on('recovered', () => events.push('recovered'));
    try {
      budget.recordSuccess('search', 100);
      expect(await budget.trySpend('search')).toMatchObject({
        granted: true,
        allowance: 20,
        degraded: false,
      });

      await server.stop();
      budget.recordSuccess('search', 100);
      const first = await settlesWithin(budget.trySpend('search'), 5_000, 'trySpend with Redis down');
      expect(first).toMatchObject({ granted: true, degraded: true, allowance: 3 });
      expect(degraded).toEqual([expect.objectContaining({ dependency: 'search', mode: 'local' })]);

      // While degraded: the conservative local budget (the floor only), answered without touching Redis.
      const during: SpendResult[] = [];
      for (let i = 0; i < 5; i++)
        during.push(await settlesWithin(budget.trySpend('search'), 5_000, 'trySpend'));
      expect(during.map((r) => r.granted)).toEqual([true, true, false, false, false]);
      expect(during.every((r) => r.degraded)).toBe(true);
      await settlesWithin(budget.flush(), 5_000, 'flush with Redis down');
      expect((await settlesWithin(budget.state('search'), 5_000, 'state'))?.degraded).toBe(true);

      await server.restart();
      await waitFor(() => !budget.degraded, 10_000, 'the budget to notice Redis is back');
      const after = await budget.trySpend('search');
      expect(after.degraded).toBe(false);
      expect(events).toEqual(['degraded', 'recovered']);
      expect(logged).toEqual([
        expect.stringMatching(
          /^retry budget store unreachable \(.+\); the local fallback answers until it is back$/,
        ),
        expect.stringMatching(/^retry budget store reachable again after \d/),
      ]);
    } finally {
      await budget.close();
      redis.disconnect();
    }
  });

  it('bounds every call when ioredis fails fast instead (offline queue disabled)', async () => {
    const redis = new Redis({ ...server.connection, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    redis.on('error', () => {});
    await waitFor(() => redis.status === 'ready', 5_000, 'the connection to be ready');
    const budget = new RetryBudget({
      store: new RedisBudgetStore({ redis, prefix: 'failfast' }),
      fallback: 'deny',
      log: false,
      timeoutMs: 250,
    });
    try {
      await server.stop();
      const r = await settlesWithin(budget.trySpend('mail'), 5_000, 'trySpend with Redis down');
      expect(r).toMatchObject({ granted: false, degraded: true });
      expect(await budget.dependencies()).toEqual(['mail']);
    } finally {
      await budget.close();
      redis.disconnect();
      await server.restart();
    }
  });
});
