import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../../src/breaker/memory-store.js';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { breakerStoreCases } from '../../src/breaker/store.case.js';
import { FakeClock } from '../../src/common/clock.js';

breakerStoreCases('MemoryBreakerStore', async (clock, connections) => {
  const store = new MemoryBreakerStore({ clock });
  return { stores: Array.from({ length: connections }, () => store), close: async () => {} };
});

describe('MemoryBreakerStore and CircuitBreaker memory', () => {
  const options = resolveBreakerOptions({ windowMs: 1_000, coolDownMs: 1_000, consecutiveFailures: 1 });

  it('forget a dependency 2 × (windowMs + coolDownMs) after its last write, and keep live state', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const store = new MemoryBreakerStore({ clock });
    for (let i = 0; i < 5_000; i++) {
      await store.record(`job-${i}`, 'success', options);
      if (i % 2 === 0) await store.acquire(`asked-${i}`, options); // asking stores nothing
      clock.advance(1);
    }
    const kept = store.dependencies();
    expect(kept).not.toContain('job-0');
    expect(kept).toContain('job-4999');
    expect(kept.filter((d) => d.startsWith('asked-'))).toEqual([]);
    expect(kept.length).toBeLessThanOrEqual(4_000);
    await store.record('search', 'failure', options); // opens it
    const openedAt = clock.now();
    for (let i = 0; i < 3_000; i++) await store.record(`more-${i}`, 'success', options); // sweeps run
    // Within its time to live an open breaker is never forgotten…
    clock.set(openedAt + 3_999);
    expect((await store.read('search', options)).state).not.toBe('closed');
    // …and past it, it is a fresh breaker, as when the Redis key expires.
    clock.set(openedAt + 4_000);
    expect(await store.read('search', options)).toMatchObject({ state: 'closed', failures: 0 });
    expect(store.dependencies()).not.toContain('search');
  });

  it('a CircuitBreaker lists only the dependencies it used within their time to live', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const breaker = new CircuitBreaker({ clock, windowMs: 1_000, coolDownMs: 1_000 });
    for (let i = 0; i < 5_000; i++) {
      await breaker.execute(`job-${i}`, () => i);
      clock.advance(1);
    }
    const listed = await breaker.dependencies();
    expect(listed.length).toBeLessThanOrEqual(4_000);
    expect(listed).toContain('job-4999');
    expect(listed).not.toContain('job-0');
  });
});
