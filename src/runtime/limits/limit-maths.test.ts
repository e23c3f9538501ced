import { describe, expect, it } from 'vitest';
import { isValidationError } from '../../errors/validation-error.js';
import {
  checkHoldMs,
  checkLimitExchange,
  effectiveLimit,
  limitRate,
  lowestLimit,
  normalOverride,
  type TakeContext,
  takeVerdict,
} from './limit-maths.js';
import type { LimitExchange } from './store.js';

const RAMP = { slowStartMs: 10_000, floorPerSecond: 2 };
const AT: TakeContext = {
  nowMs: 1_000,
  effective: {},
  probing: false,
  probes: 1,
  inFlight: 0,
  tatMs: 0,
  recoveredAtMs: undefined,
  ramp: RAMP,
};

describe('lowestLimit and effectiveLimit', () => {
  it('takes the lowest of each field, and the override field by field', () => {
    expect(lowestLimit([])).toEqual({});
    expect(lowestLimit([{ maxInFlight: 25 }, { maxInFlight: 10, maxRatePerSecond: 50 }, {}])).toEqual({
      maxInFlight: 10,
      maxRatePerSecond: 50,
    });
    expect(effectiveLimit({ maxInFlight: 25, maxRatePerSecond: 50 }, { maxInFlight: 40 })).toEqual({
      maxInFlight: 40,
      maxRatePerSecond: 50,
    });
    expect(effectiveLimit({ maxInFlight: 25 })).toEqual({ maxInFlight: 25 });
  });
});

describe('limitRate', () => {
  it('is the effective rate, on the ramp while it runs', () => {
    expect(limitRate({}, undefined, 1_000, RAMP)).toBe(Number.POSITIVE_INFINITY);
    expect(limitRate({ maxRatePerSecond: 50 }, undefined, 1_000, RAMP)).toBe(50);
    expect(limitRate({ maxRatePerSecond: 50 }, 1_000, 1_000, RAMP)).toBe(2);
    expect(limitRate({ maxRatePerSecond: 50 }, 0, 2_000, RAMP)).toBe(8);
    expect(limitRate({ maxRatePerSecond: 50 }, 0, 5_000, RAMP)).toBe(50);
    expect(limitRate({}, 0, 10_000, RAMP)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('takeVerdict', () => {
  it('checks pause, hold, in-flight and rate, in that order', () => {
    const all: TakeContext = {
      ...AT,
      override: { paused: true, expiresAtMs: 4_000 },
      hold: { untilMs: 9_000 },
      effective: { maxInFlight: 1, maxRatePerSecond: 1 },
      inFlight: 1,
      tatMs: 1_500,
    };
    expect(takeVerdict(all, 1)).toEqual({ granted: false, refusedBy: 'paused', waitMs: 3_000 });
    expect(takeVerdict({ ...all, override: { paused: true } }, 1)).toEqual({
      granted: false,
      refusedBy: 'paused',
      waitMs: 0,
    });
    expect(takeVerdict({ ...all, override: undefined }, 1)).toEqual({
      granted: false,
      refusedBy: 'hold',
      waitMs: 8_000,
    });
    const free = { ...all, override: undefined, hold: { untilMs: 1_000 } };
    expect(takeVerdict(free, 1)).toEqual({ granted: false, refusedBy: 'in-flight', waitMs: 0 });
    expect(takeVerdict({ ...free, inFlight: 0 }, 1)).toEqual({
      granted: false,
      refusedBy: 'rate',
      waitMs: 500,
    });
    expect(takeVerdict({ ...free, inFlight: 0, tatMs: 1_000 }, 3)).toEqual({ granted: true, tatMs: 4_000 });
  });

  it('caps in-flight at the lower of the limit and the probes while probing; a heavy call runs alone', () => {
    const probing = { ...AT, probing: true, probes: 2, effective: { maxInFlight: 10 } };
    expect(takeVerdict({ ...probing, inFlight: 1 }, 1)).toEqual({ granted: true, tatMs: 1_000 });
    expect(takeVerdict({ ...probing, inFlight: 2 }, 1)).toMatchObject({ refusedBy: 'in-flight' });
    expect(takeVerdict({ ...probing, inFlight: 0 }, 5)).toEqual({ granted: true, tatMs: 1_000 });
    expect(takeVerdict({ ...probing, probes: 20, inFlight: 9 }, 2)).toMatchObject({ refusedBy: 'in-flight' });
  });
});

describe('checks', () => {
  const request: LimitExchange = {
    holder: 'h',
    declared: {},
    leaseMs: 1_000,
    give: [],
    renew: [],
    take: [{ lease: 'l', cost: 1 }],
    probes: 1,
    ramp: RAMP,
  };

  it('accept a sound request and name every broken field', () => {
    expect(() => checkLimitExchange(request)).not.toThrow();
    let caught: unknown;
    try {
      checkLimitExchange({
        ...request,
        holder: '',
        leaseMs: 1.5,
        probes: 0,
        declared: { maxInFlight: 0, maxRatePerSecond: Number.POSITIVE_INFINITY },
        take: [{ lease: 'l', cost: -1 }],
        ramp: { slowStartMs: -1, floorPerSecond: 0 },
      });
    } catch (error) {
      caught = error;
    }
    expect(isValidationError(caught)).toBe(true);
    expect((caught as { issues: { path: string }[] }).issues.map((i) => i.path)).toEqual([
      'holder',
      'leaseMs',
      'probes',
      'declared.maxInFlight',
      'declared.maxRatePerSecond',
      'take.0.cost',
      'ramp.slowStartMs',
      'ramp.floorPerSecond',
    ]);
    expect(() => checkHoldMs(0)).toThrow(/forMs: 0 is invalid/);
  });

  it('normalise an override: set fields only, paused only when true', () => {
    expect(
      normalOverride({ maxInFlight: 5, maxRatePerSecond: undefined, paused: false, reason: 'r', by: 'b' }),
    ).toEqual({ maxInFlight: 5, reason: 'r', by: 'b' });
    expect(normalOverride({ paused: true, reason: 'r', by: '', expiresInMs: 10 })).toEqual({
      paused: true,
      reason: 'r',
      by: '',
    });
    expect(() => normalOverride({ reason: '', by: 'b', expiresInMs: 0 })).toThrow(/reason.*expiresInMs/);
  });
});
