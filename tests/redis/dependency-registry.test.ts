/**
 * The Redis budget and breaker stores list their dependencies from a registry, not by scanning the
 * keyspace: on a Redis that also holds many other keys (jobs, dead letters), a listing after the first
 * runs no SCAN at all; state written before the registry existed is found once; names whose state is
 * gone leave the registry after the grace period.
 */
import { describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { FakeClock } from '../../src/common/clock.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { budgetKey } from '../../src/redis/budget-keys.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { crowdedRedis } from '../helpers/crowded-redis.js';

const OTHER_KEYS = 50_000;
const WINDOW = {
  bucketMs: 6_000,
  buckets: 10,
  windowMs: 60_000,
  ratioPpm: 200_000,
  minAllowance: 10,
  version: 0,
};

const crowded = crowdedRedis(OTHER_KEYS);
const scans = () => crowded.scans();
let prefixes = 0;
const freshPrefix = () => `registry-${process.pid}-${prefixes++}`;

/** Makes `prefix` look as it did before the registry existed: state keys only. */
async function dropRegistries(prefix: string): Promise<void> {
  for (const kind of ['budget', 'breaker'])
    await crowded.redis.del(
      `{${prefix}:g}:${kind}-dependencies`,
      `{${prefix}:g}:${kind}-dependencies-scanned`,
    );
}

describe('dependency registry of the Redis budget and breaker stores', () => {
  it('lists budgets and breakers without a SCAN once the prefix has been listed', async () => {
    const prefix = freshPrefix();
    const budgets = new RedisBudgetStore({ redis: crowded.redis, prefix });
    const breakers = new RedisBreakerStore({ redis: crowded.redis, prefix });
    const budget = new RetryBudget({ store: budgets });
    try {
      for (const name of ['search', 'eu:mail']) {
        await budget.trySpend(name);
        await breakers.record(name, 'failure', resolveBreakerOptions({}));
      }
      // The first listing of a prefix looks once for state older than the registry.
      expect(await budgets.dependencies()).toEqual(['eu:mail', 'search']);
      expect((await breakers.list()).map((b) => b.dependency)).toEqual(['eu:mail', 'search']);

      const before = await scans();
      await budget.trySpend('crm');
      await breakers.record('crm', 'success', resolveBreakerOptions({}));
      expect(await budgets.dependencies()).toEqual(['crm', 'eu:mail', 'search']);
      expect((await breakers.list()).map((b) => [b.dependency, b.state])).toEqual([
        ['crm', 'closed'],
        ['eu:mail', 'closed'],
        ['search', 'closed'],
      ]);
      expect(await scans()).toBe(before);
    } finally {
      await budget.close();
    }
  });

  it('a read-only store lists state written before the registry existed with one scan, and writes nothing', async () => {
    const prefix = freshPrefix();
    await new RedisBudgetStore({ redis: crowded.redis, prefix }).trySpend('search', WINDOW, [], 1);
    await dropRegistries(prefix);
    const keys = async () => (await crowded.redis.keys(`*${prefix}*`)).sort();
    const before = await keys();
    const reader = new RedisBudgetStore({ redis: crowded.redis, prefix, readOnly: true });
    const scansBefore = await scans();
    expect(await reader.dependencies()).toEqual(['search']);
    const scansAfterFirst = await scans();
    expect(scansAfterFirst).toBeGreaterThan(scansBefore);
    // Listed again (budget watch, metrics serve): from what it found, without scanning again.
    expect(await reader.dependencies()).toEqual(['search']);
    expect(await scans()).toBe(scansAfterFirst);
    expect(await keys()).toEqual(before);
  });

  it('finds state written before the registry existed, with one scan, and keeps it listed', async () => {
    const prefix = freshPrefix();
    const budgets = new RedisBudgetStore({ redis: crowded.redis, prefix });
    const breakers = new RedisBreakerStore({ redis: crowded.redis, prefix });
    await budgets.trySpend('search', WINDOW, [], 1);
    await breakers.record('search', 'failure', resolveBreakerOptions({}));
    await dropRegistries(prefix);

    // Another process, started after the upgrade: it has noted nothing.
    const budgetsLater = new RedisBudgetStore({ redis: crowded.redis, prefix });
    const breakersLater = new RedisBreakerStore({ redis: crowded.redis, prefix });
    const before = await scans();
    expect(await budgetsLater.dependencies()).toEqual(['search']);
    expect((await breakersLater.list()).map((b) => b.dependency)).toEqual(['search']);
    const afterFirst = await scans();
    expect(afterFirst).toBeGreaterThan(before);

    expect(await budgetsLater.dependencies()).toEqual(['search']);
    expect((await breakersLater.list()).map((b) => b.dependency)).toEqual(['search']);
    expect(await scans()).toBe(afterFirst);
  });

  it('a peek registers nothing; a breaker override does', async () => {
    const prefix = freshPrefix();
    const breakers = new RedisBreakerStore({ redis: crowded.redis, prefix });
    const options = resolveBreakerOptions({});
    expect((await breakers.read('search', options)).state).toBe('closed');
    expect(await crowded.redis.zcard(`{${prefix}:g}:breaker-dependencies`)).toBe(0);
    await breakers.override('crm', 'force-open', { reason: 'maintenance', by: 'ops' }, options);
    expect(await crowded.redis.zrange(`{${prefix}:g}:breaker-dependencies`, '0', '-1')).toEqual(['crm']);
    expect((await breakers.list()).map((b) => [b.dependency, b.state])).toEqual([['crm', 'open']]);
  });

  it('notes a dependency once a minute per process, so a lost registry heals', async () => {
    const prefix = freshPrefix();
    const clock = new FakeClock(1_000_000);
    const budgets = new RedisBudgetStore({ redis: crowded.redis, prefix, clock });
    const registry = `{${prefix}:g}:budget-dependencies`;
    await budgets.trySpend('search', WINDOW, [], 1);
    expect(await crowded.redis.zscore(registry, 'search')).toBe('1000000');
    await crowded.redis.del(registry);
    clock.advance(59_000);
    await budgets.trySpend('search', WINDOW, [], 1);
    expect(await crowded.redis.exists(registry)).toBe(0);
    clock.advance(1_000);
    await budgets.trySpend('search', WINDOW, [], 1);
    expect(await crowded.redis.zscore(registry, 'search')).toBe('1060000');
  });

  it('leaves out a dependency whose state is gone, and forgets it once nobody has noted it for an hour', async () => {
    const prefix = freshPrefix();
    const clock = new FakeClock(1_000_000);
    const budgets = new RedisBudgetStore({ redis: crowded.redis, prefix, clock });
    const registry = `{${prefix}:g}:budget-dependencies`;
    await budgets.trySpend('search', WINDOW, [], 1);
    await budgets.trySpend('mail', WINDOW, [], 1);
    await crowded.redis.del(budgetKey(prefix, 'search'));

    clock.advance(3_600_000);
    expect(await budgets.dependencies()).toEqual(['mail']);
    // Noted exactly an hour ago: a writer may still be about to write it.
    expect((await crowded.redis.zrange(registry, '0', '-1')).sort()).toEqual(['mail', 'search']);

    clock.advance(1);
    expect(await budgets.dependencies()).toEqual(['mail']);
    expect(await crowded.redis.zrange(registry, '0', '-1')).toEqual(['mail']);
  });

  it('a registry that cannot be written never turns a budget or breaker answer into an error', async () => {
    // The registry is a side note: its key corrupt (or its Cluster node away) must leave every
    // dependency's own state answering, or a denial written to the store reaches the worker as a store
    // failure and the fallback grants the retry the fleet's budget refused.
    const prefix = freshPrefix();
    await crowded.redis.set(`{${prefix}:g}:budget-dependencies`, 'not a sorted set');
    await crowded.redis.set(`{${prefix}:g}:breaker-dependencies`, 'not a sorted set');
    const budgets = new RedisBudgetStore({ redis: crowded.redis, prefix });
    const breakers = new RedisBreakerStore({ redis: crowded.redis, prefix });
    const budget = new RetryBudget({ store: budgets, minAllowance: 2, fallback: 'local' });
    try {
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await budget.trySpend('search'));
      expect(answers.map((a) => [a.granted, a.degraded])).toEqual([
        [true, false],
        [true, false],
        [false, false],
      ]);
      expect(budget.degraded).toBe(false);
      const options = resolveBreakerOptions({ consecutiveFailures: 1 });
      const recorded = await breakers.record('search', 'failure', options);
      expect(recorded.snapshot).toMatchObject({ state: 'open', degraded: false });
      // A listing cannot go on without the registry: it says which key is wrong and what to do.
      await expect(budgets.dependencies()).rejects.toThrow(
        `the dependency registry "{${prefix}:g}:budget-dependencies" is not a sorted set`,
      );
      await crowded.redis.del(
        `{${prefix}:g}:budget-dependencies`,
        `{${prefix}:g}:budget-dependencies-scanned`,
      );
      expect(await budgets.dependencies()).toEqual(['search']);
    } finally {
      await budget.close();
    }
  });
});
