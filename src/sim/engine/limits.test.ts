import { describe, expect, it } from 'vitest';
import { CallOutcome, type DependencyModel } from './dependency-model.js';
import { SimLimits } from './limits.js';

/** A limits instance on one dependency, `api`, recording the wakes it asks for. */
function setup(limit: { maxInFlight?: number; maxRatePerSecond?: number }) {
  const wakes: number[] = [];
  const limits = new SimLimits(
    { limits: { api: limit }, slowStartMs: 10_000, floorPerSecond: 1, probes: 1 },
    ['api', 'other'],
    (_d, atMs) => wakes.push(atMs),
  );
  const started: number[] = [];
  const serve = (t: number) => limits.serve(0, t, (slot) => started.push(slot));
  return { limits, wakes, started, serve };
}

const model = { retryAfterMs: 5_000 } as DependencyModel;

describe('SimLimits', () => {
  it('paces starts at the rate: the second slot waits one interval, in line', () => {
    const { limits, wakes, started, serve } = setup({ maxRatePerSecond: 10 });
    expect(limits.lineUp(0, 0, 0)).toBe(false); // starts now; the next slot is at 100 ms
    expect(limits.lineUp(0, 1, 0)).toBe(true);
    expect(limits.lineUp(0, 2, 0)).toBe(true);
    expect(wakes).toEqual([100]);
    serve(100);
    expect(started).toEqual([1]);
    expect(wakes).toEqual([100, 200]);
    serve(200);
    expect(started).toEqual([1, 2]);
    expect(limits.waiting).toBe(0);
  });

  it('caps calls in flight: a give-back lets the next slot in at once', () => {
    const { limits, wakes, started, serve } = setup({ maxInFlight: 2 });
    expect(limits.lineUp(0, 0, 0)).toBe(false);
    expect(limits.lineUp(0, 1, 0)).toBe(false);
    expect(limits.lineUp(0, 2, 0)).toBe(true);
    expect(wakes).toEqual([]); // the cap gives no time
    limits.answered(0, 50, CallOutcome.Success, model, 900_000);
    expect(wakes).toEqual([50]);
    serve(50);
    expect(started).toEqual([2]);
  });

  it('a 429 holds the dependency for min(Retry-After, retryAfter.maxMs), then one probe, then the ramp', () => {
    const { limits, wakes, started, serve } = setup({ maxRatePerSecond: 10 });
    expect(limits.lineUp(0, 0, 0)).toBe(false);
    expect(limits.lineUp(0, 1, 0)).toBe(true);
    serve(100); // slot 1 starts
    // Slot 0's call answers 429 with Retry-After 5 s; the policy's retryAfter.maxMs is 3 s: held until 3 150.
    limits.answered(0, 150, CallOutcome.RateLimited, model, 3_000);
    expect(limits.holds).toEqual([1, 0]);
    expect(limits.lineUp(0, 2, 200)).toBe(true);
    expect(limits.lineUp(0, 3, 200)).toBe(true);
    expect(wakes.at(-1)).toBe(3_150);
    // Slot 1's call succeeds during the hold: it does not end it.
    limits.answered(0, 300, CallOutcome.Success, model, 3_000);
    expect(started).toEqual([1]);
    serve(3_150);
    // One probe: slot 2; slot 3 waits for the probe's answer (no wake until then).
    expect(started).toEqual([1, 2]);
    expect(wakes.at(-1)).toBe(3_150);
    limits.answered(0, 3_400, CallOutcome.Success, model, 3_000);
    expect(wakes.at(-1)).toBe(3_400);
    serve(3_400);
    expect(started).toEqual([1, 2, 3]);
    // The ramp: 1/s right after the probe succeeded, so the next slot is one second later; then 2/s
    // (10 doublings over 10 s: twice the floor after 1 s), so the one after is half a second later.
    expect(limits.lineUp(0, 4, 3_400)).toBe(true);
    expect(wakes.at(-1)).toBe(4_400);
    serve(4_400);
    expect(limits.lineUp(0, 5, 4_400)).toBe(true);
    expect(wakes.at(-1)).toBe(4_900);
  });

  it('a dependency without limits is never held, and a stale wake does nothing', () => {
    const { limits, wakes, started, serve } = setup({ maxRatePerSecond: 10 });
    expect(limits.limited(1)).toBe(false);
    expect(limits.lineUp(1, 0, 0)).toBe(false);
    limits.answered(1, 10, CallOutcome.RateLimited, model, 3_000);
    expect(limits.holds).toEqual([0, 0]);
    serve(42);
    expect(started).toEqual([]);
    // With a wake set for 100 ms, a serve at any other time (a wake since superseded) does nothing: it
    // starts nothing and asks for no other wake; the one at 100 ms starts the slot.
    expect(limits.lineUp(0, 0, 0)).toBe(false);
    expect(limits.lineUp(0, 1, 0)).toBe(true);
    expect(wakes).toEqual([100]);
    serve(42);
    expect(started).toEqual([]);
    expect(wakes).toEqual([100]);
    serve(100);
    expect(started).toEqual([1]);
  });
});
