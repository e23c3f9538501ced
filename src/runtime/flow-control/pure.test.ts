import { describe, expect, it } from 'vitest';
import { flowVerdict } from './gate.js';
import { pace, paceMany } from './pacing.js';
import { SLOW_START_DOUBLINGS, slowStartAllowance, slowStartRate } from './slow-start.js';

describe('slowStartRate', () => {
  const ramp = { slowStartMs: 10_000, floorPerSecond: 2 };

  it('starts at the floor, doubles ten times over the ramp, then is unlimited', () => {
    expect(SLOW_START_DOUBLINGS).toBe(10);
    expect(slowStartRate(0, ramp)).toBe(2);
    expect(slowStartRate(1_000, ramp)).toBe(4);
    expect(slowStartRate(5_000, ramp)).toBe(64);
    expect(slowStartRate(9_999, ramp)).toBeLessThan(2_048);
    expect(slowStartRate(10_000, ramp)).toBe(Number.POSITIVE_INFINITY);
    expect(slowStartRate(undefined, ramp)).toBe(Number.POSITIVE_INFINITY);
  });

  it('never exceeds maxRatePerSecond, ramp or not', () => {
    const capped = { ...ramp, maxRatePerSecond: 10 };
    expect(slowStartRate(0, capped)).toBe(2);
    expect(slowStartRate(5_000, capped)).toBe(10);
    expect(slowStartRate(undefined, capped)).toBe(10);
    expect(slowStartRate(60_000, capped)).toBe(10);
  });

  it('a ramp of 0 ms is no ramp', () => {
    expect(slowStartRate(0, { slowStartMs: 0, floorPerSecond: 1 })).toBe(Number.POSITIVE_INFINITY);
  });

  it('allowance is the integral of the rate plus one', () => {
    // ∫0..1s 2·2^t dt = 2 / ln 2 ≈ 2.885
    expect(slowStartAllowance(0, 1_000, ramp)).toBeCloseTo(1 + 2 / Math.LN2, 6);
    // With a ceiling of 4/s: 0..1 s ramps 2→4 (2/ln2), 1..3 s is flat at 4 (8).
    expect(slowStartAllowance(0, 3_000, { ...ramp, maxRatePerSecond: 4 })).toBeCloseTo(
      1 + 2 / Math.LN2 + 8,
      6,
    );
    expect(slowStartAllowance(0, 20_000, ramp)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('pace (GCRA with reservations)', () => {
  it('grants at once on an idle pacer and reserves one interval', () => {
    expect(pace(0, 1_000, 2, 0)).toEqual({ granted: true, waitMs: 0, tatMs: 1_500 });
  });

  it('refuses a slot further away than maxWaitMs, reserving nothing', () => {
    expect(pace(1_500, 1_000, 2, 0)).toEqual({ granted: false, waitMs: 500, tatMs: 1_500 });
    expect(pace(1_500, 1_000, 2, 499)).toEqual({ granted: false, waitMs: 500, tatMs: 1_500 });
  });

  it('reserves a later slot within maxWaitMs: the caller waits for it', () => {
    expect(pace(1_500, 1_000, 2, 1_000)).toEqual({ granted: true, waitMs: 500, tatMs: 2_000 });
  });

  it('an unlimited rate grants at once and forgets the backlog', () => {
    expect(pace(9_000, 1_000, Number.POSITIVE_INFINITY, 0)).toEqual({
      granted: true,
      waitMs: 0,
      tatMs: 1_000,
    });
  });

  it('over a second at 5/s grants 5 slots, one every 200 ms', () => {
    let tat = 0;
    const grantedAt: number[] = [];
    for (let now = 0; now < 1_000; now += 10) {
      const v = pace(tat, now, 5, 0);
      if (v.granted) {
        grantedAt.push(now);
        tat = v.tatMs;
      }
    }
    expect(grantedAt).toEqual([0, 200, 400, 600, 800]);
  });

  it('paceMany takes the slots that start within the horizon', () => {
    expect(paceMany(0, 1_000, 4, 10, 1_000)).toEqual({ granted: 4, tatMs: 2_000 });
    expect(paceMany(0, 1_000, 4, 2, 1_000)).toEqual({ granted: 2, tatMs: 1_500 });
    expect(paceMany(2_000, 1_000, 4, 10, 1_000)).toEqual({ granted: 0, tatMs: 2_000 });
    expect(paceMany(0, 1_000, 4, 10, 0)).toEqual({ granted: 1, tatMs: 1_250 });
    expect(paceMany(0, 1_000, Number.POSITIVE_INFINITY, 7, 250)).toEqual({ granted: 7, tatMs: 1_000 });
  });
});

describe('flowVerdict', () => {
  const settings = { kind: 'park' as const, probeWaitMs: 1_000, minHoldMs: 50 };

  it('runs while closed', () => {
    expect(flowVerdict({ state: 'closed', probesInFlight: 0, halfOpenProbes: 1 }, settings)).toEqual({
      action: 'run',
    });
  });

  it('holds until the half-open time while open, at least minHoldMs', () => {
    expect(
      flowVerdict({ state: 'open', halfOpenInMs: 4_000, probesInFlight: 0, halfOpenProbes: 1 }, settings),
    ).toEqual({ action: 'hold', kind: 'park', forMs: 4_000, reason: 'breaker-open' });
    expect(
      flowVerdict(
        { state: 'open', halfOpenInMs: 3, probesInFlight: 0, halfOpenProbes: 1 },
        { ...settings, kind: 'pause' },
      ),
    ).toEqual({ action: 'hold', kind: 'pause', forMs: 50, reason: 'breaker-open' });
  });

  it('half-open: runs while a probe slot is free, holds for probeWaitMs once all are in flight', () => {
    expect(flowVerdict({ state: 'half-open', probesInFlight: 0, halfOpenProbes: 1 }, settings)).toEqual({
      action: 'run',
    });
    expect(flowVerdict({ state: 'half-open', probesInFlight: 1, halfOpenProbes: 2 }, settings)).toEqual({
      action: 'run',
    });
    expect(flowVerdict({ state: 'half-open', probesInFlight: 2, halfOpenProbes: 2 }, settings)).toEqual({
      action: 'hold',
      kind: 'park',
      forMs: 1_000,
      reason: 'probe-in-flight',
    });
  });
});
