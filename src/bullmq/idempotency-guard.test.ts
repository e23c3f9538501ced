import { describe, expect, it } from 'vitest';
import type { Clock } from '../common/clock.js';
import { FakeClock } from '../common/clock.js';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { isTransientError } from '../errors/transient-error.js';
import { idempotencyGuard } from './idempotency-guard.js';
import { MemoryIdempotencyStore } from './memory-idempotency-store.js';

/** A memory store on `clock`; `waited(n)` settles once it has told callers to wait `n` times. */
function watchedStore(clock: FakeClock) {
  const store = new MemoryIdempotencyStore({ clock });
  let waits = 0;
  const listeners: Array<{ n: number; resolve: () => void }> = [];
  const begin = store.begin.bind(store);
  store.begin = async (...args) => {
    const claim = await begin(...args);
    if (claim.state === 'wait') {
      waits += 1;
      for (const l of listeners) if (waits >= l.n) l.resolve();
    }
    return claim;
  };
  return {
    store,
    waits: () => waits,
    waited: (n: number) =>
      new Promise<void>((resolve) => (waits >= n ? resolve() : listeners.push({ n, resolve }))),
  };
}

describe('IdempotencyGuard on an injected clock', () => {
  it('gives up with a TransientError once waitTimeoutMs has passed on its clock, not before', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const { store, waits, waited } = watchedStore(clock);
    await store.begin('charge:1', 'busy-worker', 600_000);
    const guard = idempotencyGuard({
      store,
      clock,
      inFlightTtlMs: 600_000,
      waitTimeoutMs: 60_000,
      pollMs: 1,
    });
    let runs = 0;
    const attempt = guard.once('charge:1', () => ++runs);
    await waited(1);
    clock.advance(59_999);
    // Two more polls on a clock 1 ms short of the bound: the guard kept waiting after the first.
    await waited(waits() + 2);
    clock.advance(1);
    await expect(attempt).rejects.toSatisfy(
      (e: unknown) => isTransientError(e) && /after 60000ms; retry later/.test((e as Error).message),
    );
    expect(runs).toBe(0);
  });

  it("runs the work once a crashed caller's claim has expired on the store's clock", async () => {
    const clock = new FakeClock(0);
    const { store, waited } = watchedStore(clock);
    await store.begin('mail:7', 'crashed-worker', 30_000);
    const guard = idempotencyGuard({ store, clock, inFlightTtlMs: 30_000, pollMs: 1 });
    const attempt = guard.run('mail:7', () => 'sent');
    await waited(1);
    clock.advance(30_000);
    expect(await attempt).toEqual({ value: 'sent', ran: true });
    expect(await guard.run('mail:7', () => 'again')).toEqual({ value: 'sent', ran: false });
  });

  it('refuses a clock without now()', () => {
    const store = new MemoryIdempotencyStore();
    let error: unknown;
    try {
      idempotencyGuard({ store, clock: {} as Clock });
    } catch (e) {
      error = e;
    }
    expect(isInvalidInputError(error) && (error as Error).message).toMatch(/clock.*now\(\)/);
  });
});
