import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseExposition, sampleValue } from '../../tests/prometheus/exposition.js';
import { CircuitBreaker } from '../breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../breaker/memory-store.js';
import { FakeClock } from '../common/clock.js';
import { createMetrics } from './create-metrics.js';

describe('observeBreaker with a CircuitBreaker', () => {
  it('follows the breaker through open, half-open and closed, counting transitions and refusals', async () => {
    const clock = new FakeClock(1_000_000);
    const breaker = new CircuitBreaker({
      store: new MemoryBreakerStore({ clock }),
      clock,
      consecutiveFailures: 2,
      coolDownMs: 10_000,
      halfOpenProbes: 1,
      successesToClose: 1,
    });
    const registry = new Registry();
    createMetrics({ registry }).observeBreaker(breaker);
    const scrape = async () => parseExposition(await registry.metrics());
    const state = (s: ReturnType<typeof parseExposition>, st: string) =>
      sampleValue(s, 'stormguard_breaker_state', { dependency: 'search', state: st });

    await breaker.recordFailure('search');
    expect(state(await scrape(), 'closed')).toBe(1);
    await breaker.recordFailure('search');
    const refused = await breaker.acquire('search');
    expect(refused.allowed).toBe(false);
    let s = await scrape();
    expect(state(s, 'open')).toBe(1);
    expect(state(s, 'closed')).toBe(0);
    expect(
      sampleValue(s, 'stormguard_breaker_rejections_total', { dependency: 'search', state: 'open' }),
    ).toBe(1);

    clock.advance(10_000);
    const probe = await breaker.acquire('search');
    expect(probe.probe).toBe(true);
    expect(state(await scrape(), 'half-open')).toBe(1);
    await breaker.recordSuccess('search', probe);
    s = await scrape();
    expect(state(s, 'closed')).toBe(1);
    expect(sampleValue(s, 'stormguard_breaker_transitions_total', { dependency: 'search' })).toBe(3);
    expect(
      sampleValue(s, 'stormguard_breaker_transitions_total', {
        dependency: 'search',
        from: 'open',
        to: 'half-open',
      }),
    ).toBe(1);
  });
});
