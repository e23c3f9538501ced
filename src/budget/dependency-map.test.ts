import { describe, expect, it } from 'vitest';
import { FakeClock } from '../common/clock.js';
import { chargeAll, defineDependencyMap, dependenciesFor, dependencyFor } from './dependency-map.js';
import { MemoryBudgetStore } from './memory-store.js';
import { RetryBudget } from './retry-budget.js';

const map = defineDependencyMap({
  index_document: 'search',
  reindex_tenant: 'search',
  sync_order: ['crm', 'mail'],
});

describe('dependency maps', () => {
  it('charges tasks that call the same system to one dependency', () => {
    expect(dependencyFor('index_document', map)).toBe('search');
    expect(dependencyFor('reindex_tenant', map)).toBe('search');
  });

  it('fails safe: an unmapped task is its own dependency, even one named like an Object property', () => {
    expect(dependencyFor('resize_image', map)).toBe('resize_image');
    expect(dependencyFor('constructor', map)).toBe('constructor');
    expect(dependenciesFor('toString', map)).toEqual(['toString']);
  });

  it('lists every dependency of a task that calls several', () => {
    expect(dependenciesFor('sync_order', map)).toEqual(['crm', 'mail']);
    expect(dependencyFor('sync_order', map)).toBe('crm');
    expect(dependenciesFor('index_document', map)).toEqual(['search']);
  });

  it.each([
    [{ task: '' }, /task: "" is invalid: must not be empty/],
    [{ '': 'search' }, /must not be empty/],
    [{ task: [] }, /task: \[\] is invalid: must list at least one dependency/],
    [{ task: 'x'.repeat(201) }, /must be at most 200 characters/],
  ])('rejects %j naming the entry', (bad, message) => {
    expect(() => defineDependencyMap(bad)).toThrow(message);
  });

  it('charges one retry to several dependencies and stops at the first that refuses', async () => {
    const budget = new RetryBudget({
      store: new MemoryBudgetStore({ clock: new FakeClock(0) }),
      minAllowance: 1,
    });
    await budget.trySpend('mail');
    const r = await chargeAll(budget, ['crm', 'mail', 'search']);
    expect(r).toMatchObject({ granted: false, deniedBy: 'mail', windowMs: 60_000 });
    expect(r.results.map((x) => [x.dependency, x.granted])).toEqual([
      ['crm', true],
      ['mail', false],
    ]);
    expect((await budget.state('search')).spent).toBe(0);
    expect((await chargeAll(budget, ['search', 'search'])).results).toHaveLength(1);
  });
});
