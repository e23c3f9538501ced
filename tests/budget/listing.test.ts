import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import type { BudgetEvents } from '../../src/budget/types.js';
import { StoreTimeoutError } from '../../src/common/timeout.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { crowdedRedis } from '../helpers/crowded-redis.js';

// Keys that are not budgets (BullMQ jobs, say): a listing's SCAN walks them all, a few hundred steps.
const OTHER_KEYS = 200_000;

const crowded = crowdedRedis(OTHER_KEYS);
const scans = () => crowded.scans();

describe('RetryBudget.dependencies on a Redis full of other keys', () => {
  it('a listing past listTimeoutMs rejects alone: trySpend stays on Redis and the scan stops', async () => {
    const store = new RedisBudgetStore({ redis: crowded.redis, prefix: 'listing' });
    // One millisecond cannot cover a few hundred round trips: this listing is always late.
    const budget = new RetryBudget({ store, listTimeoutMs: 1 });
    const degraded: BudgetEvents['degraded'][] = [];
    budget.events.on('degraded', (e) => degraded.push(e));
    try {
      expect(await budget.trySpend('search')).toMatchObject({ granted: true, spent: 1, degraded: false });

      await expect(budget.dependencies()).rejects.toBeInstanceOf(StoreTimeoutError);
      expect(budget.degraded).toBe(false);
      expect(await budget.trySpend('search')).toMatchObject({ granted: true, spent: 2, degraded: false });
      expect(degraded).toEqual([]);

      // Commands on one connection answer in order: after that trySpend the abandoned scan has seen its
      // abort, so no further SCAN reaches the server.
      const before = await scans();
      await budget.trySpend('search');
      expect(await scans()).toBe(before);
    } finally {
      await budget.close();
    }
  });

  it('with its default bound the same listing completes, matching budget keys only', async () => {
    const budget = new RetryBudget({
      store: new RedisBudgetStore({ redis: crowded.redis, prefix: 'listing-ok' }),
    });
    try {
      await budget.trySpend('mail');
      const before = await scans();
      expect(await budget.dependencies()).toEqual(['mail']);
      // COUNT keeps a walk of the whole keyspace to a few hundred steps, not one per ten keys.
      expect(await scans()).toBeLessThanOrEqual(before + OTHER_KEYS / 500);
    } finally {
      await budget.close();
    }
  });
});
