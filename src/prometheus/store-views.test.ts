import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseExposition, sampleValue } from '../../tests/prometheus/exposition.js';
import type { ListedBreaker } from '../breaker/types.js';
import { FakeClock } from '../common/clock.js';
import type { BreakerStateName } from '../metrics/sources.js';
import { readOnlyBreaker } from '../metrics/store-views.js';
import { createMetrics } from './create-metrics.js';

describe('readOnlyBreaker', () => {
  it('lists the store at most every listIntervalMs, reads known breakers in between, and hides local guesses', async () => {
    const clock = new FakeClock(0);
    const shared = new Map<string, BreakerStateName>([['search', 'open']]);
    let degraded = false;
    const calls = { list: 0, read: 0 };
    const store = {
      list: async () => {
        calls.list++;
        return [...shared].map(([dependency, state]) => listed(dependency, state));
      },
      read: async (dependency: string) => {
        calls.read++;
        return { state: degraded ? ('closed' as const) : (shared.get(dependency) ?? 'closed'), degraded };
      },
    };
    const registry = new Registry();
    createMetrics({ registry }).observeBreaker(readOnlyBreaker(store, { listIntervalMs: 30_000, clock }));
    const open = async (dependency: string) =>
      sampleValue(parseExposition(await registry.metrics()), 'stormguard_breaker_state', {
        dependency,
        state: 'open',
      });

    expect(await open('search')).toBe(1);
    expect(calls).toEqual({ list: 1, read: 0 });
    shared.set('search', 'closed');
    shared.set('mail', 'open');
    expect(await open('search')).toBe(0);
    expect(await open('mail')).toBeUndefined();
    expect(calls).toEqual({ list: 1, read: 2 });
    clock.advance(30_000);
    expect(await open('mail')).toBe(1);
    expect(calls.list).toBe(2);
    degraded = true;
    expect(await open('mail')).toBeUndefined();
  });
});

/** A listed breaker with nothing in its window. */
function listed(dependency: string, state: BreakerStateName): ListedBreaker {
  return {
    dependency,
    state,
    failures: 0,
    successes: 0,
    volume: 0,
    consecutiveFailures: 0,
    probesAdmitted: 0,
    probeSuccesses: 0,
    probesInFlight: 0,
    nowMs: 0,
    degraded: false,
  };
}
