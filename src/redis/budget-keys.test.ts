import { describe, expect, it } from 'vitest';
import { budgetWindow } from '../budget/window.js';
import { budgetKey, budgetKeyPattern, dependencyOfBudgetKey } from './budget-keys.js';
import { spendArgs } from './budget-store.js';
import { luaSource } from './scripts.js';

describe('budget keys', () => {
  it('puts a dependency in one hash tag and reads the name back', () => {
    const key = budgetKey('shop', 'search');
    expect(key).toBe('{shop:d:search}:budget');
    expect(dependencyOfBudgetKey('shop', key)).toBe('search');
    expect(dependencyOfBudgetKey('shop', '{other:d:search}:budget')).toBeUndefined();
    expect(budgetKeyPattern('shop')).toBe('{shop:d:*}:budget');
    // Encoded names read back decoded; glob characters of the prefix are matched literally.
    expect(dependencyOfBudgetKey('shop', budgetKey('shop', 'eu:search {v2}'))).toBe('eu:search {v2}');
    expect(budgetKeyPattern('a*b:c')).toBe('{a\\*b%3Ac:d:*}:budget');
  });
});

describe('budget scripts', () => {
  it.each(['budget-spend-1.lua', 'budget-read-1.lua'])(
    '%s has a contract header and its includes resolved',
    (file) => {
      const source = luaSource(file);
      expect(source).toMatch(/KEYS\[1\]/);
      expect(source).toMatch(/Returns/);
      expect(source).toContain('local function ringSums');
      expect(source).not.toContain('--#include');
    },
  );

  it('builds ARGV in the order the contract headers list', () => {
    const window = budgetWindow({ ratio: 0.2, windowMs: 60_000, buckets: 10, minAllowance: 10 });
    expect(spendArgs(window, [], 2, '')).toEqual([6_000, 10, 200_000, 10, 0, 2, '']);
    const aged = [
      { ageMs: 180, count: 40 },
      { ageMs: 20, count: 3 },
    ];
    expect(spendArgs({ ...window, version: 3 }, aged, 0, '123')).toEqual([
      6_000,
      10,
      200_000,
      10,
      3,
      0,
      '123',
      180,
      40,
      20,
      3,
    ]);
  });
});
