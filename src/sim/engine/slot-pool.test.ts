import { describe, expect, it } from 'vitest';
import { SlotPool } from './slot-pool.js';

describe('SlotPool', () => {
  it('hands out never-used slots in order, then returned ones first in, first out', () => {
    const pool = new SlotPool(3);
    expect(pool.size).toBe(3);
    expect([pool.shift(), pool.shift()]).toEqual([0, 1]);
    pool.push(1);
    pool.push(0);
    expect(pool.size).toBe(3);
    expect([pool.shift(), pool.shift(), pool.shift(), pool.shift()]).toEqual([2, 1, 0, -1]);
    expect(pool.size).toBe(0);
    expect(pool.used).toBe(3);
  });
});
