import { describe, expect, it } from 'vitest';
import { BinnedSeries } from './series.js';

describe('BinnedSeries', () => {
  it('counts per bin, grows past its first capacity, and pads to the bins asked for', () => {
    const counter = new BinnedSeries(1_000, 'counter', 2);
    counter.add(0);
    counter.add(999, 2);
    counter.add(4_500);
    expect(counter.length).toBe(5);
    expect(counter.toArray(7)).toEqual([3, 0, 0, 0, 1, 0, 0]);
    expect(counter.total()).toBe(4);
    expect(counter.at(4)).toBe(1);
  });

  it('carries a gauge forward over bins where nothing was set, and from 0 before its first value', () => {
    const gauge = new BinnedSeries(1_000, 'gauge', 2);
    gauge.set(1_000, 5);
    gauge.set(1_500, 7);
    gauge.set(3_000, 2);
    expect(gauge.toArray(6)).toEqual([0, 7, 7, 2, 2, 2]);
    expect(gauge.at(2)).toBe(7);
  });

  it('tells a gauge set to 0 from bins never set, in a series preallocated past what it reached', () => {
    const gauge = new BinnedSeries(1_000, 'gauge', 64);
    gauge.set(2_000, 4);
    gauge.set(5_000, 0);
    gauge.set(9_000, 3);
    expect(gauge.length).toBe(10);
    expect(gauge.toArray(12)).toEqual([0, 0, 4, 4, 4, 0, 0, 0, 0, 3, 3, 3]);
    expect([gauge.at(4), gauge.at(7), gauge.at(40)]).toEqual([4, 0, 3]);
  });
});
